"""The API reference renders what the docstrings say: Markdown only, one entry per parameter.

mkdocstrings reads docstrings as Markdown (Google style, griffe). reStructuredText leaks into the pages raw:
a double back-quote inside an indented block, a `text::` literal marker. And griffe recognises one name per
`Args:` entry, so a grouped entry (`delta, sigma: ...`) silently drops both parameters from the table.

Every module an API page renders is checked by `scripts/undocumented.py` (one `Args:` entry per parameter,
one `Attributes:` entry per dataclass field, no entry naming no parameter).
"""

from __future__ import annotations

import ast
import importlib.util
import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*(ROOT / "mf_sched").rglob("*.py"), *(ROOT / "integrations").glob("*.py")])


def _docstrings(path: Path) -> list[tuple[int, str]]:
    """Every string statement of a file (module, class, function and attribute docstrings) with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.lineno, node.value.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    ]


def _prose(doc: str) -> list[str]:
    """The lines of a docstring outside fenced code and doctest runs (those are code, shown as written)."""
    out, in_fence, in_doctest = [], False, False
    for line in doc.splitlines():
        s = line.strip()
        if s.startswith("```"):
            in_fence = not in_fence
            continue
        in_doctest = s.startswith(">>>") or (in_doctest and bool(s))
        if not in_fence and not in_doctest:
            out.append(line)
    return out


_RST_TABLE = re.compile(r"^\s*=+(\s+=+)+\s*$")  # the border of an RST simple table (rows of `===`)


def test_the_rst_scanner_catches_what_it_should():
    doc = 'A ``literal`` and a block::\n\n    x = 1\n\n```python\ny = "``kept``"\n```\n>>> "``kept``"\n'
    prose = _prose(doc)
    assert any("``" in line for line in prose)
    assert any(re.search(r"\S::\s*$", line) for line in prose)
    assert not any("kept" in line for line in prose)
    table = "Radii:\n\n====== ========\nname   formula\n====== ========\n`a`    `x + 1`\n====== ========\n"
    assert sum(bool(_RST_TABLE.match(line)) for line in _prose(table)) == 3


def test_no_restructuredtext_in_docstrings():
    leaks = []
    for path in SOURCES:
        for lineno, doc in _docstrings(path):
            for line in _prose(doc):
                if "``" in line.replace("```", "") or re.search(r"\S::\s*$", line) or _RST_TABLE.match(line):
                    leaks.append(f"{path.relative_to(ROOT)}:{lineno}: {line.strip()}")
    assert not leaks, "reStructuredText in docstrings (use Markdown):\n" + "\n".join(leaks)


griffe = pytest.importorskip("griffe")


@pytest.fixture(scope="module")
def package():
    extensions = griffe.load_extensions(
        "docs/_ext/integrations_package.py:IntegrationsPackage", "docs/_ext/integrations_package.py:InheritedArgs"
    )
    return griffe.load("mf_sched", search_paths=[str(ROOT)], extensions=extensions, resolve_aliases=False)


def _entries(obj, kind: str) -> list[str]:
    if obj.docstring is None:
        return []
    sections = obj.docstring.parse("google", warn_unknown_params=False)
    return [entry.name for section in sections if section.kind.value == kind for entry in section.value]


@pytest.mark.parametrize(
    "path",
    [
        "integrations.optuna.MFSampler",
        "integrations.optuna.MFPruner",
        "integrations.ray.RungScheduler",
        "integrations.ray.IISEScheduler",
        "integrations.ray.AsyncIISEScheduler",
        "racing.policy.Race",
        "racing.fit.fit_curve_bound",
        "ladder.FidelityLadder",
        "policy.Policy",
        "policy.Policy.tell_batch",
        "policy.Policy.from_state_dict",
        "policy.RoundPolicy",
        "policy.RoundPolicy.observe_round_totals",
        "policy.make_recommendation",
        "policy.argmax_random",
        "registry.get_policy",
    ],
)
def test_one_documented_entry_per_parameter(package, path):
    obj = package[path]
    params = [p.name for p in obj.parameters if p.name not in ("self", "cls")]
    kinds = {p.name: p.kind.value for p in obj.parameters}
    documented = _entries(obj, "parameters")
    names = [
        ("**" if kinds.get(p) == "variadic keyword" else "*" if kinds.get(p) == "variadic positional" else "") + p
        for p in params
    ]
    missing = [n for n, p in zip(names, params) if n not in documented and p not in documented]
    unknown = [d for d in documented if d.lstrip("*") not in params]
    assert not missing and not unknown, f"{path}: undocumented {missing}, not parameters {unknown}"
    assert len(documented) == len(set(documented)), f"{path}: an entry repeats"


@pytest.mark.parametrize(
    "path",
    [
        "integrations.optuna.MFRecommendation",
        "racing.curve_bound.CurveBoundFit",
        "racing.curve_bound.CurveBound",
        "policy.Pull",
        "policy.Recommendation",
    ],
)
def test_one_documented_attribute_per_field(package, path):
    obj = package[path]
    fields = [p.name for p in obj.parameters if p.name != "self"]
    documented = _entries(obj, "attributes")
    assert fields and sorted(documented) == sorted(fields), f"{path}: {set(fields) ^ set(documented)}"


# ------------------------------------------------------------------------------- every rendered module, every parameter
@pytest.fixture(scope="module")
def checker():
    """`scripts/undocumented.py` as a module (`scripts/` is not a package)."""
    spec = importlib.util.spec_from_file_location("_undocumented", ROOT / "scripts" / "undocumented.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_PLANTED = '''
    from dataclasses import dataclass


    def no_args(a, b):
        """A docstring that describes nothing."""


    def partial(a, b):
        """One entry of two.

        Args:
            a: the first.
        """


    def grouped(a, b):
        """Two names in one entry: griffe reads one name (`a, b`), the table drops both.

        Args:
            a, b: the two.
        """


    def stray(a):
        """An entry for a parameter that does not exist.

        Args:
            a: the one.
            c: no such thing.
        """


    def fine(a, *args, **kwargs):
        """Every parameter, the variadic ones with or without their stars.

        Args:
            a: the one.
            *args: the rest.
            kwargs: the options.
        """


    def _private(a):
        """Not rendered."""


    def no_docstring(a):
        pass


    @dataclass
    class Result:
        """A field without an entry.

        Attributes:
            x: the first.
        """

        x: int
        y: int = 0


    @dataclass
    class Complete:
        """Every field.

        Attributes:
            x: the only one.
        """

        x: int


    class Built:
        """A constructor argument without an entry (and a method without an Args section).

        Args:
            a: the first.
        """

        def __init__(self, a, b):
            pass

        def method(self, z):
            """Uses `z`."""
'''


def test_the_parameter_checker_catches_what_it_should(checker, tmp_path):
    (tmp_path / "planted_docs.py").write_text(textwrap.dedent(_PLANTED), encoding="utf-8")
    module = griffe.load("planted_docs", search_paths=[str(tmp_path)], resolve_aliases=False)
    out: list[str] = []
    for member in module.members.values():
        if not member.is_alias:
            checker.check(member, out)
    found = {line.split(": ", 2)[1]: line.split(": ", 2)[2] for line in out}
    assert found == {
        "planted_docs.no_args": "no Args section (['a', 'b'])",
        "planted_docs.partial": "no entry for ['b']",
        "planted_docs.grouped": "no entry for ['a', 'b']",
        "planted_docs.stray": "entry for no parameter ['c']",
        "planted_docs.Result": "no entry for ['y']",
        "planted_docs.Built": "no entry for ['b']",
        "planted_docs.Built.method": "no Args section (['z'])",
    }, "\n".join(out)
    assert sum("planted_docs.grouped" in line for line in out) == 2  # the grouped entry names no parameter either


def test_every_rendered_parameter_and_field_has_an_entry(package, checker):
    rendered = checker.rendered_modules()
    assert len(rendered) > 30 and "mf_sched.racing.engine" in rendered
    missing = checker.undocumented(rendered, package)
    assert not missing, (
        f"{len(missing)} rendered objects leave parameters or fields without an Args/Attributes entry (or have an "
        "entry naming no parameter); write one entry per parameter:\n" + "\n".join(missing)
    )


def test_the_policy_page_renders_every_export_and_every_policy_member():
    """`docs/api/policy.md` renders `mf_sched.policy` object by object, so that `Policy` comes first with its members
    in reading order, including those it inherits from its bases (saving and restoring). A name added to the
    package's `__all__`, or a public member added to `Policy`, must be added to the page too."""
    import inspect

    import mf_sched.policy
    from mf_sched.policy import Policy

    page = (ROOT / "docs" / "api" / "policy.md").read_text(encoding="utf-8")
    rendered = re.findall(r"^:::\s+mf_sched\.policy\.(\w+)\s*$", page, flags=re.M)
    assert sorted(rendered) == sorted(mf_sched.policy.__all__), set(rendered) ^ set(mf_sched.policy.__all__)
    block = page.split("::: mf_sched.policy.Policy", 1)[1].split(":::", 1)[0]
    listed = re.search(r"^\s+members: \[(.*)\]\s*$", block, flags=re.M)
    inherited = re.search(r"^\s+inherited_members: \[(.*)\]\s*$", block, flags=re.M)
    assert listed and inherited, "the Policy directive lists its members and the inherited ones to show"
    members = [m.strip() for m in listed.group(1).split(",")]
    public = {
        name
        for name, value in inspect.getmembers(Policy)
        if not name.startswith("_")
        and (inspect.isfunction(value) or inspect.ismethod(value) or isinstance(value, property))
    }
    assert public == set(members), (
        f"Policy members not on the page: {public - set(members)}; not members: {set(members) - public}"
    )
    own = {name for name in public if name in vars(Policy)}
    assert public - own <= {m.strip() for m in inherited.group(1).split(",")}, "an inherited member is not shown"
