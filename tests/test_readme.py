"""The README's Python examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_exactly_two_setup_commands_on_its_first_screen():
    first = README.read_text().split("## ")[0]
    cmds = re.findall(r"^make \w+", first, flags=re.M)
    assert cmds == ["make demo", "make test"]


def test_readme_python_examples_run(capsys):
    blocks = python_blocks()
    assert blocks, "the README must show a Python quickstart"
    for code in blocks:
        exec(compile(code, str(README), "exec"), {"__name__": "__readme__"})  # our own README, not data
    assert capsys.readouterr().out.strip()
