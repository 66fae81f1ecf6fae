"""LUCB with EXPLORE-A/B/C and the highest-fidelity baseline (Wang et al. 2023): exact rules, caps, correctness."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import INSTANCES, shared_instance

from mf_sched import FidelityLadder, Instance, get_policy, policy_for, run_many, run_policy
from mf_sched.cli import main as cli_main
from mf_sched.confidence import wang_beta
from mf_sched.policy import argmax_random
from mf_sched.sim.instance import load_instance

LUCBS = ["lucb-explore-a", "lucb-explore-b", "lucb-explore-c", "lucb-highest"]


def _drive_constant(p, values, rounds):
    """Tell ``values[arm]`` for every pull of ``rounds`` rounds; return the pulls of each round."""
    out = []
    for _ in range(rounds):
        pulls = p.ask_batch()
        if not pulls:
            break
        out.append([(q.arm, q.fidelity) for q in pulls])
        p.tell_batch(pulls, [values[q.arm] for q in pulls])
    return out


# ------------------------------------------------------------------------------------------ Algorithm 1
def test_bounds_are_eq5_with_the_paper_radius():
    ladder = FidelityLadder([1.0, 2.0, 4.0], [0.2, 0.1, 0.0])
    p = get_policy("lucb-explore-c")(
        n_arms=3, ladder=ladder, delta=0.1, seed=0, noise={"kind": "subgaussian", "sigma": 0.3}
    )
    rng = np.random.default_rng(0)
    for _ in range(6):
        pulls = p.ask_batch()
        p.tell_batch(pulls, rng.normal(0.5, 0.3, len(pulls)))
    t = p.round_index()
    assert t == 7
    n, mu, z = p.counts, p.means, np.asarray(ladder.zeta)
    beta = np.where(n > 0, 2 * 0.3 * np.sqrt(np.log(4 * 3 * 3 * t**4 / 0.1) / np.maximum(n, 1)), np.inf)
    ucb = np.where(n > 0, mu + z + beta, np.inf).min(axis=1)
    lcb = np.where(n > 0, mu - z - beta, -np.inf).max(axis=1)
    got_u, got_l = p.bounds()
    assert got_u == pytest.approx(ucb) and got_l == pytest.approx(lcb)
    assert np.allclose(p.beta(t)[n > 0], wang_beta(n[n > 0], t, 0.1, 36, 0.3))


def test_bounded_rewards_clip_to_the_range_and_start_at_the_papers_initial_values():
    p = get_policy("lucb-highest")(n_arms=3, ladder=FidelityLadder([1.0, 2.0], [0.1, 0.0]), delta=0.1, seed=0)
    u, l = p.bounds()
    assert u.tolist() == [1.0, 1.0, 1.0] and l.tolist() == [0.0, 0.0, 0.0]  # Alg. 1: UCB = 1, LCB = 0
    _drive_constant(p, [0.5, 0.5, 0.5], 1)
    u, l = p.bounds()
    assert u.max() <= 1.0 and l.min() >= 0.0


def test_leader_and_challenger_are_the_top_two_ucbs_and_stopping_separates_them():
    ladder = FidelityLadder([1.0], [0.0])
    p = get_policy("lucb-highest")(
        n_arms=3, ladder=ladder, delta=0.1, seed=0, noise={"kind": "subgaussian", "sigma": 0.01}
    )
    rounds = _drive_constant(p, [0.2, 0.5, 0.9], 50)
    assert p.done and p.recommendation().arm == 2 and p.recommendation().certified
    for r in rounds:
        assert len(r) == 2 and len({a for a, _ in r}) == 2
    u, l = p.bounds(p.round_index())
    assert l[2] > np.delete(u, 2).max()


# ------------------------------------------------------------------------------------------ EXPLORE-B
def test_explore_b_commit_rule_hand_made():
    """EXPLORE-B (Wang et al. 2023, Algorithm 2, lines 4–11):
    commit to argmax Δ̂/√λ once it reaches 3·2σ√(log(L/δ)/(λ(1) n)); never un-commit."""
    ladder = FidelityLadder([1.0, 4.0], [0.05, 0.0])
    kw = dict(n_arms=2, ladder=ladder, delta=0.1, noise={"kind": "subgaussian", "sigma": 0.02}, seed=1)
    p = get_policy("lucb-explore-b")(mu1_upper=0.9, mu2_lower=0.1, **kw)
    assert p.describe()["leader"] == 0
    thr = p.commit_threshold(1)
    assert thr == pytest.approx(3 * 2 * 0.02 * math.sqrt(math.log(4 * 2 * 2 / 0.1)))
    rounds = _drive_constant(p, [0.5, 0.45], 3)
    # round 1 sweeps both arms over both fidelities; Δ̂/√λ: leader (0.5 − ζ) − 0.1 = (0.35, 0.4)/√λ,
    # challenger 0.9 − (0.45 + ζ) = (0.4, 0.45)/√λ: both best at fidelity 0 and above the threshold
    assert sorted(rounds[0]) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert 0.35 >= thr and p.committed.tolist() == [0, 0]
    assert all(sorted(r) == [(0, 0), (1, 0)] for r in rounds[1:])  # committed: one pull each, at m̂*
    # below the threshold nothing commits and the next round sweeps again
    q = get_policy("lucb-explore-b")(mu1_upper=0.85, mu2_lower=0.75, **kw)
    rounds = _drive_constant(q, [0.8, 0.2], 1)
    # leader Δ̂ = (0.8 − ζ) − 0.75 = (0.0, 0.05) → too small; challenger 0.85 − (0.2 + ζ) = (0.6, 0.65) → commits
    assert q.committed.tolist() == [-1, 0]


def test_explore_b_commitment_survives_a_change_of_leader():
    ladder = FidelityLadder([1.0, 4.0], [0.05, 0.0])
    p = get_policy("lucb-explore-b")(
        n_arms=3,
        ladder=ladder,
        delta=0.1,
        mu1_upper=0.95,
        mu2_lower=0.05,
        seed=3,
        noise={"kind": "subgaussian", "sigma": 0.02},
    )
    vals = [0.5, 0.49, 0.48]
    seen: dict[int, int] = {}
    for _ in range(40):
        _drive_constant(p, vals, 1)
        for k, m in enumerate(p.committed.tolist()):
            if m >= 0:
                assert seen.setdefault(k, m) == m
        if p.done:
            break
    assert seen


# ------------------------------------------------------------------------------------------ EXPLORE-A
def test_explore_a_tries_every_fidelity_then_follows_the_fidelity_ucb():
    ladder = FidelityLadder([1.0, 2.0, 8.0], [0.3, 0.1, 0.0])
    p = get_policy("lucb-explore-a")(
        n_arms=2,
        ladder=ladder,
        delta=0.1,
        mu1_upper=0.9,
        mu2_lower=0.4,
        seed=0,
        noise={"kind": "subgaussian", "sigma": 0.05},
    )
    rounds = _drive_constant(p, [0.6, 0.5], 3)
    for k in (0, 1):
        assert sorted(m for r in rounds for a, m in r if a == k) == [0, 1, 2]  # +inf until sampled once
    k = 0
    n, mu, lam, z = p.counts[k], p.means[k], np.array(ladder.costs), np.array(ladder.zeta)
    dh = (mu - z) - 0.4 if p.describe()["leader"] == k else 0.9 - (mu + z)
    expect = dh / np.sqrt(lam) + 2 * 0.05 * np.sqrt(2 * np.log(n.sum()) / n) / np.sqrt(lam)
    assert p.f_ucb(k) == pytest.approx(expect)


# ------------------------------------------------------------------------------------------ EXPLORE-C
def test_explore_c_pulls_the_lowest_fidelity_whose_radius_exceeds_its_bias():
    ladder = FidelityLadder([1.0, 2.0, 4.0], [0.3, 0.15, 0.0])
    p = get_policy("lucb-explore-c")(
        n_arms=2, ladder=ladder, delta=0.1, seed=0, noise={"kind": "subgaussian", "sigma": 0.1}
    )
    climbed = set()
    for _ in range(300):
        if p.done:
            break
        before, t = p.counts, p.round_index()
        pulls = p.ask_batch()
        for q in pulls:
            beta = wang_beta(before[q.arm], t, 0.1, p.L, 0.1)
            assert q.fidelity == int(np.flatnonzero(beta >= np.asarray(ladder.zeta))[0])
            climbed.add(q.fidelity)
        p.tell_batch(pulls, [0.5 if q.arm == 0 else 0.45 for q in pulls])
    assert climbed == {0, 1, 2}


def test_lucb_highest_only_pulls_the_top_fidelity():
    inst = Instance([[0.2, 0.3], [0.6, 0.7]], FidelityLadder([1, 5], [0.1, 0]), {"kind": "bernoulli"})
    r = run_policy(policy_for("lucb-highest", inst, delta=0.1, seed=0), inst, seed=0)
    assert r.pulls_per_fidelity[0] == 0 and r.correct and r.recommendation.certified


# ------------------------------------------------------------------------------------------ caps
@pytest.mark.parametrize("name", ["lucb-explore-a", "lucb-explore-b"])
def test_cost_cap_stops_lucb_on_the_nonstopping_instance(name):
    """poiani2024-lucb-nonstop: fidelity 1 can never separate the arms; the cap ends the run uncertified."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inst = load_instance(shared_instance("poiani2024-lucb-nonstop.json"))
    budget = 1500.0
    p = policy_for(name, inst, delta=0.01, budget=budget, seed=0, mu1_upper=0.6, mu2_lower=0.5)
    r = run_policy(p, inst, seed=1, workers=None, completion="batch")
    rec = r.recommendation
    assert p.done and r.stop_reason == "budget" and rec.reason == "budget" and not rec.certified
    assert r.cost <= budget and r.cost > 0.95 * budget
    u, l = p.bounds()
    assert l[1] < u[0]  # the best arm's LCB is still below the other's UCB


