"""The LUCB framework for multi-fidelity best-arm identification (Wang, Wu, Chen, Lui 2023, Algorithm 1).

Paper: X. Wang, Q. Wu, W. Chen, J. C. S. Lui, *Multi-Fidelity Multi-Armed Bandits Revisited*, NeurIPS 2023,
§3.2.1 (Algorithm 1, Eqs. 4–5). The fidelity-selection procedures live in their own modules:
EXPLORE-A (:mod:`.lucb_explore_a`), EXPLORE-B (:mod:`.lucb_explore_b`), EXPLORE-C (Appendix D,
:mod:`.lucb_explore_c`) and the Appendix C baseline that always pulls the highest fidelity
(:mod:`.lucb_highest`). This module is shared machinery and registers nothing.

Per arm `k` and fidelity `m` the policy keeps `N_k^(m)` and `µ̂_k^(m)` (never pooled across
fidelities; these are the shared statistics :attr:`Policy.counts` / :attr:`Policy.means`, so every sample —
adopted extras included — is used). With the confidence radius of Eq. 4,
`β(n, t, δ) = √(log(L t⁴/δ)/n)` for rewards in [0, 1], generalised to σ-sub-Gaussian rewards as
`2σ √(log(L t⁴/δ)/n)` (:func:`mf_sched.confidence.wang_beta`; σ = 1/2 is the paper's formula; the
factor-2 slack in the exponent is the paper's and is kept), and `L = 4KM` by default (the experiments do not
state `L`; this is the smallest value Theorem 3.4 allows):

* `UCB_k = min_m (µ̂_k^(m) + ζ(m) + β(N_k^(m), t, δ))`, `LCB_k = max_m (µ̂_k^(m) − ζ(m) − β(·))` (Eq. 5);
  fidelities without samples are ignored (β = ∞). For rewards bounded in [a, b] the bounds are clipped to
  [a, b], which matches the paper's initialisation (UCB = 1, LCB = 0 before any sample); for sub-Gaussian
  rewards they are not clipped;
* each round `t = 1, 2, …`: recompute the bounds, take `ℓ_t = argmax_k UCB_k` and
  `u_t = argmax_{k ≠ ℓ_t} UCB_k` (the **top two UCBs**, not the empirical best — the proof relies on
  `UCB_ℓ ≥ UCB_u`); stop and answer `ℓ_t` when `LCB_{ℓ_t} > UCB_{u_t}`; otherwise run
  `EXPLORE(u_t)` then `EXPLORE(ℓ_t)` and go to round `t + 1`. The printed loop ("while LCB ≤ UCB do
  select; explore; output ℓ_t") tests the stopping rule with the previous round's arms; we use the order
  the proofs use (recompute → select → test → explore);
* `t` is the LUCB round index starting at 1 (Algorithm 1 never increments it; each (k, m) is pulled at most
  once per round,
  which is what the proof's union bound over `n ≤ t` needs). `t_mode="pulls"` uses the total number of
  pulls + 1 instead, as Poiani et al. 2024's re-implementation does (more conservative);
* ties are broken uniformly at random with the policy's seeded generator (the paper puts the best arm first by
  convention, so index order would favour it).

Cost per round: the arms' UCBs sit in a kinetic tournament (:mod:`mf_sched._kinetic`): the two arms
sampled in a round are updated in O(M + log K), the growth of `t` re-decides only the comparisons
whose certificate expires, and `ℓ_t`, `u_t` and their ties are exactly those of recomputing every
bound (tested side by side with that recomputation); :meth:`MFLUCB.bounds` still gives every arm's bounds.

Correctness (Theorem 3.4) holds for every EXPLORE procedure, because stopping only uses the β-intervals.
**Termination does not**: on `poiani2024-lucb-nonstop.json` EXPLORE-A and EXPLORE-B concentrate on a
fidelity whose bias ζ(m) keeps the two intervals from separating and never stop (the paper's termination condition,
`Δ̃_k^(m̃*_k) > 0`, does not prevent this; the instance is the authors' `configs/forever.yml` of
`riccardopoiani/adv-mf-bai`). Every policy here therefore takes a cost cap (`budget`: the run stops before exceeding
it and recommends uncertified, `reason == "budget"`) and a round cap (`max_rounds`, default 10⁷: `reason ==
"exhausted"`): it never loops forever. An uncertified answer is the arm with the largest LCB.

Parallel workers: a round is the pulls of `EXPLORE(u_t)` and `EXPLORE(ℓ_t)` — 2 pulls (EXPLORE-A, -C,
highest fidelity) or up to `2M` (EXPLORE-B's uniform sweeps) — handed out together; the next round
waits for all of them (a barrier), so decisions do not depend on `W` or on the completion order, and
workers beyond the round size idle: LUCB is a sequential algorithm (for many workers prefer IISE).

Observation semantics: the guarantee is for independent pulls. Under resumable runs every sample of
`(k, m)` must come from its own replica (seed) of arm `k`, the `r`-th sample of every fidelity from
replica `r` (fixed in advance): the per-(k, m) intervals then stay valid (the union bound over
fidelities needs no independence between them) and the cost of advancing replica `r` from `m'` to
`m` is `λ(m) − λ(m')`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from mf_sched._kinetic import KineticMax, LeafModel
from mf_sched._validate import check_choice, check_delta, check_int, check_real
from mf_sched.confidence import wang_beta
from mf_sched.ladder import FidelityLadder
from mf_sched.noise import Bounded
from mf_sched.policy import Recommendation, RoundPolicy

__all__ = ["MFLUCB", "PriorBoundsLUCB"]


class MFLUCB(RoundPolicy):
    """Algorithm 1 of Wang et al. (2023) with an abstract EXPLORE; see the module docstring.

    Args:
        n_arms, ladder, noise, budget, seed: see :class:`~mf_sched.policy.Policy`.
        delta: confidence; the answer is the best arm with probability ≥ 1 − δ (Theorem 3.4).
        L: the factor of the radius, `L ≥ 4KM` (Theorem 3.4); default `4KM`.
        t_mode: `"round"` (t = LUCB round index, default) or `"pulls"` (t = pulls so far + 1).
        max_rounds: stop after this many rounds without certifying (`None`: no round cap — then only a
            `budget` prevents an endless run on instances where the procedure cannot stop).
    """

    sample_agnostic = True
    _state_attrs = ("_t", "_identified", "_exhausted", "_leader", "_challenger")

    def __init__(
        self,
        n_arms: int,
        ladder: FidelityLadder,
        *,
        delta: float = 0.05,
        L: float | None = None,
        t_mode: str = "round",
        max_rounds: int | None = 10_000_000,
        **kwargs: Any,
    ) -> None:
        super().__init__(n_arms, ladder, **kwargs)
        self.delta = check_delta(delta)
        K, M = self.n_arms, self.M
        accepted_L = f"a finite number >= 4KM = {4 * K * M} (Thm 3.4)"
        self.L = 4.0 * K * M if L is None else check_real("L", L, ge=4.0 * K * M, accepted=accepted_L)
        self.t_mode = check_choice("t_mode", t_mode, ("round", "pulls"))
        self.max_rounds = check_int("max_rounds", max_rounds, 1, none_ok=True)
        self._lam = np.asarray(ladder.costs, dtype=float)
        self._sqrt_lam = np.sqrt(self._lam)
        lo, hi = (self.noise.low, self.noise.high) if isinstance(self.noise, Bounded) else (-np.inf, np.inf)
        self._clip = (float(lo), float(hi))
        self._zeta_list = self._zeta.tolist()
        self._sqrt_lam_list = self._sqrt_lam.tolist()
        self._t = 0
        self._identified = -1
        self._exhausted = False
        self._leader = -1
        self._challenger = -1
        self._init_explore()
        self._tree = KineticMax(self.n_arms, self._leaves(), s=self._radius_constant(self.round_index()))
        self._set_config(
            delta=self.delta,
            L=None if L is None else self.L,
            t_mode=t_mode,
            max_rounds=self.max_rounds,
            **self._explore_config(),
        )
        self._start()

    # ------------------------------------------------------------------ subclass hooks
    #: set by subclasses: one-line description of EXPLORE
    explore_name: ClassVar[str] = ""

    def _init_explore(self) -> None:
        """Validate the procedure's own arguments (stored as attributes before `__init__` runs)."""

    def _explore_config(self) -> dict[str, Any]:
        return {}

    def _explore(self, k: int, t: int) -> list[int]:
        """Fidelities to pull for arm `k` in round `t` (the leader of the round is :attr:`_leader`)."""
        raise NotImplementedError

    def _after_round(self) -> None:
        """Hook run when the round's results are all in (EXPLORE-B's commit test)."""

    # ------------------------------------------------------------------ statistics
    def round_index(self) -> int:
        """The `t` of the radius for the round being decided."""
        return self._t + 1 if self.t_mode == "round" else self._n_told + 1

    def _after_load(self) -> None:
        self._tree = KineticMax(self.n_arms, self._leaves(), s=self._radius_constant(self.round_index()))

    def _radius_constant(self, t: int) -> float:
        """`β(1, t, δ)`: the radius of a cell with `N` samples is this divided by `√N`."""
        return float(wang_beta(1, t, self.delta, self.L, self.sigma))

    def _leaves(self) -> _LUCBLeaves:
        return _LUCBLeaves(self._clip[1], self._arm_cells, self._ucb_one)

    def _arm_cells(self, k: int) -> tuple[tuple[float, int, float], ...]:
        """`((µ̂, N, ζ), ...)` of arm `k` over its fidelities with a sample."""
        return tuple(
            (sm / n, n, z)
            for sm, n, z in zip(self._sums[k].tolist(), self._counts[k].tolist(), self._zeta_list)
            if n > 0
        )

    def _ucb_one(self, k: int, c: float) -> float:
        """`UCB_k` (Eq. 5) with radius constant `c`, with the arithmetic of :meth:`bounds`."""
        v = math.inf
        for mu, n, z in self._tree.signature(k):
            u = mu + (c / math.sqrt(n) + z)
            if u < v:
                v = u
        return min(v, self._clip[1])

    def _lcb_one(self, k: int, c: float) -> float:
        """`LCB_k` (Eq. 5) with radius constant `c`, with the arithmetic of :meth:`bounds`."""
        v = -math.inf
        for mu, n, z in self._tree.signature(k):
            u = mu - (c / math.sqrt(n) + z)
            if u > v:
                v = u
        return max(v, self._clip[0])

    def _mu_hat(self) -> np.ndarray:
        """Empirical means per (arm, fidelity); 0 where there is no sample (its radius is +inf)."""
        return self._sums / np.maximum(self._counts, 1)

    def beta(self, t: int) -> np.ndarray:
        """`β(N_k^(m), t, δ)` for every (arm, fidelity) (`inf` without samples); Eq. 4 via
        :func:`mf_sched.confidence.wang_beta`, evaluated as `β(1, t, δ)/√N` (one log per round)."""
        c = float(wang_beta(1, t, self.delta, self.L, self.sigma))
        n = self._counts
        return np.where(n > 0, c / np.sqrt(np.maximum(n, 1)), np.inf)

    def bounds(self, t: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """`(UCB_k, LCB_k)` of Eq. 5 for every arm at round `t` (default: the round being decided)."""
        t = self.round_index() if t is None else t
        mu = self._mu_hat()
        beta = self.beta(t)
        zb = beta + self._zeta  # inf where N = 0, so those fidelities never bind the min / max
        ucb = (mu + zb).min(axis=1)
        lcb = (mu - zb).max(axis=1)
        lo, hi = self._clip
        if lo > -np.inf:
            np.minimum(ucb, hi, out=ucb)
            np.maximum(lcb, lo, out=lcb)
        return ucb, lcb

    # ------------------------------------------------------------------ the loop
    def _next_round(self) -> tuple[np.ndarray, np.ndarray] | None:
        if self.n_arms == 1:
            self._identified = 0
            return None
        if self.max_rounds is not None and self._t >= self.max_rounds:
            self._exhausted = True
            return None
        t = self.round_index()
        c = self._radius_constant(t)
        # the top two UCBs (ties broken uniformly at random, in arm order) from the kinetic tournament:
        # exactly argmax_random over the UCBs of bounds(t), then over the others
        tree = self._tree
        tree.set_s(c)
        count, lead = tree.top()
        if count > 1:
            lead = tree.select(int(self._rng.integers(count)))
        count, chal = tree.top_excluding(lead)
        if count > 1:
            chal = tree.select_excluding(lead, int(self._rng.integers(count)))
        self._leader, self._challenger = lead, chal
        if self._lcb_one(lead, c) > self._ucb_one(chal, c):
            self._identified = lead
            return None
        fu = self._explore(chal, t)
        fl = self._explore(lead, t)
        arms = np.array([chal] * len(fu) + [lead] * len(fl), dtype=np.int64)
        return arms, np.asarray(fu + fl, dtype=np.int64)

    def _observe_round(self, arms: np.ndarray, fidelities: np.ndarray, values: np.ndarray) -> None:
        # estimates come from the shared per-(arm, fidelity) statistics; the arms' UCBs changed
        for k in set(arms.tolist()):
            self._tree.update(k)

    def _observe_round_one(self, arm: int, fidelity: int, value: float) -> None:
        self._tree.update(arm)

    def _observe_extra(self, arm: int, fidelity: int, value: float) -> None:
        self._tree.update(arm)  # an adopted sample enters the shared statistics, hence the arm's bounds

    def _round_complete(self) -> None:
        self._t += 1
        self._after_round()

    # ------------------------------------------------------------------ answers
    def _recommend(self) -> Recommendation:
        details: dict[str, Any] = {"rounds": self._t, "leader": self._leader, "challenger": self._challenger}
        if self._identified >= 0:
            return self._answer(self._identified, certified=True, details=details)
        arm = None
        if self.n_pulls:
            ucb, lcb = self.bounds()
            top = np.flatnonzero(lcb == lcb.max())
            arm = int(top[np.argmax(ucb[top])])
            details.update(lcb=float(lcb[arm]))
        reason = "exhausted" if self._exhausted else self._default_reason()
        return self._answer(arm, reason=reason, details=details)

    def _describe(self) -> dict[str, Any]:
        d = super()._describe()
        d.update(t=self._t, leader=self._leader, challenger=self._challenger, explore=self.explore_name)
        return d


class PriorBoundsLUCB(MFLUCB):
    """LUCB whose EXPLORE needs the prior bounds of Wang et al. §3.2.2 (EXPLORE-A and EXPLORE-B):
    `mu1_upper` = µ̃1 ≥ µ_1^(M) (best arm's true mean) and `mu2_lower` = µ̃2 ≤ µ_2^(M) (second best's).

    Args:
        mu1_upper: prior upper bound µ̃1 on the best arm's true mean (required).
        mu2_lower: prior lower bound µ̃2 on the second-best arm's true mean (required).
        other arguments: as :class:`MFLUCB`.
    """

    def __init__(
        self,
        n_arms: int,
        ladder: FidelityLadder,
        *,
        mu1_upper: float,
        mu2_lower: float,
        **kwargs: Any,
    ) -> None:
        vals = [check_real("mu1_upper", mu1_upper), check_real("mu2_lower", mu2_lower)]
        if not vals[0] > vals[1]:
            raise ValueError(
                f"mu1_upper = {vals[0]} must be greater than mu2_lower = {vals[1]} (an upper bound on the best "
                "arm's true mean and a lower bound on the second best's)"
            )
        self.mu1_upper, self.mu2_lower = vals
        super().__init__(n_arms, ladder, **kwargs)

    def _explore_config(self) -> dict[str, Any]:
        return {"mu1_upper": self.mu1_upper, "mu2_lower": self.mu2_lower}

    def delta_hat(self, k: int) -> np.ndarray:
        """Online ancillary gaps `Δ̂_k^(m)` (§3.2.2) with the round's leader in place of arm 1."""
        mu = self._sums[k] / np.maximum(self._counts[k], 1)
        if k == self._leader:
            return (mu - self._zeta) - self.mu2_lower
        return self.mu1_upper - (mu + self._zeta)

    @classmethod
    def example_params(cls, instance: Any) -> dict[str, Any]:
        """The instance's true best and second-best means (tight prior bounds)."""
        top = np.sort(np.asarray(instance.true_means, dtype=float))[::-1]
        return {"mu1_upper": float(top[0]), "mu2_lower": float(top[1]) if top.size > 1 else float(top[0]) - 1.0}


class _LUCBLeaves(LeafModel):
    """Eq. 5's `UCB_k = min_m (µ̂_k^(m) + ζ(m) + c/√N_k^(m))` as the kinetic tournament's leaves, with
    `s = c = β(1, t, δ)` the round's radius constant, clipped at the reward bound (`+inf` without
    samples, clipped too). The signature `((µ̂, N, ζ), ...)` holds every input of the exact formula:
    `cells(k)` gives it for arm `k` and `ucb(k, c)` is the policy's exact `UCB_k`."""

    def __init__(
        self,
        cap: float,
        cells: Callable[[int], tuple[tuple[float, int, float], ...]],
        ucb: Callable[[int, float], float],
    ) -> None:
        self.cap = cap
        self.cells = cells
        self.ucb = ucb

    def lines(self, k: int) -> tuple[tuple[tuple[float, float], ...], Any]:
        cells = self.cells(k)
        if not cells:
            return ((math.inf, 0.0),), cells
        return tuple((mu + z, 1.0 / math.sqrt(n)) for mu, n, z in cells), cells

    def exact(self, k: int, s: float) -> float:
        return self.ucb(k, s)
