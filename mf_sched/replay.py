"""Moved to :mod:`mf_sched.curves.replay`; this old name is kept as an alias of that same module."""

import sys

from mf_sched.curves import replay as _module

sys.modules[__name__] = _module
