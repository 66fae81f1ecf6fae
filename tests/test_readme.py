"""The Python examples of the README and of the manual (docs/*.md) run as written.

Blocks fenced ```python run here; blocks fenced ```py are shown, not run (they need Ray or a database server).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", page.read_text(), flags=re.S | re.M)


def test_readme_has_exactly_two_setup_commands_on_its_first_screen():
    first = README.read_text().split("## ")[0]
    cmds = re.findall(r"^make \w+", first, flags=re.M)
    assert cmds == ["make demo", "make test"]


def test_readme_python_examples_run(capsys):
    blocks = python_blocks(README)
    assert blocks, "the README must show a Python quickstart"
    for code in blocks:
        exec(compile(code, str(README), "exec"), {"__name__": "__readme__"})  # our own README, not data
    assert capsys.readouterr().out.strip()


def test_docs_have_python_examples():
    assert DOCS, "docs/*.md is missing"
    assert sum(len(python_blocks(page)) for page in DOCS) >= 10


@pytest.mark.parametrize("page", DOCS, ids=[p.name for p in DOCS])
def test_docs_python_examples_run(page: Path, capsys):
    for code in python_blocks(page):
        exec(compile(code, str(page), "exec"), {"__name__": "__docs__"})  # our own pages, not data
        assert capsys.readouterr().out.strip(), f"a ```python block of {page.name} prints nothing"


def test_readme_links_to_docs_exist():
    targets = re.findall(r"\]\((docs/[^)#]+)", README.read_text())
    assert targets, "the README must link to the manual"
    for target in targets:
        assert (ROOT / target).is_file(), f"README links to {target}, which does not exist"
