"""Moved to :mod:`mf_sched.sim._tight_decomp`; this old name is kept as an alias of that same module."""

import sys

from mf_sched.sim import _tight_decomp as _module

sys.modules[__name__] = _module
