"""Moved to :mod:`mf_sched.sim.alternative`; this old name is kept as an alias of that same module."""

import sys

from mf_sched.sim import alternative as _module

sys.modules[__name__] = _module
