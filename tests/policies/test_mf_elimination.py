"""Elimination for MF-MAB (Wang et al. 2023, Algorithm 3): phase lengths, the elimination rule,
exploitation at fidelity 1, budget, ε."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mf_sched import Bounded, FidelityLadder, Instance, get_policy, policy_for, run_policy
from mf_sched.policies.mf_elimination import default_eps, elimination_schedule, n_phases

LADDER = FidelityLadder([1.0, 4.0, 10.0], [0.3, 0.1, 0.0])
TOP = np.array([0.9, 0.85, 0.7, 0.55, 0.3, 0.1])
# low fidelities inside the zeta band; the noise is negligible, so the elimination is deterministic
MEANS = np.c_[np.clip(TOP - 0.25, 0, 1), np.clip(TOP + 0.05, 0, 1), TOP]
QUIET = Instance(MEANS, LADDER, {"kind": "gaussian", "sigma": 1e-9})


def elim(budget: float, eps, **kw):
    # the policy assumes rewards in [0, 1] (the paper's Hoeffding constants); the simulator's noise is tiny
    return get_policy("mf-mab-elimination")(n_arms=6, ladder=LADDER, budget=budget, eps=eps, noise=Bounded(0, 1), **kw)


def test_phase_targets_by_hand():
    # n_p = ceil(2^{2p} log(Lambda / (2^{2p} lambda(M)))), cumulative; Lambda = 1e5, lambda(M) = 10
    expected = [
        math.ceil(math.log(1e4)),  # 10
        math.ceil(4 * math.log(2500)),  # 32
        math.ceil(16 * math.log(625)),  # 103.005 -> 104
        math.ceil(64 * math.log(156.25)),  # 324
    ]
    assert expected == [10, 32, 104, 324]
    assert elimination_schedule(1e5, 10.0, 0.2) == expected  # log2(2/0.2) = 3.32 -> phases p = 0..3
    assert n_phases(0.2) == 4 and n_phases(0.25) == 3 and n_phases(0.5) == 2 and n_phases(3.0) == 0
    # a target whose log is <= 0 is clamped at 0 pulls; sigma-sub-Gaussian rewards scale by (2 sigma)^2
    assert elimination_schedule(50.0, 10.0, 0.01)[2:] == [0] * (n_phases(0.01) - 2)
    assert elimination_schedule(1e5, 10.0, 0.2, sigma=1.0) == [
        math.ceil(4 * 4**p * math.log(1e4 / 4**p)) for p in range(4)
    ]


def test_phases_pull_to_the_cumulative_targets_and_eliminate_with_margin_2_to_1_minus_p():
    p = elim(1e5, 0.2)
    r = run_policy(p, QUIET, workers=None, completion="batch", seed=0)
    targets = p.targets
    assert targets == [10, 32, 104, 324]
    # survivors after phase p: mu_k + 2^{1-p} > max mu (deterministic here): p=0,1 keep all; p=2 (margin 0.5)
    # drops 0.3 and 0.1; p=3 (margin 0.25) drops 0.55
    assert p.phase_log == [(0, 10, 6), (1, 32, 6), (2, 104, 4), (3, 324, 3)]
    top = p.counts[:, -1]
    assert top.tolist() == [324, 324, 324, 324, 104, 104]  # each arm's count = the target of its last phase
    assert p.active.tolist() == [0, 1, 2] and p.exploiting
    # exploitation: the survivors in turn at fidelity 1, until the budget runs out
    low = p.counts[:, 0]
    assert low[3:].tolist() == [0, 0, 0] and low[:3].max() - low[:3].min() <= 1
    assert p.counts[:, 1].sum() == 0
    assert r.stop_reason == "budget" and 1e5 - 1.0 < r.cost <= 1e5


def test_exploitation_of_a_single_survivor_and_wang_regret_decomposition():
    inst = Instance([[0.5, 0.9], [0.5, 0.5], [0.5, 0.4]], FidelityLadder([1.0, 5.0], [0.4, 0.0]), {"kind": "bernoulli"})
    p = policy_for("mf-mab-elimination", inst, budget=20_000, seed=0)
    r = run_policy(p, inst, workers=None, completion="batch", seed=0)
    assert p.active.tolist() == [0] and p.recommendation().arm == 0
    n = p.counts
    assert n[1:, 0].sum() == 0  # only the survivor is exploited
    # Wang's regret (Eq. 22): sum over pulls of (lambda(m)/lambda(1)) mu_1 - mu_k, plus the unspent slots
    per_pull = np.array([[0.9 - 0.9, 5 * 0.9 - 0.9], [0.9 - 0.5, 5 * 0.9 - 0.5], [0.9 - 0.4, 5 * 0.9 - 0.4]])
    spent = float((n * np.array([1.0, 5.0])).sum())
    assert r.regret_wang == pytest.approx((n * per_pull).sum() + (20_000 - spent) * 0.9)


def test_parallel_workers_keep_the_phase_structure():
    explore = 4 * 324 + 2 * 104  # exploration pulls (cumulative targets), then 200 exploitation pulls
    seq = elim(1e5, 0.2)
    run_policy(seq, QUIET, workers=1, seed=0, max_pulls=explore + 200)
    par = elim(1e5, 0.2)
    run_policy(par, QUIET, workers=7, completion="random", seed=0, max_pulls=explore + 200)
    assert par.phase_log == seq.phase_log and len(par.phase_log) == 4
    assert par.counts[:, -1].tolist() == seq.counts[:, -1].tolist()


def test_budget_ends_during_exploration():
    p = elim(1_000.0, 0.05)  # phase targets outgrow the budget: the policy stops mid-exploration
    r = run_policy(p, QUIET, seed=0)
    assert not p.exploiting and r.stop_reason == "budget" and r.cost <= 1_000.0
    assert p.recommendation().reason == "budget" and p.recommendation().arm in p.active.tolist()


def test_eps_defaults_and_validation():
    K, lam, L = 6, 10.0, 1e5
    assert elim(L, "theorem").eps == pytest.approx((K * math.log(L) / L) ** (1 / 3))
    x = L / (16 * lam)
    assert elim(L, "appendix").eps == pytest.approx((K * math.log(x) / x) ** (1 / 3))
    assert default_eps(K, L, lam) == pytest.approx(elim(L, "theorem").eps)
    p = elim(L, 0.3)
    assert p.config()["eps"] == 0.3 and len(p.targets) == n_phases(0.3) == 3
    with pytest.raises(ValueError, match="needs the budget"):
        get_policy("mf-mab-elimination")(n_arms=2, ladder=LADDER)
    for bad in (0.0, -1.0, math.inf, "other", True):
        with pytest.raises(ValueError, match="eps"):
            elim(L, bad)
    with pytest.raises(ValueError, match="budget = 100.0 is out of range for eps='appendix'"):
        elim(100.0, "appendix")


def _pull_sequence(p) -> list[tuple[int, int]]:
    out = []
    while (pull := p.ask()) is not None:
        out.append((pull.arm, pull.fidelity))
        p.tell(pull, 0.5)
    return out


def _mfe(noise_width: float):
    return get_policy("mf-mab-elimination")(n_arms=6, ladder=LADDER, budget=5e3, eps=0.2, noise=Bounded(0, noise_width))


def test_a_phase_larger_than_the_budget_is_issued_only_as_far_as_the_budget_pays(monkeypatch):
    # sigma = 1e6 makes phase 0 want ~1e13 pulls per arm at fidelity M: the policy must not build that round (a
    # fuzzed saved state with this sigma took the whole machine's memory); the budget pays 5e3 / 10 = 500 pulls
    big = _mfe(2e6)
    assert big.targets[0] > 10**12
    seq = _pull_sequence(big)
    assert len(seq) == 500 and {f for _, f in seq} == {2}
    assert big.finished_issuing and big.cost == pytest.approx(5e3)
    # it stops exactly where the whole phase would have stopped it: sigma = 15 wants 5,594 pulls per arm (33,564
    # in all, small enough to build whole); the same run with the whole phase materialised issues the same pulls
    capped = _mfe(30.0)
    assert capped.targets[0] == 5594
    cls = type(capped)
    original = cls._pulls_affordable
    monkeypatch.setattr(cls, "_pulls_affordable", lambda self, f: 10**9 if f else original(self, f))
    whole = _mfe(30.0)
    assert _pull_sequence(capped) == _pull_sequence(whole)
