"""SFSR / SFSR-L / USLP (Tang et al. 2024): schedule, behaviour, error rates and the ask/tell contract."""

from __future__ import annotations

import copy
import json
import math

import _asktell
import numpy as np
import pytest
from _asktell import snapshot
from scipy import stats

from mf_sched import DuplicateTellError, FidelityLadder, Policy, PolicyError, UnknownPullError, get_policy
from mf_sched.constrained import (
    ConstrainedInstance,
    constrained_policy,
    run_constrained,
    run_many_constrained,
    tang2024_instance,
)
from mf_sched.policies.sfsr import SFSR, sfsr_psi, sfsr_schedule
from mf_sched.policies.uslp import USLP

VARIANTS = [("sfsr", {"score": "iv"}), ("sfsr", {"score": "lagrangian"}), ("uslp", {})]
IDS = ["sfsr-iv", "sfsr-l", "uslp"]


@pytest.fixture(scope="module")
def small():
    """K = 6, L = 1; the optimum mixes arms 0 and 1."""
    r = [0.5, 1.0, 0.3, 0.6, 0.2, 0.4]
    c = [[0.5], [1.5], [0.9], [1.1], [0.2], [1.4]]
    return ConstrainedInstance(r, c, [1.0], {"kind": "gaussian", "sigma_reward": 0.2, "sigma_cost": 0.1}, name="s")


def make(name, inst, N=600, seed=0, **kw):
    return constrained_policy(name, inst, pull_budget=N, seed=seed, **kw)


def drive(p, inst, rng, steps, workers=1):
    arms = inst.unknown_arms
    return _asktell.drive(
        p, steps, lambda x: inst.sample(arms[[x.arm]], rng)[0], rng, workers, trace_of=lambda x: x.arm
    )


# ---------------------------------------------------------------------------------------------- schedule
@pytest.mark.parametrize(
    "K, L, N, expected, worst",
    [
        (16, 1, 1000, [19, 20, 22, 23, 25, 27, 30, 33, 38, 43, 50, 60, 75, 99, 149], 992),
        (16, 1, 5000, [94, 101, 108, 116, 126, 137, 151, 167, 188, 215, 251, 301, 376, 501, 752], 4994),
        (
            24,
            2,
            1000,
            [10, 11, 11, 12, 12, 13, 13, 14, 15, 16, 17, 18, 20, 22, 24, 26, 30, 34, 39, 47, 59, 78, 117],
            988,
        ),
        (16, 0, 1000, [22, 23, 25, 27, 29, 32, 35, 38, 43, 49, 57, 69, 86, 114, 171], 991),
    ],
)
def test_phase_lengths_match_eq7(K, L, N, expected, worst):
    n = sfsr_schedule(K, K, L, N)
    assert n[0] == 0 and n[1:].tolist() == expected
    # worst case of Proposition 1: the L virtual arms are rejected first
    assert n[L + 1 :].sum() + (L + 1) * n[-1] == worst <= N


def test_psi_closed_forms():
    assert sfsr_psi(16, 0) == pytest.approx(0.5 + sum(1 / i for i in range(2, 17)))  # log-bar: SR
    assert sfsr_psi(24, 2) == pytest.approx(1.5 + sum(1 / i for i in range(2, 23)))  # (L+1)/2 + Σ 1/i
    assert sfsr_psi(3, 2) == pytest.approx(1.5)  # K0 ≤ L + 2: K0/2


def test_realised_pulls_follow_the_schedule_and_never_exceed_n():
    inst = tang2024_instance("D3P")
    for seed in range(3):
        p = make("sfsr", inst, N=5000, seed=seed)
        res = run_constrained(p, inst, seed=seed)
        assert res.n_pulls <= 5000
        n = p.schedule
        # an arm rejected in round k was pulled exactly n_k times; survivors n_{K-1}
        for k, a in enumerate(p.recommendation().details["eliminated"], start=1):
            if a < inst.K:
                assert p.counts[a].sum() == n[k]
        for a in p.remaining:
            if a < inst.K:
                assert p.counts[a].sum() == n[-1]
        assert len(p.remaining) == inst.L + 1


