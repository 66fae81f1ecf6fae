"""No module of the library is over 750 lines: a module that grows past it is split along its responsibilities.

A reader should find one concern per file (the engine, its rules, its proof; the sampler, its decision core,
its storage glue). The limit is checked on every source file of the package and of the adapters.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 750
SOURCES = sorted([*(ROOT / "mf_sched").rglob("*.py"), *(ROOT / "integrations").rglob("*.py")])


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_the_sources_are_found():
    names = {p.relative_to(ROOT).as_posix() for p in SOURCES}
    assert {"mf_sched/racing/engine.py", "integrations/optuna.py", "integrations/ray.py"} <= names


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_module_is_over_the_limit(path: Path):
    n = _lines(path)
    assert n <= LIMIT, f"{path.relative_to(ROOT)} has {n} lines (> {LIMIT}): split it along its responsibilities"