def test_max_rounds_ends_a_run_uncertified():
    inst = Instance([[0.5, 0.5], [0.51, 0.5001]], FidelityLadder([1, 2], [0.1, 0]), {"kind": "bernoulli"})
    p = policy_for("lucb-explore-c", inst, delta=0.1, seed=0, max_rounds=40)
    r = run_policy(p, inst, seed=0)
    assert p.done and r.recommendation.reason == "exhausted" and not r.recommendation.certified
    assert p.describe()["t"] == 40 and r.recommendation.arm in (0, 1)


# ------------------------------------------------------------------------------------------ δ-correctness
DELTA_INST = Instance(
    [[0.25, 0.10], [0.95, 0.40], [0.50, 0.90]],  # fidelity 0 ranks arm 1 far above the best arm 2 (within ζ)
    FidelityLadder([1.0, 4.0], [0.55, 0.0]),
    {"kind": "bernoulli"},
)


@pytest.mark.parametrize("name", LUCBS)
def test_delta_correct_on_a_small_instance(name):
    """Error rate ≤ δ + 3 binomial standard deviations (δ = 0.2, 50 runs); all answers certified."""
    assert DELTA_INST.check_assumptions().ok
    delta, n = 0.2, 50
    params = get_policy(name).example_params(DELTA_INST)
    s = run_many(name, DELTA_INST, runs=n, delta=delta, seed=5, params=params, progress=False, n_jobs=1)
    assert s.error_rate <= delta + 3 * math.sqrt(delta * (1 - delta) / n)
    assert s.certified_rate == 1.0


