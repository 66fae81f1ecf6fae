"""Moved to :mod:`mf_sched.constrained.mixture`; this old name is kept as an alias of that same module."""

import sys

from mf_sched.constrained import mixture as _module

sys.modules[__name__] = _module