def test_l0_is_successive_rejects():
    """With no constraint the IV score is r̂ and SFSR rejects the lowest empirical mean each round."""
    r = np.array([0.1, 0.5, 0.3, 0.9, 0.7])
    p = SFSR(n_arms=5, thresholds=[], pull_budget=500, seed=0, tie_break="lowest")
    while not p.done:
        batch = p.ask_batch()
        p.tell_batch(batch, r[[x.arm for x in batch]])
    assert p.recommendation().details["eliminated"] == [0, 2, 1, 4]
    assert p.recommendation().mixture.support == (3,)
    assert p.schedule[1:].tolist() == sfsr_schedule(5, 5, 0, 500)[1:].tolist()


def test_noise_free_runs_identify_the_optimum(small):
    for name, kw in VARIANTS:
        p = make(name, small, N=3000, **kw)
        while not p.done:
            batch = p.ask_batch()
            arms = small.unknown_arms[[x.arm for x in batch]]
            p.tell_batch(batch, np.column_stack([small.rewards[arms], small.costs[arms]]))
        rec = p.recommendation()
        assert rec.reason == "finished" and not rec.certified
        assert rec.mixture.support == small.optimum.support == (0, 1)
        assert rec.mixture.weights == pytest.approx(small.optimum.weights)
        assert rec.arm == small.optimum.heaviest_arm


# ---------------------------------------------------------------------------------------------- infeasible
@pytest.mark.parametrize("name, kw", VARIANTS, ids=IDS)
def test_infeasible_instances_get_the_explicit_answer(name, kw):
    inst = ConstrainedInstance(
        [1.0, 0.5, 0.8, 0.2],
        [[2.0], [2.5], [3.0], [2.2]],
        [1.0],
        {"kind": "gaussian", "sigma_reward": 1, "sigma_cost": 0.1},
    )
    assert not inst.optimum.feasible and inst.assumption.ok
    s = run_many_constrained(name, inst, pull_budget=400, runs=20, params=kw, progress=False)
    assert s.error_rate == 0 and s.infeasible_rate == 1
    rec_mix = s.results[0].output
    assert not rec_mix.feasible and rec_mix.arms == () and rec_mix.to_dict()["feasible"] is False
    p = make(name, inst, N=400, **kw)
    run_constrained(p, inst, seed=0)
    rec = p.recommendation()
    assert rec.reason == "infeasible" and rec.arm is None and not rec.mixture.feasible


# ---------------------------------------------------------------------------------------------- error rates
def test_sfsr_beats_uslp_on_d1p():
    """D1P at N = 20,000 (an independent sanity run: SFSR 0.125, USLP 0.27 over 200 runs): one-sided
    two-proportion z-test, 240 seeded runs each."""
    inst = tang2024_instance("D1P")
    runs = 240
    a = run_many_constrained("sfsr", inst, pull_budget=20_000, runs=runs, seed=11, progress=False, keep_results=False)
    b = run_many_constrained("uslp", inst, pull_budget=20_000, runs=runs, seed=12, progress=False, keep_results=False)
    p1, p2 = a.error_rate, b.error_rate
    pool = (p1 + p2) / 2
    z = (p2 - p1) / math.sqrt(2 * pool * (1 - pool) / runs)
    assert stats.norm.sf(z) < 0.01, (p1, p2)
    assert 0.05 < p1 < 0.3 and 0.15 < p2 < 0.4  # in line with that sanity run
    assert a.pulls_max <= 20_000 and b.pulls_mean == 20_000 // 24 * 24


def test_known_arms_are_used_but_never_pulled():
    # arm 2 (known, cheap) is needed in the optimal mixture; the policy maps it back to the instance index
    inst = ConstrainedInstance(
        [1.0, 0.3, 0.2, 0.5],
        [[1.6], [0.8], [0.1], [1.3]],
        [1.0],
        {"kind": "gaussian", "sigma_reward": 0.05, "sigma_cost": 0.05},
        known=[2],
    )
    assert inst.optimum.support == (0, 2)
    for name, kw in VARIANTS:
        p = make(name, inst, N=3000, **kw)
        assert p.n_arms == 3 and p.K == 4
        res = run_constrained(p, inst, seed=1)
        assert res.correct and res.output.support == (0, 2)
        assert p.counts.sum() == res.n_pulls and p.counts.shape == (3, 1)