def test_an_underestimated_bias_bound_breaks_correctness():
    """The test above can fail: claiming ζ ≈ 0 on the misranking fidelity makes LUCB answer arm 1."""
    lying = Instance(DELTA_INST.means, FidelityLadder([1.0, 4.0], [0.001, 0.0]), {"kind": "bernoulli"})
    assert not lying.check_assumptions().ok
    s = run_many("lucb-explore-c", lying, runs=20, delta=0.2, seed=5, progress=False, n_jobs=1)
    assert s.error_rate > 0.5


# ------------------------------------------------------------------------------------------ arguments
def test_arguments_are_validated_with_clear_messages():
    lad = FidelityLadder([1.0, 2.0], [0.1, 0.0])
    a = get_policy("lucb-explore-a")
    with pytest.raises(ValueError, match=r"L = 3 is out of range; accepted: a finite number >= 4KM = 16"):
        a(n_arms=2, ladder=lad, mu1_upper=0.9, mu2_lower=0.5, L=3)
    with pytest.raises(ValueError, match="mu1_upper = 0.5 must be greater than mu2_lower = 0.6"):
        a(n_arms=2, ladder=lad, mu1_upper=0.5, mu2_lower=0.6)
    with pytest.raises(TypeError):
        a(n_arms=2, ladder=lad)  # the prior bounds are required
    with pytest.raises(ValueError, match="t_mode = 'x' is unknown"):
        get_policy("lucb-highest")(n_arms=2, ladder=lad, t_mode="x")
    with pytest.raises(ValueError, match="max_rounds = 0 is out of range"):
        get_policy("lucb-highest")(n_arms=2, ladder=lad, max_rounds=0)
    inst = Instance([[0.2, 0.3], [0.6, 0.7]], lad, {"kind": "bernoulli"})
    with pytest.raises(ValueError, match=r"needs parameter\(s\) \['mu1_upper', 'mu2_lower'\]"):
        policy_for("lucb-explore-b", inst, delta=0.1)


