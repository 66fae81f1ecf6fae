"""The small-budget benchmark (benchmarks/small_budget.py): its peers are what they say, its scoring is paired, and
the docs' table and prose are the committed result file's."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import ROOT

from benchmarks._common import table_after
from benchmarks.small_budget import (
    ASHA,
    BEFORE,
    BUDGETS,
    FULL,
    MARK,
    PUBLISHED,
    RACE,
    answer_at,
    asha_trace,
    full_trace,
    job,
    race_trace,
    render_table,
    summarise,
)
from mf_sched.racing import shipped_curve_bound


def _curves(K: int, seed: int) -> np.ndarray:
    """Saturating accuracy curves over 27 epochs that cross (slow starters with high plateaus)."""
    rng = np.random.default_rng(seed)
    top, rate = rng.uniform(0.5, 0.9, K), rng.uniform(0.05, 0.6, K)
    e = np.arange(1, 28)
    return top[:, None] * (1 - np.exp(-rate[:, None] * e)) + 0.005 * rng.standard_normal((K, 27))


def test_asha_promotes_a_run_only_once_eta_values_are_recorded():
    obs = _curves(9, 0)
    order = np.arange(9)
    tr = asha_trace(obs, order)
    # the first three results are three starts at 1 epoch (one epoch each); the 4th is the best of them promoted to
    # 3 epochs (2 more epochs), never before three values are recorded at the first rung
    assert [e for e, _ in tr[:4]] == [1, 2, 3, 5]
    assert tr[3][1] == int(np.argmax(obs[:3, 0]))  # the promoted run answers (its latest value is the best)
    # ASHA ends when every configuration has started and nothing is promotable: 9 at 1, 3 at 3, 1 at 9, none at 27
    assert tr[-1][0] == 9 * 1 + 3 * 2 + 1 * 6


def test_training_fully_answers_the_best_final_value_so_far():
    obs = np.array([[0.1] * 26 + [0.5], [0.2] * 26 + [0.3], [0.0] * 26 + [0.9]])
    assert full_trace(obs, np.array([1, 0, 2])) == [(27, 1), (54, 0), (81, 2)]
    assert answer_at([(27, 1), (54, 0)], 26) == -1 and answer_at([(27, 1), (54, 0)], 54) == 0


def test_the_race_does_ashas_work_at_small_budgets_and_the_ablation_does_not():
    """Until the first run reaches the top, the race's results are ASHA's on the same order (Algorithm 2); the
    ablation (the best at a rung goes on at once) trains its first configuration to the top first."""
    obs = _curves(24, 1)
    bound = shipped_curve_bound("unit").select(n_arms=24, alpha=0.05, tolerance=0.005, fractions=[1 / 27, 1 / 9, 1 / 3])
    tr, order, _, _ = race_trace(obs, bound, 0, keep_one=False)
    ref = asha_trace(obs, order)
    n = next(i for i, (e, _) in enumerate(ref) if e >= 0.1 * 24 * 27)
    assert tr[:n] == ref[:n]
    before, order_b, _, _ = race_trace(obs, bound, 0, keep_one=True)
    assert np.array_equal(order, order_b)
    assert [e for e, _ in before[:4]] == [1, 3, 9, 27]  # 1 → 3 → 9 → 27 epochs: the first configuration at once


def test_job_scores_every_method_at_every_budget_on_the_same_draw():
    task = {"true": _curves(30, 2), "seeds": np.zeros((30, 1, 27))}
    rows = job(("lcbench", "unit", "synthetic", task, 0, (8,), None))
    (r,) = rows
    assert set(r["regret"]) == {RACE, BEFORE, ASHA, FULL}
    assert all(len(v) == len(BUDGETS) and min(v) >= -1e-12 for v in r["regret"].values())
    s = summarise(rows)["unit|all|8"]
    i = BUDGETS.index(0.1)
    for peer in (ASHA, FULL, BEFORE):
        w, lo = s["paired"][peer]["wins"][i], s["paired"][peer]["losses"][i]
        race, other = r["regret"][RACE][i], r["regret"][peer][i]
        assert (w, lo) == (int(race < other - 1e-12), int(race > other + 1e-12))


# ------------------------------------------------------------------------------------------ the published numbers
@pytest.fixture(scope="module")
def published() -> dict:
    d = json.loads(PUBLISHED.read_text(encoding="utf-8"))
    assert set(d) >= {"summary", "meta"}
    return d


def test_the_racing_page_holds_the_small_budget_table_rendered_from_the_result_file(published):
    first = table_after((ROOT / "docs" / "racing.md").read_text(encoding="utf-8"), MARK)
    assert all(line.startswith("|") for line in first.split("\n"))
    assert first == render_table(published["summary"])


def _ratios(published: dict, peer: str, budget: float) -> list[float]:
    i = BUDGETS.index(budget)
    out = []
    for v in published["summary"].values():
        if v["source"] == "all":
            p = v["paired"][peer]
            out.append(p["wins"][i] / max(p["losses"][i], 1))
    return out


def test_the_racing_page_prose_is_the_result_files(published):
    """Each ratio the prose quotes is the floor (one decimal) of the smallest one over the table's cells."""
    text = " ".join((ROOT / "docs" / "racing.md").read_text(encoding="utf-8").split())
    claims = {
        "better than training fully at least {} times as often as worse at 0.1×": (FULL, 0.1),
        "better than ASHA at least {} times as often as worse at 0.3×": (ASHA, 0.3),
        "better than the schedule before at least {} times as often as worse at 0.1×": (BEFORE, 0.1),
    }
    for sentence, (peer, b) in claims.items():
        floor = np.floor(10 * min(_ratios(published, peer, b))) / 10
        assert sentence.format(f"{floor:.1f}") in text, sentence.format(f"{floor:.1f}")
    assert min(_ratios(published, FULL, 0.3)) > 1
    assert "better than training fully more often than worse in every cell at 0.3×" in text
    asha_01 = [v["paired"][ASHA] for v in published["summary"].values() if v["source"] == "all"]
    i = BUDGETS.index(0.1)
    differ = max(p["wins"][i] + p["losses"][i] for p in asha_01)
    assert f"at most {differ} studies of a cell differ from ASHA at 0.1×" in text
