"""The sufficient-statistics protocol hooks of round policies: ``RoundPolicy.round_counts`` and
``RoundPolicy.observe_round_totals`` (used by ``run_constrained(fast=True)``)."""

from __future__ import annotations

import numpy as np
import pytest

from mf_sched import FidelityLadder, PolicyError
from mf_sched.constrained import constrained_policy
from mf_sched.constrained.tang2024 import tang2024_instance
from mf_sched.policies.successive_halving import SuccessiveHalving


@pytest.mark.parametrize("name", ["sfsr", "uslp"])
def test_round_totals_equal_one_tell_per_pull(name: str) -> None:
    inst = tang2024_instance("D1P")
    a = constrained_policy(name, inst, pull_budget=3000, seed=3)
    b = constrained_policy(name, inst, pull_budget=3000, seed=3)
    rng = np.random.default_rng(0)
    for _ in range(3):  # up to three rounds
        if a.done:
            break
        pulls = a.ask_batch()
        counts = b.round_counts()
        assert counts.tolist() == np.bincount(np.array([p.arm for p in pulls]), minlength=a.n_arms).tolist()
        vals = rng.normal(size=(len(pulls), a.value_width))
        a.tell_batch(pulls, vals)
        arms = np.array([p.arm for p in pulls])
        sums = np.stack([np.bincount(arms, weights=vals[:, j], minlength=a.n_arms) for j in range(a.value_width)], 1)
        sq = np.bincount(arms, weights=vals[:, 0] ** 2, minlength=a.n_arms)
        b.observe_round_totals(counts, sums, sq)
        assert (b.n_pulls, b.counts.tolist(), b.done) == (a.n_pulls, a.counts.tolist(), a.done)
        assert b.describe()["round"] == a.describe()["round"]
        assert b.cost == pytest.approx(a.cost)
        np.testing.assert_allclose(b.means, a.means, rtol=1e-12, equal_nan=True)
    assert b.recommendation().arm == a.recommendation().arm


def test_round_totals_refuse_what_they_cannot_do() -> None:
    inst = tang2024_instance("D1P")
    p = constrained_policy("sfsr", inst, pull_budget=3000, seed=0)
    counts = p.round_counts()
    zeros = np.zeros((p.n_arms, p.value_width))
    with pytest.raises(PolicyError, match="do not match"):
        p.observe_round_totals(counts + 1, zeros, zeros[:, 0])
    pull = p.ask()
    with pytest.raises(PolicyError, match="outstanding"):
        p.observe_round_totals(counts, zeros, zeros[:, 0])
    p.give_back(pull)
    p.record_history()
    with pytest.raises(PolicyError, match="history"):
        p.observe_round_totals(counts, zeros, zeros[:, 0])
    assert p.n_pulls == 0  # nothing changed
    sh = SuccessiveHalving(4, FidelityLadder([1.0, 3.0], [0.1, 0.0]))
    with pytest.raises(PolicyError, match="per-arm totals"):
        sh.observe_round_totals(sh.round_counts(), np.zeros(4), np.zeros(4))
