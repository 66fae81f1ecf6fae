"""The incremental UCB-type policies make exactly the decisions of a full recomputation.

UCB1, LUCB1, the LUCB-EXPLORE family and MF-UCB keep their argmax in a kinetic tournament
(:mod:`mf_sched._kinetic`). Each is driven here side by side with a *reference*: the same class whose
decision step is a straightforward vectorised recomputation over every arm (the implementation before
the incremental one), on random instances with Bernoulli and Gaussian rewards (many exact ties), one or
several workers, give-backs, adopted pulls and save/restore of the incremental policy mid-run. Every pull
and the final recommendation must be identical.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mf_sched import FidelityLadder, Policy
from mf_sched.confidence import ucb1_bonus, wang_beta
from mf_sched.policies.lucb1 import LUCB1
from mf_sched.policies.lucb_explore_a import LUCBExploreA
from mf_sched.policies.lucb_explore_b import LUCBExploreB
from mf_sched.policies.lucb_explore_c import LUCBExploreC
from mf_sched.policies.lucb_highest import LUCBHighest
from mf_sched.policies.mf_ucb import MFUCB
from mf_sched.policies.ucb1 import UCB1
from mf_sched.policy import argmax_random


# ------------------------------------------------------------------------------------------ references
class RefUCB1(UCB1):
    """UCB1 deciding by recomputing every index (the former implementation)."""

    def _propose(self):
        if self._requeue:
            return self._requeue[0], self.fidelity
        f = self.fidelity
        n = self._counts[:, f]
        n_eff = n + self._pending
        if (n_eff == 0).any():
            cand = np.flatnonzero(n_eff == 0)
            return int(cand[self._rng.integers(cand.size)]), f
        t = max(int(n_eff.sum()), 1)
        coef = self._coef * math.sqrt(math.log(t))
        with np.errstate(divide="ignore", invalid="ignore"):
            mu = np.where(n > 0, self._sums[:, f] / np.maximum(n, 1), -np.inf)
        idx = mu + coef * (1.0 / np.sqrt(n_eff))
        if idx.max() == -np.inf:
            return argmax_random(-self._pending.astype(float), self._rng), f
        return argmax_random(idx, self._rng), f


class RefLUCB1(LUCB1):
    """LUCB1 deciding over the vectors of every arm's bounds (the former implementation)."""

    def _next_round(self):
        if self._t == 0:
            if self.n_arms == 1:
                self._identified = 0
                return None
            arms = np.arange(self.n_arms)
            return arms, np.full(self.n_arms, self.fidelity, dtype=np.int64)
        mu, lcb, ucb = self._bounds()
        h = argmax_random(mu, self._rng)
        u = ucb.copy()
        u[h] = -np.inf
        l_ = argmax_random(u, self._rng)
        if ucb[l_] - lcb[h] < self.epsilon:
            self._identified = h
            return None
        return np.array([h, l_]), np.full(2, self.fidelity, dtype=np.int64)


class RefMFUCB(MFUCB):
    """MF-UCB deciding by recomputing the K×M index matrix (the former implementation)."""

    def _propose(self):
        if self._redo:
            a, f = self._redo[0]
            return a, f
        n = self._counts
        eff = n + self._pending
        with np.errstate(divide="ignore", invalid="ignore"):
            a = np.where(n > 0, self._sums / np.maximum(n, 1) + self._zeta[None, :], np.inf)
            c = np.where(n > 0, self._width_coef / np.sqrt(np.maximum(eff, 1)), 0.0)
        buf = c * math.sqrt(math.log(int(eff.sum()) + 1))
        buf += a
        B = buf.min(axis=1)
        told, issued = n.sum(axis=1), eff.sum(axis=1)
        if self._pending.sum():
            B[(told == 0) & (issued > 0)] = -np.inf
        i = int(B.argmax())
        best = B[i]
        if best == -np.inf:
            arm = argmax_random(-issued.astype(float), self._rng)
        elif B[i + 1 :].max(initial=-np.inf) < best:
            arm = i
        else:
            arm = argmax_random(B, self._rng)
        return arm, self.fidelity_for(arm)


