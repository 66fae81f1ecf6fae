"""The Python examples of the README and of the manual (docs/*.md) run as written.

Blocks fenced ```python run here, each page's in order, each block in a fresh namespace. Blocks fenced ```py need
Ray: the README's Ray Tune block and docs/ray.md's blocks run on the test session's Ray (one namespace per page: a
later block continues the experiment of the first). A Python block that is deliberately not complete (it shows a
call inside a larger program) is preceded by ``<!-- fragment: why -->``; test_every_python_block_runs_or_is_a_fragment
keeps that list short and explains each entry. Blocks fenced ```bash (make targets, pip, the CLI, the benchmarks) and
```text / ```json (output, file formats) are shown, not run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _extras import missing_extra

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))


FRAGMENT = re.compile(r"<!-- fragment: [^>]+ -->\n\s*$")


def fenced_blocks(page: Path, lang: str) -> list[tuple[str, str]]:
    """(the text before, the code dedented) of every block fenced ```lang, indented ones (in a list item) included."""
    text = page.read_text()
    out = []
    for m in re.finditer(rf"^( *)```{lang}\n(.*?)^\1```", text, flags=re.S | re.M):
        indent = len(m.group(1))
        code = "".join(line[indent:] for line in m.group(2).splitlines(keepends=True))
        out.append((text[: m.start()], code))
    return out


def python_blocks(page: Path) -> list[str]:
    return [code for before, code in fenced_blocks(page, "python") if not FRAGMENT.search(before)]


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


def test_ray_page_examples_run_as_written(ray_session, tmp_path, monkeypatch, capfd):
    """docs/ray.md's ```py blocks, exactly as written and in order in one namespace, on the session's Ray: the grid
    listed worst first answers x = 7 with the certificate's sentence; the second block reads the same experiment's
    certificate back from its folder (load_certificate) and finds its trial among the results."""
    import ray.train.constants

    monkeypatch.setattr(ray.train.constants, "DEFAULT_STORAGE_PATH", str(tmp_path))  # Tune's default: ~/ray_results
    page = ROOT / "docs" / "ray.md"
    blocks = [code for before, code in fenced_blocks(page, "py") if not FRAGMENT.search(before)]
    assert len(blocks) == 2
    namespace = {"__name__": "__docs__"}
    printed = []
    for code in blocks:
        exec(compile(code, str(page), "exec"), namespace)
        out, err = capfd.readouterr()
        assert "Traceback" not in out + err
        printed.append(out.strip().splitlines()[-1])
    assert not namespace["results"].errors
    assert printed[0].startswith("{'x': 7} ") and "certified" in printed[0], printed[0]
    assert printed[1].startswith("{'x': 7} "), printed[1]


FRAGMENTS_ALLOWED = 2  # keep fragments rare: a block a newcomer copies should run


def test_every_python_block_runs_or_is_a_fragment():
    """Every Python block of the README and the manual is run by a test of this file, or marked a fragment with its
    reason; the README's ```py block is its Ray section's, and no page but ray.md has others."""
    fragments = []
    for page in [README, *DOCS]:
        for lang in ("python", "py", "pycon"):
            for before, _ in fenced_blocks(page, lang):
                if FRAGMENT.search(before):
                    fragments.append(f"{page.name}: {FRAGMENT.search(before).group(0).strip()}")
                elif lang == "pycon":
                    raise AssertionError(f"{page.name}: a ```pycon block is neither run nor marked a fragment")
                elif lang == "py":
                    assert page.name in ("README.md", "ray.md"), f"{page.name}: ```py blocks run only on ray.md"
    assert len(fenced_blocks(README, "py")) == 1  # the Ray section's: test_readme_ray_example_runs_as_written
    assert len(fragments) <= FRAGMENTS_ALLOWED, fragments


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
