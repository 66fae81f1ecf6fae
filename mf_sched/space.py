"""Moved to :mod:`mf_sched.continuous.space`; this old name is kept as an alias of that same module."""

import sys

from mf_sched.continuous import space as _module

sys.modules[__name__] = _module
