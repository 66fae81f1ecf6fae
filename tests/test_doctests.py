"""Every docstring example in the core runs (examples are documentation; they must stay true)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import mf_sched

# Old module names kept as aliases of their moved modules (``mf_sched.simulate`` is ``mf_sched.sim.simulate``)
# are tested under their real name only; ``__main__`` modules run a program when imported.
MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(mf_sched.__path__, prefix="mf_sched.")
    if ".integrations" not in m.name
    and not m.name.endswith(".__main__")
    and importlib.import_module(m.name).__name__ == m.name
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    mod = importlib.import_module(name)
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert res.failed == 0, f"{res.failed} doctest(s) failed in {name}"