def _ref_lucb_round(self):
    """Algorithm 1's decision step of Wang et al. (2023) over every arm's bounds (the former implementation)."""
    if self.n_arms == 1:
        self._identified = 0
        return None
    if self.max_rounds is not None and self._t >= self.max_rounds:
        self._exhausted = True
        return None
    t = self.round_index()
    ucb, lcb = self.bounds(t)
    lead = argmax_random(ucb, self._rng)
    u = ucb.copy()
    u[lead] = -np.inf
    chal = argmax_random(u, self._rng)
    self._leader, self._challenger = lead, chal
    if lcb[lead] > ucb[chal]:
        self._identified = lead
        return None
    fu = self._explore(chal, t)
    fl = self._explore(lead, t)
    arms = np.array([chal] * len(fu) + [lead] * len(fl), dtype=np.int64)
    return arms, np.asarray(fu + fl, dtype=np.int64)


class RefLUCBHighest(LUCBHighest):
    _next_round = _ref_lucb_round


class RefLUCBExploreC(LUCBExploreC):
    _next_round = _ref_lucb_round

    def _explore(self, k, t):
        beta = wang_beta(self._counts[k], t, self.delta, self.L, self.sigma)
        return [int(np.flatnonzero(beta >= self._zeta)[0])]


class RefLUCBExploreA(LUCBExploreA):
    _next_round = _ref_lucb_round

    def _explore(self, k, t):
        n = self._counts[k]
        c = float(ucb1_bonus(1, max(int(n.sum()), 1), self.sigma))
        f = (self.delta_hat(k) + c / np.sqrt(np.maximum(n, 1))) / self._sqrt_lam
        return [argmax_random(np.where(n > 0, f, np.inf), self._rng)]


class RefLUCBExploreB(LUCBExploreB):
    def _next_round(self):
        self._swept = np.zeros(0, dtype=np.int64)
        return _ref_lucb_round(self)


# ------------------------------------------------------------------------------------------ the driver
def _values(rng: np.random.Generator, K: int, M: int, kind: str):
    means = np.sort(rng.uniform(0.1, 0.9, size=(K, 1)) + np.linspace(-0.1, 0.0, M)[None, :], axis=1)
    if kind == "bernoulli":
        return lambda a, f: float(rng.random() < np.clip(means[a, f], 0, 1))
    if kind == "coarse":  # rewards on a grid of quarters: many exact ties between arms
        return lambda a, f: float(np.clip(np.round(4 * (means[a, f] + 0.3 * rng.standard_normal())), 0, 4) / 4)
    return lambda a, f: float(np.clip(means[a, f] + 0.2 * rng.standard_normal(), 0.0, 1.0))


def _drive(new: Policy, ref: Policy, rng: np.random.Generator, steps: int, kind: str, workers: int) -> Policy:
    """Apply one random sequence of calls to both policies; every answer must agree. Returns the
    (possibly restored) incremental policy."""
    value = _values(rng, new.n_arms, new.M, kind)
    outstanding: list[int] = []
    arms = {}
    for step in range(steps):
        if new.done or ref.done:
            assert new.done and ref.done, step
            break
        if not outstanding or (len(outstanding) < workers and rng.random() < 0.85):
            p, q = new.ask(), ref.ask()
            assert p == q, (step, p, q)
            if p is not None:
                outstanding.append(p.id)
                arms[p.id] = p
                continue
            assert outstanding or new.done, f"step {step}: nothing outstanding and no pull handed out"
            if not outstanding:
                continue
        j = int(rng.integers(len(outstanding)))
        pid = outstanding.pop(j)
        v = rng.random()
        if v < 0.03:
            new.give_back(pid)
            ref.give_back(pid)
        else:
            x = value(arms[pid].arm, arms[pid].fidelity)
            new.tell(pid, x)
            ref.tell(pid, x)
        if v > 0.98:  # an outside pull, told at once
            a, f = int(rng.integers(new.n_arms)), int(rng.integers(new.M))
            p, q = new.adopt(a, f), ref.adopt(a, f)
            assert p == q
            x = value(a, f)
            new.tell(p, x)
            ref.tell(q, x)
        if rng.random() < 0.01:  # save and restore the incremental policy mid-run
            new = Policy.from_state_dict(new.state_dict())
    assert new.recommendation() == ref.recommendation()
    np.testing.assert_array_equal(new.counts, ref.counts)
    return new


