"""The Python examples of the README and of the manual (docs/*.md) run as written.

Blocks fenced ```python run here; blocks fenced ```py are shown, not run (they need Ray or a database server), except
the README's Ray Tune block, which runs on the test session's Ray (test_readme_ray_example_runs_as_written).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _extras import missing_extra

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", page.read_text(), flags=re.S | re.M)


def test_readme_has_exactly_two_setup_commands_on_its_first_screen():
    first = README.read_text().split("## ")[0]
    cmds = re.findall(r"^make \w+", first, flags=re.M)
    assert cmds == ["make demo", "make test"]


def run_blocks(page: Path, blocks: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    """Run every block (each in a fresh namespace; our own pages, not data) and check that it prints; the
    reasons of the blocks skipped because they need an optional extra that is not installed."""
    skipped = []
    for i, code in enumerate(blocks, 1):
        try:
            exec(compile(code, str(page), "exec"), {"__name__": "__docs__"})
        except ImportError as e:
            reason = missing_extra(e)
            if reason is None:
                raise
            skipped.append(f"{page.name}, block {i}: {reason}")
            continue
        assert capsys.readouterr().out.strip(), f"block {i} (```python) of {page.name} prints nothing"
    return skipped


def test_readme_python_examples_run(capsys):
    blocks = python_blocks(README)
    assert blocks, "the README must show a Python quickstart"
    skipped = run_blocks(README, blocks, capsys)
    assert len(skipped) < len(blocks), "the README's core quickstart must run without extras"
    if skipped:
        pytest.skip("; ".join(skipped))


def test_readme_ray_example_runs_as_written(ray_session, tmp_path, monkeypatch, capfd):
    """The README's "Ray Tune: zero arguments" block, exactly as written, on the session's Ray (its guarded ray.init
    does nothing then): the ascending grid (best last) answers x = 7 with a certificate, training at most 0.6 of the
    216 epochs of a full search, with no failed trial and no traceback."""
    import ray.train.constants

    monkeypatch.setattr(ray.train.constants, "DEFAULT_STORAGE_PATH", str(tmp_path))  # Tune's default: ~/ray_results
    section = README.read_text().split("## Ray Tune: zero arguments\n", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"^```py\n(.*?)^```", section, flags=re.S | re.M)
    namespace = {"__name__": "__docs__"}
    exec(compile(code, str(README), "exec"), namespace)
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err and not namespace["results"].errors
    answer, epochs = out.strip().splitlines()[-2:]
    assert answer.startswith("{'x': 7} ") and "certified: " in answer, answer
    spent, rest = epochs.split(" ", 1)
    assert rest == "epochs instead of 216" and int(spent) <= 0.6 * 216, epochs


def test_docs_have_python_examples():
    assert DOCS, "docs/*.md is missing"
    assert sum(len(python_blocks(page)) for page in DOCS) >= 10


@pytest.mark.parametrize("page", DOCS, ids=[p.name for p in DOCS])
def test_docs_python_examples_run(page: Path, capsys):
    skipped = run_blocks(page, python_blocks(page), capsys)
    if skipped:
        pytest.skip("; ".join(skipped))


def test_readme_links_to_docs_exist():
    targets = re.findall(r"\]\((docs/[^)#]+)", README.read_text())
    assert targets, "the README must link to the manual"
    for target in targets:
        assert (ROOT / target).is_file(), f"README links to {target}, which does not exist"
