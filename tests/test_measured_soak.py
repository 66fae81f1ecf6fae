"""The soak figures in docs/benchmarks.md are the ones rendered from the committed result files (issue 35).

``python -m benchmarks.soak scale`` and ``python -m benchmarks.soak ray-node`` write
``benchmarks/results/soak_<kind>.json``; ``--publish JSON`` copies it to ``docs/measured/`` and puts the table it
renders after the marker line in docs/benchmarks.md. These tests render the tables again from the committed JSON and
compare, so a number edited by hand, or a result file replaced without its table, fails here; and they check that
the committed runs meet what the soaks assert (0 lost, 0 duplicates but retries, nothing left RUNNING, the answer
kept).
"""

from __future__ import annotations

import json

import pytest
from conftest import ROOT

from benchmarks._common import table_after
from benchmarks.soak import MEASURED, NODE_MARK, SCALE_MARK, render_node, render_scale

DOC = ROOT / "docs" / "benchmarks.md"


def _table_after(mark: str) -> str:
    first = table_after(DOC.read_text(encoding="utf-8"), mark)
    assert all(line.startswith("|") for line in first.split("\n"))
    return first


@pytest.mark.parametrize(("kind", "mark", "render"), [("scale", SCALE_MARK, render_scale),
                                                      ("ray-node", NODE_MARK, render_node)])  # fmt: skip
def test_the_benchmarks_page_holds_the_table_rendered_from_the_result_file(kind, mark, render):
    res = json.loads((MEASURED / f"soak_{kind}.json").read_text(encoding="utf-8"))
    assert _table_after(mark) == render(res)


def test_the_committed_scale_soak_meets_its_checks():
    res = json.loads((MEASURED / "soak_scale.json").read_text(encoding="utf-8"))
    (run,) = res["runs"]
    assert res["meta"]["args"]["workers"] == 16 and run["trials"] >= 5000 and run["space"] == "continuous"
    assert run["values_lost"] == 0 and run["left_running"] == [] and res["answer_kept"]
    assert run["duplicate_evaluations"] <= run["kills_mid_trial"]
    assert run["killed_trials_failed"] and run["killed_trials_retried"] and run["decision_trials_failed"]


def test_the_committed_node_kill_meets_its_checks():
    res = json.loads((MEASURED / "soak_ray-node.json").read_text(encoding="utf-8"))
    clean, hit = res["runs"]
    assert hit["during"]["killed"] and hit["resumed_from_checkpoint"] and res["answer_kept"]
    assert clean["values_lost"] == hit["values_lost"] == 0
