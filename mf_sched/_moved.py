"""The old import paths of the modules that moved into sub-packages (0.1.0), kept until :data:`REMOVED_IN`.

`import mf_sched.datasets`, `from mf_sched.datasets import X` and `from mf_sched import datasets` still
give the moved module itself (the same object as `mf_sched.curves.datasets`), with a DeprecationWarning that
names the new path and the version that removes the old one. One table and one import hook (a
:class:`importlib.abc.MetaPathFinder` that :mod:`mf_sched` installs when it is imported) do this for every old
name, instead of one alias file per module.

>>> import warnings
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore", DeprecationWarning)
...     import mf_sched.datasets as old
>>> import mf_sched.curves.datasets as new
>>> old is new
True
>>> print(message("mf_sched.datasets"))  # the warning, on the first import of the old name in a process
mf_sched.datasets is deprecated and will be removed in mf-sched 0.2.0; import mf_sched.curves.datasets instead
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Any

REMOVED_IN = "0.2.0"
"""The release that removes the old paths (the minor release after the one that moved the modules)."""

MOVED: dict[str, str] = {
    "mf_sched._calibrate_cli": "mf_sched.cli._calibrate_cli",
    "mf_sched._tight_decomp": "mf_sched.sim._tight_decomp",
    "mf_sched.alternative": "mf_sched.sim.alternative",
    "mf_sched.bounds": "mf_sched.sim.bounds",
    "mf_sched.calibration": "mf_sched.curves.calibration",
    "mf_sched.curves.race_calibration": "mf_sched.racing.calibration",
    "mf_sched.datasets": "mf_sched.curves.datasets",
    "mf_sched.functions": "mf_sched.continuous.functions",
    "mf_sched.gp": "mf_sched.continuous.gp",
    "mf_sched.iise_runner": "mf_sched.sim.iise_runner",
    "mf_sched.instance": "mf_sched.sim.instance",
    "mf_sched.mixture": "mf_sched.constrained.mixture",
    "mf_sched.mixture_hardness": "mf_sched.constrained.mixture_hardness",
    "mf_sched.policies.race": "mf_sched.racing.policy",
    "mf_sched.race": "mf_sched.racing.bias",
    "mf_sched.race_calibration": "mf_sched.racing.calibration",
    "mf_sched.replay": "mf_sched.curves.replay",
    "mf_sched.rungs": "mf_sched.racing.engine",
    "mf_sched.simulate": "mf_sched.sim.simulate",
    "mf_sched.space": "mf_sched.continuous.space",
}
"""Old module name → the module it moved to."""

_IMPORT_MACHINERY = (os.path.dirname(importlib.__file__), "<frozen importlib", __file__)


def _skipped_by_warnings(code_file: str) -> bool:
    # warnings.warn does not count importlib's bootstrap frames in `stacklevel` (warnings._is_internal_frame)
    return "importlib" in code_file and "_bootstrap" in code_file


def _warn(old: str) -> None:
    # point the warning at the line that imported the old name, past this module and the import machinery
    level, frame = 1, sys._getframe(0)
    while True:
        caller = frame.f_back
        while caller is not None and _skipped_by_warnings(caller.f_code.co_filename):
            caller = caller.f_back
        if caller is None:
            break
        level, frame = level + 1, caller
        if not caller.f_code.co_filename.startswith(_IMPORT_MACHINERY):
            break
    warnings.warn(message(old), DeprecationWarning, stacklevel=level)


def message(old: str) -> str:
    """The DeprecationWarning's text for the old module name `old` (a key of :data:`MOVED`)."""
    return f"{old} is deprecated and will be removed in mf-sched {REMOVED_IN}; import {MOVED[old]} instead"


class _Alias(importlib.abc.Loader):
    """Loads an old name as the moved module itself (never a copy: one module object, one state)."""

    def __init__(self, old: str) -> None:
        self.old = old
        self.spec: Any = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        _warn(self.old)
        module = importlib.import_module(MOVED[self.old])
        self.spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # the import system has set module.__spec__ to the old name's spec: give the module its own back
        module.__spec__ = self.spec


class _Finder(importlib.abc.MetaPathFinder):
    """Finds the old names of :data:`MOVED` (and nothing else)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(fullname))


FINDER = _Finder()


def install() -> None:
    """Add the finder to :data:`sys.meta_path` (once; after the standard finders, which no longer find these
    names since their files are gone)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(FINDER)


def module_getattr(name: str) -> ModuleType:
    """`mf_sched.<old name>` as an attribute (`import mf_sched; mf_sched.datasets`): the moved module, with
    the warning. :mod:`mf_sched`'s `__getattr__`."""
    old = f"mf_sched.{name}"
    if old not in MOVED:
        raise AttributeError(f"module 'mf_sched' has no attribute {name!r}")
    return importlib.import_module(old)
