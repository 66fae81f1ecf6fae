"""Every measured table in the docs is the one its benchmark renders from the committed result file.

`python -m benchmarks.earned --publish` writes `docs/measured/earned.json` and puts the table it renders from it
after the marker line in docs/racing.md; the README quotes the pooled numbers. These tests render the table again
from the committed JSON and compare, so a number edited by hand, or a result file replaced without its table,
fails here.
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import ROOT

from benchmarks._common import table_after
from benchmarks.earned import MARK, PUBLISHED, README_BEGIN, README_END, render_readme, render_table


@pytest.fixture(scope="module")
def published() -> dict:
    d = json.loads(PUBLISHED.read_text(encoding="utf-8"))
    assert set(d) >= {"summary", "meta"}
    return d


def test_the_racing_page_holds_the_table_rendered_from_the_result_file(published):
    first = table_after((ROOT / "docs" / "racing.md").read_text(encoding="utf-8"), MARK)
    assert all(line.startswith("|") for line in first.split("\n"))  # the block right after the marker: the table
    assert first == render_table(published["summary"])


def test_the_readme_quotes_the_published_numbers(published):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split(README_BEGIN, 1)[1].split(README_END, 1)[0].strip()
    assert block == render_readme(published["summary"])


def test_the_racing_page_quotes_the_offline_miss_rates_of_the_shipped_provenance():
    """docs/racing.md: LCBench held out as a source misses 0.36–0.38 at K = 24 and 64 with the learned λ."""
    from mf_sched.racing import shipped_curve_bound

    ev = shipped_curve_bound("unit").provenance["held_out"]["lcbench"]["leave_source_out_miss_with_evidence"]
    rates = [ev[K][n] for K in ("24", "64") for n in ("1", "3")]
    assert all(0.355 <= r < 0.385 for r in rates), rates
    assert "(LCBench held out 0.36–0.38 at `K` = 24 and 64)" in (ROOT / "docs" / "racing.md").read_text()


# ------------------------------------------------- the shipped bound's held-out coverage (docs/racing.md, README)
# `python -m benchmarks.curve_bound` writes these miss rates into the bound it ships (mf_sched/data/curve_bound.json,
# its provenance); the two tables of "The shipped bound and its held-out coverage" are checked against that file.
SOURCES = [("unit", "lcbench"), ("unit", "deepobs-acc"), ("unit", "algoperf-unit"),
           ("loss", "taskset"), ("loss", "deepobs-loss"), ("loss", "algoperf-loss")]  # fmt: skip
TARGET = 0.05


def _held_out(family: str, source: str) -> dict:
    from mf_sched.racing import shipped_curve_bound

    return shipped_curve_bound(family).provenance["held_out"][source]


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def _numbers(cell: str) -> list[tuple[str, bool]]:
    """The numbers of a cell as written, each with whether it is bold (inside a **…** span)."""
    out, bold = [], False
    for part in re.split(r"(\*\*)", cell):
        if part == "**":
            bold = not bold
            continue
        out += [(x, bold) for x in re.findall(r"\d+\.\d+", part)]
    return out


def _table_after(text: str, header_start: str) -> list[list[str]]:
    block = text.split(header_start, 1)[1].split("\n\n", 1)[0]
    return [_cells(line) for line in block.splitlines()[1:] if line.startswith("|")]


def _check(cell: str, rates: list[float], worst: float | None = None) -> None:
    """The miss rates as written (3 decimals), bold exactly when above the target; the worst task (2 decimals)."""
    expected = [(f"{v:.3f}", round(v, 3) > TARGET) for v in rates]
    if worst is not None:
        expected.append((f"{worst:.2f}", False))
    assert _numbers(cell) == expected, (cell, rates, worst)


def test_the_racing_page_held_out_coverage_tables_are_the_shipped_bounds_provenance():
    text = (ROOT / "docs" / "racing.md").read_text(encoding="utf-8")
    rows = _table_after(text, "| family | source (tasks) |")[1:]
    assert len(rows) == len(SOURCES)
    for (family, source), row in zip(SOURCES, rows, strict=True):
        h = _held_out(family, source)
        assert row[0] == family and row[1].endswith(f"({h['tasks']})"), row
        tasks_out = [h["leave_tasks_out_miss"][k] for k in ("8", "24", "64")]
        worst = h["leave_tasks_out_worst_task"]["24"]
        _check(row[2], tasks_out, worst)
        source_out = [h["leave_source_out_miss"][k]["0.05"] for k in ("8", "24", "64")]
        _check(row[3], source_out)
    by_ladder = _table_after(text, "| family | source | from 2% |")[1:]
    assert len(by_ladder) == len(SOURCES)
    for (family, source), row in zip(SOURCES, by_ladder, strict=True):
        lad = _held_out(family, source)["by_ladder_K24"]
        assert len(lad["ladders"]) == 6 and row[0] == family
        expected = [v for pair in zip(lad["leave_tasks_out"], lad["leave_source_out"], strict=True) for v in pair]
        _check(" | ".join(row[2:]), expected)


def _range(values: list[float]) -> str:
    return f"{min(values):.2f}–{max(values):.2f}"


def test_the_prose_miss_rates_are_the_shipped_bounds_provenance():
    """The ranges the README and docs/racing.md quote: min–max (2 decimals) of the provenance's miss rates."""
    Ks = ("8", "24", "64")
    tasks_out = {s: [_held_out(f, s)["leave_tasks_out_miss"][k] for k in Ks] for f, s in SOURCES}
    lcb_source = [_held_out("unit", "lcbench")["leave_source_out_miss"][k]["0.05"] for k in Ks]
    algoperf = tasks_out["algoperf-unit"] + tasks_out["algoperf-loss"]
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    racing = " ".join((ROOT / "docs" / "racing.md").read_text(encoding="utf-8").split())
    assert f"{_range(tasks_out['lcbench'])} on LCBench tasks held out" in readme
    assert f"{_range(tasks_out['deepobs-loss'])} on DeepOBS losses" in readme
    assert f"{_range(algoperf)} on AlgoPerf workloads" in readme
    assert f"**{_range(lcb_source)} on LCBench held out as a whole source**" in readme
    assert f"LCBench with tasks held out is above the target ({_range(tasks_out['lcbench'])})" in racing
    assert f"**LCBench held out as a whole source misses {_range(lcb_source)}**" in racing
    assert f"DeepOBS loss is at {_range(tasks_out['deepobs-loss'])}" in racing
    assert all(v <= TARGET for s in ("deepobs-acc", "taskset") for v in tasks_out[s])  # "holds at the target"


def test_the_readme_small_budget_sentences_are_the_result_files():
    """README, "Stopped early": the studies per cell, and each comparison it states, in every cell of the table."""
    from benchmarks.small_budget import ASHA, BUDGETS, FULL
    from benchmarks.small_budget import PUBLISHED as SMALL

    summary = json.loads(SMALL.read_text(encoding="utf-8"))["summary"]
    cells = [v for v in summary.values() if v["source"] == "all"]
    assert cells
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    studies = sorted({c["studies"] for c in cells})
    assert f"{' or '.join(map(str, studies))} studies per cell" in readme
    i01, i03 = BUDGETS.index(0.1), BUDGETS.index(0.3)
    assert all(c["paired"][FULL]["wins"][i01] > c["paired"][FULL]["losses"][i01] for c in cells)
    assert "better than training the configurations fully one after the other in most studies" in readme
    assert all(c["paired"][ASHA]["wins"][i03] > c["paired"][ASHA]["losses"][i03] for c in cells)
    assert "at 0.3× it is better than ASHA more often than worse in every cell" in readme
