"""Moved to :mod:`mf_sched.sim.bounds`; this old name is kept as an alias of that same module."""

import sys

from mf_sched.sim import bounds as _module

sys.modules[__name__] = _module
