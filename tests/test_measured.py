"""Every measured table in the docs is the one its benchmark renders from the committed result file.

`python -m benchmarks.earned --publish` writes `docs/measured/earned.json` and puts the table it renders from it
after the marker line in docs/racing.md; the README quotes the pooled numbers. These tests render the table again
from the committed JSON and compare, so a number edited by hand, or a result file replaced without its table,
fails here.
"""

from __future__ import annotations

import json

import pytest
from conftest import ROOT

from benchmarks.earned import MARK, PUBLISHED, README_BEGIN, README_END, render_readme, render_table


@pytest.fixture(scope="module")
def published() -> dict:
    d = json.loads(PUBLISHED.read_text(encoding="utf-8"))
    assert set(d) >= {"summary", "meta"}
    return d


def test_the_racing_page_holds_the_table_rendered_from_the_result_file(published):
    text = (ROOT / "docs" / "racing.md").read_text(encoding="utf-8")
    assert MARK in text
    after = text.split(MARK, 1)[1].lstrip("\n")
    first = after.split("\n\n", 1)[0].strip()  # the block right after the marker: the table and nothing else
    assert all(line.startswith("|") for line in first.split("\n"))
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