# ---------------------------------------------------------------------------------------------- contract
@pytest.mark.parametrize("name, kw", VARIANTS, ids=IDS)
def test_state_roundtrip_mid_run(name, kw, small):
    p = make(name, small, seed=7, **kw)
    drive(p, small, np.random.default_rng(1), 150, workers=3)
    q = Policy.from_state_dict(json.loads(json.dumps(p.state_dict())))
    assert type(q) is type(p) and q.outstanding == p.outstanding and snapshot(q) == snapshot(p)
    for x in p.outstanding:
        v = [0.5, 0.9]
        p.tell(x, v)
        q.tell(x, v)
    assert drive(p, small, np.random.default_rng(2), 700, 2) == drive(q, small, np.random.default_rng(2), 700, 2)
    assert snapshot(p) == snapshot(q) and p.done and q.done
    assert p.recommendation() == q.recommendation()


@pytest.mark.parametrize("name, kw", VARIANTS, ids=IDS)
def test_deterministic_given_seed(name, kw, small):
    t1 = drive(make(name, small, seed=3, **kw), small, np.random.default_rng(9), 700, workers=2)
    t2 = drive(make(name, small, seed=3, **kw), small, np.random.default_rng(9), 700, workers=2)
    assert t1 == t2 and len(t1) > 0


@pytest.mark.parametrize("name, kw", VARIANTS, ids=IDS)
def test_bad_tells_raise_and_leave_the_policy_unchanged(name, kw, small):
    p = make(name, small, **kw)
    a, b = p.ask(), p.ask()
    before = snapshot(p)
    for bad, err in [
        (0.5, "2 components"),
        ([0.5, math.nan], "not finite"),
        ([math.inf, 0.5], "not finite"),
        ([0.5, 0.2, 0.1], "2 components"),
    ]:
        with pytest.raises(PolicyError, match=err):
            p.tell(a, bad)
    with pytest.raises(UnknownPullError):
        p.tell(10_000, [0.5, 0.5])
    with pytest.raises(PolicyError):
        p.tell_batch([a, b], [[0.5, 0.5], [0.5, math.nan]])
    with pytest.raises(PolicyError):
        p.tell_batch([a, a], [[0.5, 0.5], [0.5, 0.5]])
    assert snapshot(p) == before
    p.tell(a, [0.5, 0.5])
    with pytest.raises(DuplicateTellError):
        p.tell(a, [0.5, 0.5])
    with pytest.raises(DuplicateTellError):
        p.give_back(a)
    p.tell(b, [0.4, 0.6])


@pytest.mark.parametrize("name, kw", VARIANTS, ids=IDS)
def test_give_back_reissues_the_work(name, kw, small):
    p, q = make(name, small, seed=5, **kw), make(name, small, seed=5, **kw)
    x = p.ask()
    p.give_back(x)
    assert p.outstanding == () and p.cost == 0
    y, z = p.ask(), q.ask()
    assert y.arm == z.arm and y.id != x.id


@pytest.mark.parametrize("name, kw", VARIANTS, ids=IDS)
def test_cost_budget_cap_is_never_exceeded(name, kw, small):
    p = constrained_policy(name, small, pull_budget=3000, seed=2, **kw)
    p2 = type(p).from_config({**p.config(), "budget": 57.0})
    rng = np.random.default_rng(0)
    while not p2.done:
        batch = p2.ask_batch(3)
        assert p2.committed_cost <= 57.0 + 1e-9
        if batch:
            p2.tell_batch(batch, small.sample(small.unknown_arms[[x.arm for x in batch]], rng))
    rec = p2.recommendation()
    assert p2.cost <= 57 and rec.reason == "budget" and rec.mixture is not None  # interim LP answer


@pytest.mark.parametrize("name, kw", VARIANTS, ids=IDS)
def test_adopted_pulls_are_recorded(name, kw, small):
    p = make(name, small, **kw)
    x = p.adopt(0, 0)
    p.tell(x, [0.25, 0.5])
    assert p.counts[0, 0] == 1 and p.means[0, 0] == 0.25
    drive(p, small, np.random.default_rng(0), 50)


def test_replay_and_interim_recommendation(small):
    p = make("sfsr", small, seed=4)
    p.record_history()
    drive(p, small, np.random.default_rng(3), 40, workers=2)
    q = make("sfsr", small, seed=4)
    q.replay(p.history)
    assert snapshot(q) == snapshot(p)
    rec = p.recommendation()
    assert rec.reason == "in-progress" and rec.mixture is not None and rec.details["round"] >= 1
    fresh = make("sfsr", small)
    assert fresh.recommendation().mixture is None  # no data yet: nothing to recommend
    bad = copy.deepcopy(p.state_dict())
    bad["state"]["_alive"]["__ndarray__"]["dtype"] = "int64"
    with pytest.raises(Exception):  # noqa: B017 - StateFormatError or a dtype error, never a silent load
        Policy.from_state_dict(bad)