CASES = [(K, kind, W) for K in (2, 5, 40, 300) for kind in ("bernoulli", "coarse", "gauss") for W in (1, 3)]


def _ladder(rng: np.random.Generator, M: int) -> FidelityLadder:
    costs = np.cumprod(rng.uniform(1.5, 4.0, size=M))
    zeta = np.sort(rng.choice([0.0, 0.05, 0.1, 0.2], size=M))[::-1].copy()
    zeta[-1] = 0.0
    return FidelityLadder(costs.tolist(), zeta.tolist())


@pytest.mark.parametrize("K,kind,W", CASES)
def test_ucb1_matches_reference(K, kind, W):
    rng = np.random.default_rng(K * 31 + W)
    ladder = _ladder(rng, 2)
    for rho in (None, 2.0):
        new = UCB1(n_arms=K, ladder=ladder, rho=rho, budget=1e9, seed=K)
        ref = RefUCB1(n_arms=K, ladder=ladder, rho=rho, budget=1e9, seed=K)
        _drive(new, ref, rng, 1500, kind, W)


@pytest.mark.parametrize("K,kind,W", CASES)
def test_mf_ucb_matches_reference(K, kind, W):
    rng = np.random.default_rng(K * 37 + W)
    for M in (1, 3):
        ladder = _ladder(rng, M)
        new = MFUCB(n_arms=K, ladder=ladder, budget=1e9, seed=K + M)
        ref = RefMFUCB(n_arms=K, ladder=ladder, budget=1e9, seed=K + M)
        _drive(new, ref, rng, 1500, kind, W)


LUCB = [
    (LUCBHighest, RefLUCBHighest),
    (LUCBExploreC, RefLUCBExploreC),
    (LUCBExploreA, RefLUCBExploreA),
    (LUCBExploreB, RefLUCBExploreB),
]


@pytest.mark.parametrize("K,kind,W", CASES)
@pytest.mark.parametrize("pair", LUCB, ids=[c[0].name for c in LUCB])
def test_lucb_family_matches_reference(pair, K, kind, W):
    cls, ref_cls = pair
    rng = np.random.default_rng(K * 41 + W)
    for M, noise, t_mode in (
        (1, None, "round"),
        (3, None, "pulls"),
        (3, {"kind": "subgaussian", "sigma": 0.2}, "round"),
    ):
        ladder = _ladder(rng, M)
        kw = dict(n_arms=K, ladder=ladder, delta=0.1, t_mode=t_mode, noise=noise, seed=K + M, max_rounds=5000)
        if cls in (LUCBExploreA, LUCBExploreB):
            kw.update(mu1_upper=0.9, mu2_lower=0.6)
        _drive(cls(**kw), ref_cls(**kw), rng, 1200, kind, W)


@pytest.mark.parametrize("K,kind,W", CASES)
def test_lucb1_matches_reference(K, kind, W):
    rng = np.random.default_rng(K * 43 + W)
    for M, eps, noise in ((1, 0.0, None), (2, 0.05, None), (2, 0.0, {"kind": "subgaussian", "sigma": 0.2})):
        kw = dict(n_arms=K, ladder=_ladder(rng, M), delta=0.1, epsilon=eps, noise=noise, seed=K + M)
        _drive(LUCB1(**kw), RefLUCB1(**kw), rng, 1200, kind, W)