def test_t_mode_pulls_uses_the_pull_count_and_is_more_conservative():
    inst = Instance([[0.2, 0.3], [0.6, 0.7]], FidelityLadder([1, 2], [0.1, 0]), {"kind": "bernoulli"})
    p = policy_for("lucb-highest", inst, delta=0.1, seed=0, t_mode="pulls")
    _drive_constant(p, [0.3, 0.7], 5)
    assert p.round_index() == p.n_pulls + 1 == 11
    costs = [
        run_many("lucb-highest", inst, runs=10, delta=0.1, seed=1, params={"t_mode": m}, progress=False).cost_mean
        for m in ("round", "pulls")
    ]
    assert costs[1] > costs[0]


def test_config_round_trip():
    lad = FidelityLadder([1.0, 2.0], [0.1, 0.0])
    for name in LUCBS:
        extra = {"mu1_upper": 0.9, "mu2_lower": 0.5} if name[-1] in "ab" else {}
        p = get_policy(name)(n_arms=3, ladder=lad, delta=0.1, seed=4, L=100, t_mode="pulls", max_rounds=7, **extra)
        q = type(p).from_config(json.loads(json.dumps(p.config())))
        assert q.config() == p.config()


# ------------------------------------------------------------------------------------------ base helper
def _argmax_reference(values, rng, atol=0.0):
    """The vectorised implementation of mf_sched.policy.argmax_random before the small-array path."""
    v = np.asarray(values, dtype=float)
    m = np.max(v)
    ties = np.flatnonzero(v >= m - atol) if np.isfinite(m) else np.flatnonzero(v == m)
    if ties.size == 1:
        return int(ties[0])
    return int(ties[rng.integers(ties.size)])


def test_argmax_random_small_array_path_matches_the_vectorised_path():
    """Base change: the small-array fast path picks the same ties with the same generator draws."""
    rng = np.random.default_rng(0)
    for _ in range(1000):
        v = rng.integers(0, 4, size=int(rng.integers(1, 40))).astype(float)
        if rng.random() < 0.3:
            v[rng.integers(v.size)] = rng.choice([np.inf, -np.inf])
        if rng.random() < 0.05:
            v[:] = -np.inf
        atol = float(rng.choice([0.0, 1.0]))
        g1, g2 = np.random.default_rng(7), np.random.default_rng(7)
        assert argmax_random(v, g1, atol=atol) == _argmax_reference(v, g2, atol=atol)
        assert g1.random() == g2.random()


# ------------------------------------------------------------------------------------------ CLI
def test_cli_simulates_iise_and_lucb_on_every_instance_file(capsys):
    files = sorted(Path(INSTANCES).glob("*.json")) if Path(INSTANCES).is_dir() else []
    if not files:
        pytest.skip("shared instances not available")
    for f in files:
        for args in (["--policy", "iise"], ["--policy", "lucb-explore-c"]):
            code = cli_main(
                [
                    "simulate",
                    *args,
                    "--instance",
                    str(f),
                    "--delta",
                    "0.01",
                    "--runs",
                    "1",
                    "--max-pulls",
                    "3000",
                    "--json",
                    "--no-progress",
                ]
            )
            out = json.loads(capsys.readouterr().out)
            assert code == 0 and out["runs"] == 1 and out["cost"]["mean"] > 0