def test_constructor_validation():
    lad = FidelityLadder([1.0])
    with pytest.raises(ValueError, match="N > K0 = 4"):
        SFSR(4, lad, thresholds=[1.0], pull_budget=4)
    with pytest.raises(ValueError, match="score = 'x' is unknown"):
        SFSR(4, thresholds=[1.0], pull_budget=40, score="x")
    with pytest.raises(ValueError, match="K >= 2"):
        SFSR(1, thresholds=[1.0], pull_budget=40)
    with pytest.raises(ValueError, match="single-fidelity"):
        SFSR(4, FidelityLadder([1.0, 2.0], [0.1, 0.0]), thresholds=[1.0], pull_budget=40)
    with pytest.raises(ValueError, match="cost_scale"):
        SFSR(4, thresholds=[1.0], pull_budget=40, cost_scale=[0.0])
    with pytest.raises(ValueError, match="known arms"):
        SFSR(4, thresholds=[1.0], pull_budget=40, known_rewards=[1.0], known_costs=[[1.0, 2.0]])
    with pytest.raises(ValueError, match="N >= 4"):
        USLP(4, thresholds=[1.0], pull_budget=3)
    assert get_policy("sfsr").objective == "mixture" and not get_policy("uslp").finite_armed


def test_lagrangian_cost_scale_is_unit_invariant_by_default(small):
    """Rescaling a cost row and its threshold (ms → s) leaves SFSR-L's decisions unchanged with the
    default cost_scale="threshold" (eq. 8); IV is invariant by construction."""
    scaled = ConstrainedInstance(
        small.rewards,
        small.costs * 1000,
        small.thresholds * 1000,
        {"kind": "gaussian", "sigma_reward": 0.2, "sigma_cost": 100},
    )
    for kw in ({"score": "lagrangian"}, {"score": "iv"}):
        a = run_constrained(make("sfsr", small, N=400, **kw), small, seed=5)
        b = run_constrained(make("sfsr", scaled, N=400, **kw), scaled, seed=5)
        assert a.output.support == b.output.support


@pytest.mark.parametrize("name, kw", VARIANTS, ids=IDS)
def test_sufficient_statistics_path_matches_the_protocol(name, kw, small):
    """fast=True draws each round's totals (exact in law): same schedule and pulls, the same answers on a
    nearly noise-free instance, and error rates that agree with the per-pull path."""
    quiet = ConstrainedInstance(
        small.rewards, small.costs, small.thresholds, {"kind": "gaussian", "sigma_reward": 1e-9, "sigma_cost": 1e-9}
    )
    for seed in range(3):
        a = run_constrained(make(name, quiet, N=600, seed=seed, **kw), quiet, seed=seed, fast=True)
        b = run_constrained(make(name, quiet, N=600, seed=seed, **kw), quiet, seed=seed)
        assert a.output.support == b.output.support == quiet.optimum.support and a.n_pulls == b.n_pulls
    p = make(name, small, N=600, seed=0, **kw)
    run_constrained(p, small, seed=0, fast=True)
    assert p.counts.sum() == p.n_pulls and p.cost == p.n_pulls and p.done
    noisy = ConstrainedInstance(
        small.rewards, small.costs, small.thresholds, {"kind": "gaussian", "sigma_reward": 1.0, "sigma_cost": 0.5}
    )
    n = 200
    f = run_many_constrained(name, noisy, pull_budget=300, runs=n, seed=1, params=kw, progress=False, fast=True)
    s = run_many_constrained(name, noisy, pull_budget=300, runs=n, seed=2, params=kw, progress=False)
    pool = (f.error_rate + s.error_rate) / 2
    assert 0.05 < pool < 0.95  # a budget where errors happen, so the comparison has power
    assert abs(f.error_rate - s.error_rate) < 3.3 * math.sqrt(2 * pool * (1 - pool) / n)
    with pytest.raises(ValueError, match="fast=True"):
        run_constrained(make(name, small, **kw), small, fast=True, budget=10.0)
