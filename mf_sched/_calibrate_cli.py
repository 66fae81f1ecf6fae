"""Moved to :mod:`mf_sched.cli._calibrate_cli`; this old name is kept as an alias of that same module."""

import sys

from mf_sched.cli import _calibrate_cli as _module

sys.modules[__name__] = _module
