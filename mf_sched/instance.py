"""Moved to :mod:`mf_sched.sim.instance`; this old name is kept as an alias of that same module."""

import sys

from mf_sched.sim import instance as _module

sys.modules[__name__] = _module
