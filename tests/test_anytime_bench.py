"""The anytime benchmark's scoring (benchmarks/anytime.py): each method on its own answer at every budget."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ray", reason="benchmarks.anytime scores Ray schedulers (the 'ray' extra)")
from benchmarks.anytime import regret_at, trajectory  # noqa: E402


def test_trajectory_answers_as_tunes_scope_last():
    observed = np.array([[0.1, 0.2, 0.3], [0.5, 0.1, 0.9], [0.4, 0.45, 0.5]])
    events = [(0, "add", 0, 0, ""), (1, "result", 0, 1, ""), (2, "result", 1, 1, ""), (3, "result", 1, 2, ""),
              (4, "pause", 1, 2, ""), (5, "result", 2, 1, ""), (6, "result", 1, 3, "")]  # fmt: skip
    spent, answers = trajectory(events, observed, 1.0)
    assert spent.tolist() == [1, 2, 3, 4, 5]
    # after each result: the run whose latest value is best (1's 0.5, then its 0.1 makes 0's 0.1 ... see values)
    assert answers.tolist() == [0, 1, 0, 2, 1]
    spent, answers = trajectory(events, -observed, -1.0)  # a loss reported as is, minimised: the same answers
    assert answers.tolist() == [0, 1, 0, 2, 1]


def test_regret_at_uses_the_last_answer_within_the_budget():
    true_final = np.array([0.2, 0.9, 0.5])
    spent, answers = np.array([2, 5, 9]), np.array([-1, 2, 1])
    r = regret_at(spent, answers, np.array([1, 2, 5, 8, 9, 100]), true_final)
    random_pick = 0.9 - true_final.mean()
    assert r.tolist() == pytest.approx([random_pick, random_pick, 0.4, 0.4, 0.0, 0.0])
