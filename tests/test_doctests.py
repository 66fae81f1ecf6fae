"""Every docstring example in the core runs (examples are documentation; they must stay true)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest
from _extras import missing_extra

import mf_sched

# Every module under its own name (the old names of moved modules have no files: see mf_sched._moved);
# ``__main__`` modules run a program when imported.
MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(mf_sched.__path__, prefix="mf_sched.")
    if ".integrations" not in m.name
    and not m.name.endswith(".__main__")
    and importlib.import_module(m.name).__name__ == m.name
)


FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


class _Runner(doctest.DocTestRunner):
    """Keeps the exception of the first failing example (the run stops there: FAIL_FAST)."""

    raised: BaseException | None = None

    def report_unexpected_exception(self, out, test, example, exc_info):  # type: ignore[no-untyped-def]
        self.raised = exc_info[1]
        super().report_unexpected_exception(out, test, example, exc_info)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    """Every docstring's examples pass; a docstring whose first failing example needs an optional extra that is
    not installed (scikit-learn for the GP policies) is skipped with the reason, the others still run."""
    mod = importlib.import_module(name)
    failed, skipped = [], set()
    for test in doctest.DocTestFinder().find(mod, name):
        runner = _Runner(optionflags=FLAGS | doctest.FAIL_FAST, verbose=False)
        report: list[str] = []
        if runner.run(test, out=report.append).failed:
            reason = None if runner.raised is None else missing_extra(runner.raised)
            if reason is None:
                failed.append("".join(report))
            else:
                skipped.add(reason)
    assert not failed, f"{len(failed)} docstring(s) with failing examples in {name}:\n" + "\n".join(failed)
    if skipped:
        pytest.skip(f"{name}: {'; '.join(sorted(skipped))}")
