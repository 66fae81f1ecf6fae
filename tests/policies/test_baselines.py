"""Behaviour of the baseline policies: correctness rates, exact schedules, regret."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mf_sched import FidelityLadder, Instance, get_policy, run_many, run_policy

EASY = Instance([[0.70], [0.50], [0.45], [0.30]], FidelityLadder([1.0]), {"kind": "bernoulli"}, name="easy4")
HARD = Instance([[0.50], [0.45], [0.40], [0.30]], FidelityLadder([1.0]), {"kind": "bernoulli"}, name="hard4")


@pytest.mark.parametrize("name", ["se", "lucb1", "uniform"])
def test_delta_correct_baselines_error_at_most_delta(name):
    delta = 0.1
    s = run_many(name, EASY, runs=100, seed=11, delta=delta, progress=False, n_jobs=2)
    assert s.error_rate <= delta
    assert s.certified_rate == 1.0
    assert s.stop_reasons == {"done": 100}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["se", "lucb1", "uniform"])
def test_delta_correct_baselines_on_a_hard_instance(name):
    s = run_many(name, HARD, runs=300, seed=12, delta=0.1, progress=False, n_jobs=None)
    assert s.error_rate <= 0.1 and s.certified_rate == 1.0


def test_uncertified_uniform_with_too_few_rounds_does_err():
    """The correctness test above can fail: one round of uniform sampling errs often on HARD."""
    s = run_many("uniform", HARD, runs=150, seed=11, params={"rounds": 1}, progress=False)
    assert s.error_rate > 0.3 and s.certified_rate == 0.0


def test_se_eliminates_simultaneously_and_matches_radius():
    se = get_policy("se")(
        n_arms=3, ladder=FidelityLadder([1.0]), delta=0.1, noise={"kind": "subgaussian", "sigma": 0.01}
    )
    # deterministic rewards: after one round the radius B(1, 0.1/3) with sigma 0.01 is ~0.06
    vals = {0: 0.1, 1: 0.5, 2: 0.9}
    for p in se.ask_batch():
        se.tell(p, vals[p.arm])
    assert se.done and se.recommendation().arm == 2 and se.recommendation().certified
    assert se.radius(1) == pytest.approx(0.01 * np.sqrt(2 * np.log(4 * 3 / 0.1)))


def test_successive_halving_exact_schedule_and_resumable_cost():
    ladder = FidelityLadder([1, 3, 9], [0.3, 0.1, 0.0])
    inst = Instance(np.linspace(0, 1, 9)[:, None] * np.ones((1, 3)), ladder, {"kind": "gaussian", "sigma": 1e-6})
    sh = get_policy("sh")(n_arms=9, ladder=ladder, eta=3, seed=0, noise={"kind": "subgaussian", "sigma": 1})
    r = run_policy(sh, inst, semantics="resumable", seed=0)
    assert r.pulls_per_fidelity == [9, 3, 1]
    assert r.cost == 9 * 1 + 3 * 3 + 1 * 9
    assert r.resumable_cost == 9 * 1 + 3 * (3 - 1) + 1 * (9 - 3)
    assert r.recommendation.arm == 8 and r.correct


def test_hyperband_bracket_sizes_match_li_et_al():
    # R = 81, eta = 3 -> 5 rungs; Li et al. 2018 Table 1: n = 81, 34, 15, 8, 5
    ladder = FidelityLadder([1, 3, 9, 27, 81], [0.4, 0.3, 0.2, 0.1, 0.0])
    hb = get_policy("hyperband")(n_arms=200, ladder=ladder, eta=3, seed=0, noise={"kind": "subgaussian", "sigma": 1})
    assert hb.brackets == [(4, 81), (3, 34), (2, 15), (1, 8), (0, 5)]
    inst = Instance(np.tile(np.linspace(0, 1, 200)[:, None], (1, 5)), ladder, {"kind": "gaussian", "sigma": 1e-6})
    r = run_policy(hb, inst, seed=1, workers=None, completion="batch")
    # rung sizes: bracket s=4: 81,27,9,3,1; s=3: 34,11,3,1; s=2: 15,5,1; s=1: 8,2; s=0: 5
    assert r.pulls_per_fidelity == [81, 27 + 34, 9 + 11 + 15, 3 + 3 + 5 + 8, 1 + 1 + 1 + 2 + 5]
    assert r.stop_reason == "done"


def test_ucb1_concentrates_on_the_best_arm():
    inst = Instance([[0.2], [0.5], [0.8]], FidelityLadder([1.0]), {"kind": "bernoulli"})
    r = run_policy(get_policy("ucb1")(n_arms=3, ladder=inst.ladder, budget=3000, seed=0), inst, seed=0)
    n = np.asarray(r.pulls_per_fidelity)
    assert r.cost == 3000 and r.stop_reason == "budget"
    pol_counts = r.recommendation
    assert pol_counts.arm == 2
    # regret of UCB1 grows logarithmically: far below the uniform allocation's 3000 * 0.3 = 900
    assert r.regret_kandasamy < 200
    assert n.sum() == 3000


def test_ucb1_with_parallel_workers_spreads_pulls():
    inst = Instance([[0.2], [0.5], [0.8]], FidelityLadder([1.0]), {"kind": "bernoulli"})
    p = get_policy("ucb1")(n_arms=3, ladder=inst.ladder, budget=100, seed=0)
    first = p.ask_batch(3)
    assert sorted(x.arm for x in first) == [0, 1, 2]


def test_ucb1_rho_is_the_psi_ucb_of_kandasamy_et_al():
    """rho=None is UCB1 (= ψ-UCB with ρ = 4); rho=ρ gives the index µ̂ + ψ⁻¹(ρ log n / n_j)."""
    from mf_sched.confidence import psi_ucb_width

    inst = Instance([[0.2], [0.5], [0.8]], FidelityLadder([1.0]), {"kind": "gaussian", "sigma": 0.3})

    def play(**kw):
        p = get_policy("ucb1")(n_arms=3, ladder=inst.ladder, noise=inst.policy_noise, budget=400, seed=4, **kw)
        return p, run_policy(p, inst, seed=5, trace=True)

    p_default, r_default = play()
    _, r_rho4 = play(rho=4)
    assert r_default.trace[0].tolist() == r_rho4.trace[0].tolist()
    p2, r2 = play(rho=2)
    n = p2.counts[:, 0]
    expected = p2.means[:, 0] + psi_ucb_width(n, n.sum(), 2.0, 0.3)
    np.testing.assert_allclose(p2.index(), expected, rtol=1e-12)
    assert r2.regret_kandasamy < r_default.regret_kandasamy  # less exploration on an easy instance
    for bad in (0, -1.0, math.inf, True, "2"):
        with pytest.raises(ValueError, match="rho"):
            get_policy("ucb1")(n_arms=2, ladder=inst.ladder, rho=bad)
