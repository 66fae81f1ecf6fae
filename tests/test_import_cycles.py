"""No import circles among the modules of ``mf_sched`` and ``mf_sched.integrations`` (read from the source's
syntax trees, so that a circle is found even where Python's import order happens to hide it).

Three views of "module A imports module B":

- **runtime**: the imports that run when A is imported (module level, class bodies, ``if``/``try`` blocks), not
  those under ``if TYPE_CHECKING:`` nor those inside functions. A circle here can fail at import time depending
  on which module is imported first. There must be none.
- **typing**: the runtime view plus the ``if TYPE_CHECKING:`` imports: what a type checker follows. A circle
  here (``integrations/optuna.py`` ↔ ``integrations/_optuna_policy.py`` once was one) means two modules that
  cannot be read or changed apart. There must be none.
- **calls**: the runtime view plus the imports inside functions (``TYPE_CHECKING`` excluded): a function-local
  import that closes a circle hides it (``mf_sched/policy.py`` ↔ ``mf_sched/registry.py`` once was one). Only the
  circles listed in :data:`KNOWN_CALL_CIRCLES`, each with its reason, are allowed.

``from package import name`` counts as importing ``package.name`` when that is a module, else ``package``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"mf_sched": ROOT / "mf_sched", "mf_sched.integrations": ROOT / "integrations"}

KNOWN_CALL_CIRCLES: dict[frozenset[str], str] = {}
"""Circles closed by a function-local import that are allowed, each with its reason (none now: the last one,
``integrations/optuna.py`` ↔ ``integrations/_optuna_evidence.py``, went when the study's race reader moved to
``integrations/_optuna_readback.py``)."""


def modules(packages: dict[str, Path]) -> dict[str, tuple[Path, bool]]:
    """Module name → (file, is a package), for every ``.py`` file under the packages' folders (the folders
    without ``__init__.py`` — the OptunaHub package, data — are not modules of these packages)."""
    found: dict[str, tuple[Path, bool]] = {}
    for prefix, folder in packages.items():
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder).with_suffix("").parts
            if any(not (folder.joinpath(*rel[:i]) / "__init__.py").exists() for i in range(len(rel))):
                continue  # a folder that is not a package
            is_pkg = rel[-1] == "__init__"
            parts = rel[:-1] if is_pkg else rel
            name = ".".join((prefix, *parts))
            if name not in found:  # mf_sched/integrations does not exist; integrations/ is mf_sched.integrations
                found[name] = (path, is_pkg)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(name: str, path: Path, is_pkg: bool, known: set[str], *, type_checking: bool, local: bool) -> set[str]:
    """The modules in ``known`` that module ``name`` imports, in the view chosen by the two flags."""
    statements: list[ast.Import | ast.ImportFrom] = []

    def visit(nodes) -> None:  # type: ignore[no-untyped-def]
        for node in nodes:
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                if type_checking:
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                statements.append(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and not local:
                continue
            else:
                visit(ast.iter_child_nodes(node))

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    package = name if is_pkg else name.rpartition(".")[0]
    targets: set[str] = set()
    for st in statements:
        if isinstance(st, ast.Import):
            targets.update(alias.name for alias in st.names)
            continue
        base = st.module or ""
        if st.level:
            parts = package.split(".")
            parts = parts[: len(parts) - (st.level - 1)]
            base = ".".join([*parts, *([st.module] if st.module else [])])
        for alias in st.names:
            targets.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    out = set()
    for target in targets:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            out.add(target)
    return out


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def graph_of(packages: dict[str, Path], *, type_checking: bool, local: bool) -> dict[str, set[str]]:
    mods = modules(packages)
    known = set(mods)
    return {
        n: imports_of(n, p, is_pkg, known, type_checking=type_checking, local=local) for n, (p, is_pkg) in mods.items()
    }


def test_the_modules_are_found():
    mods = modules(PACKAGES)
    assert {"mf_sched", "mf_sched.policy", "mf_sched.registry", "mf_sched.integrations.optuna"} <= set(mods)
    assert "mf_sched.integrations._optuna_policy" in mods and len(mods) > 60


@pytest.mark.parametrize("view", ["runtime", "typing"])
def test_no_import_circles(view):
    graph = graph_of(PACKAGES, type_checking=view == "typing", local=False)
    assert circles(graph) == []


def test_function_local_imports_close_only_the_known_circles():
    found = {frozenset(c) for c in circles(graph_of(PACKAGES, type_checking=False, local=True))}
    new = found - set(KNOWN_CALL_CIRCLES)
    assert not new, f"new import circle(s) closed by a function-local import: {[sorted(c) for c in new]}"
    gone = set(KNOWN_CALL_CIRCLES) - found
    assert not gone, f"circle(s) no longer there: remove them from KNOWN_CALL_CIRCLES: {[sorted(c) for c in gone]}"


def test_the_former_circles_stay_broken():
    """registry no longer imports policy when it runs (only for annotations); _optuna_policy reads MFSampler through a
    Protocol, never importing the sampler; the evidence writer never imports the adapters (the reader that rebuilds
    them from a stored study is _optuna_readback); MFSampler recognises MFPruner without importing it."""
    full = graph_of(PACKAGES, type_checking=True, local=True)
    calls = graph_of(PACKAGES, type_checking=False, local=True)
    assert not {m for m in calls["mf_sched.registry"] if m == "mf_sched.policy" or m.startswith("mf_sched.policy.")}
    integ = "mf_sched.integrations."
    adapters = {integ + "optuna", integ + "_optuna_sampler", integ + "_optuna_pruner"}
    assert not adapters & full[integ + "_optuna_policy"]
    assert not adapters & full[integ + "_optuna_evidence"]
    assert integ + "_optuna_pruner" not in full[integ + "_optuna_sampler"]


def _write(folder: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_detector_finds_circles_in_each_view(tmp_path):
    """The checker itself: a planted circle of each kind is found in its view and only there."""
    _write(
        tmp_path / "pkg",
        {
            "__init__.py": "from pkg.a import A\n",
            "a.py": "from . import b\nA = 1\n",
            "b.py": "from pkg.c import C\n",
            "c.py": "import pkg.a\nC = 2\n",  # a → b → c → a, all at module level
            "d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.e import E\nD = 3\n",
            "e.py": "from pkg import d\nE = 4\n",  # d ⇢ e (typing only) → d
            "f.py": "def g():\n    from pkg.h import H\n    return H\n",
            "h.py": "from pkg.f import g\nH = 5\n",  # f ⇢ h (inside a function) → f
            "data/x.py": "import pkg.a\n",  # not a package: ignored
        },
    )
    pkgs = {"pkg": tmp_path / "pkg"}
    assert "pkg.data.x" not in modules(pkgs)
    runtime = circles(graph_of(pkgs, type_checking=False, local=False))
    typing_ = circles(graph_of(pkgs, type_checking=True, local=False))
    calls = circles(graph_of(pkgs, type_checking=False, local=True))
    assert runtime == [["pkg.a", "pkg.b", "pkg.c"]]
    assert sorted(typing_) == [["pkg.a", "pkg.b", "pkg.c"], ["pkg.d", "pkg.e"]]
    assert sorted(calls) == [["pkg.a", "pkg.b", "pkg.c"], ["pkg.f", "pkg.h"]]
