"""Elimination for MF-MAB: Wang, Wu, Chen, Lui (2023), Algorithm 3 (regret minimisation).

Paper: X. Wang, Q. Wu, W. Chen, J. C. S. Lui, *Multi-Fidelity Multi-Armed Bandits Revisited*, NeurIPS
2023, §4.2, Algorithm 3; Theorems 4.6/4.8 (App. F.3). Objective: Wang's regret (Eq. 9) under a budget
(capital) Λ, `R(Λ) = (Λ/λ(1)) µ_1 − Σ_{t≤N} µ_{I_t}`: every pull earns its arm's true mean whatever the
fidelity, so the optimal policy pulls the best arm at the *cheapest* fidelity (reported by the simulator
as :attr:`~mf_sched.sim.simulate.RunResult.regret_wang`; Kandasamy et al.'s regret is
`regret_kandasamy`).

Algorithm (`C_0` = all arms, `p = 0`):

```text
while p < log2(2/ε) and |C_p| > 1:
    n_p = ⌈2^{2p} log(Λ / (2^{2p} λ(M)))⌉              # cumulative target of fidelity-M samples
    pull each k ∈ C_p at fidelity M until T_k^(M) = n_p
    C_{p+1} = {k ∈ C_p : µ̂_k + 2^{1−p} > max_{k'∈C_p} µ̂_{k'}}
    p = p + 1
pull the arms of C_p in turn at fidelity 1 until the budget runs out
```

ε defaults to Theorem 4.8's problem-independent choice `ε = (K log Λ / Λ)^{1/3}`, which gives
`E[R(Λ)] = O(K^{1/3} Λ^{2/3} (log Λ)^{1/3})`. Only `λ` is used (ζ plays no role).

Resolutions (Wang et al. 2023, §4.2, Algorithm 3, and Appendix F.3; the paper's text, extracted without most
symbols, was read against the proofs):

* `T_k^(M) = 2^{2p} log(Λ/(2^{2p}λ(M)))` is a **cumulative** count (as in Auer & Ortner 2010; the
  proof's Eq. 28 bounds an arm's fidelity-M pulls by its last phase's target), rounded up and clamped
  at 0 (a phase whose target is already met pulls nothing and goes straight to the elimination test).
  :func:`elimination_schedule` lists the targets.
* The elimination margin is `2^{−p+1}` (twice the phase accuracy 2^{−p}; the signs were lost). The
  comparison is strict, as printed; the empirical leader always survives.
* The loop runs for `p = 0, 1, …` while `p < log2(2/ε)`, i.e. `max(0, ⌈log2(2/ε)⌉)` phases.
* ε: the main text's `(K log Λ/Λ)^{1/3}` (`eps="theorem"`, the default) depends on the unit of cost
  (it needs `Λ > 1`); App. F.3's optimiser, which we reconstruct with `µ_1 ≤ 1`, is
  `(16 K λ(M) log(Λ/(16λ(M))) / Λ)^{1/3}` (`eps="appendix"`, cost-scale invariant, our reading of a
  garbled formula); or pass a number.
* The budget may run out during exploration: the policy then stops, as the paper's "until the budget
  runs up" implies. Every pull, exploration included, consumes budget.
* Means use every fidelity-M sample of the arm (adopted ones included).
* Rewards: the paper assumes [0, 1] (Hoeffding). For σ-sub-Gaussian rewards (our extension) the
  targets are multiplied by `(2σ)²` so that the phase accuracy 2^{−p} keeps its confidence; σ = ½
  (rewards in [0, 1], the default noise model) is the paper exactly.
* Recommendation (the paper's objective is regret): the single survivor once exploration ends, else the
  best fidelity-M mean among the survivors.

Parallel workers: a phase's pulls are handed out at once and the elimination waits for all of them (a
barrier); exploitation is handed out in chunks of round-robin pulls (they need no feedback). Pulls that
fail are given back and handed out again.

Example:
    >>> from mf_sched import FidelityLadder, Instance, run_policy
    >>> inst = Instance([[0.5, 0.9], [0.5, 0.5], [0.5, 0.4]], FidelityLadder([1.0, 5.0], [0.4, 0.0]),
    ...                 {"kind": "bernoulli"})
    >>> p = MFElimination(n_arms=3, ladder=inst.ladder, budget=20_000, seed=0)
    >>> r = run_policy(p, inst, workers=None, completion="batch", seed=0)
    >>> p.recommendation().arm, p.counts[0].tolist()[0] > 10 * p.counts[0].tolist()[1]
    (0, True)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mf_sched._validate import check_real
from mf_sched.ladder import FidelityLadder
from mf_sched.policy import Recommendation, RoundPolicy, active_mask_summary
from mf_sched.registry import register

__all__ = ["MFElimination", "elimination_schedule", "default_eps"]

#: exploitation is handed out in chunks of about this many round-robin pulls
_EXPLOIT_CHUNK = 2048


def default_eps(n_arms: int, budget: float, cost_top: float, rule: str = "theorem") -> float:
    """ε of Wang et al. (2023): `"theorem"` = Theorem 4.8's `(K log Λ / Λ)^{1/3}`; `"appendix"` = App.
    F.3's `(16 K λ(M) log(Λ/(16λ(M))) / Λ)^{1/3}` (with `µ_1 ≤ 1`).

    Args:
        n_arms: the number of arms `K`.
        budget: the capital `Λ` (> 1 for `"theorem"`, > `16 λ(M)` for `"appendix"`).
        cost_top: the cost `λ(M)` of the highest fidelity (read by `"appendix"` only).
        rule: `"theorem"` (default) or `"appendix"`.

    >>> round(default_eps(10, 1e5, 10.0), 6)
    0.104808
    """
    if rule == "theorem":
        if not budget > 1:
            raise ValueError(f"budget = {budget} is out of range for eps='theorem'; accepted: > 1 (log Λ > 0)")
        return (n_arms * math.log(budget) / budget) ** (1.0 / 3.0)
    if rule == "appendix":
        x = budget / (16.0 * cost_top)
        if not x > 1:
            raise ValueError(
                f"budget = {budget} is out of range for eps='appendix'; accepted: > 16 λ(M) = {16 * cost_top}"
            )
        return (n_arms * math.log(x) / x) ** (1.0 / 3.0)
    raise ValueError(f"eps rule {rule!r} is unknown; accepted: 'theorem', 'appendix', or a number > 0")


def n_phases(eps: float) -> int:
    """Number of exploration phases: the integers `p ≥ 0` with `p < log2(2/ε)`.

    Args:
        eps: the accuracy `ε > 0`.

    >>> n_phases(0.25), n_phases(0.2), n_phases(2.0)
    (3, 4, 0)
    """
    x = math.log2(2.0 / eps)
    return max(0, math.ceil(x - 1e-12))


def elimination_schedule(budget: float, cost_top: float, eps: float, sigma: float = 0.5) -> list[int]:
    """Cumulative fidelity-M targets `n_p = ⌈(2σ)² 2^{2p} log(Λ / (2^{2p} λ(M)))⌉` (≥ 0) of every phase.

    `σ = ½` (rewards in [0, 1]) is Algorithm 3 exactly. With `Λ = 10⁴`, `λ(M) = 10`, `ε = 0.1`:

    Args:
        budget: the capital `Λ`, > 0.
        cost_top: the cost `λ(M)` of the highest fidelity, > 0.
        eps: the accuracy `ε > 0`; it sets the number of phases (:func:`n_phases`).
        sigma: the sub-Gaussian scale `σ` of the rewards; the default `½` (rewards in `[0, 1]`) is the paper's.

    >>> elimination_schedule(1e4, 10.0, 0.1)
    [7, 23, 67, 176, 349]
    """
    out = []
    for p in range(n_phases(eps)):
        q = 4.0**p
        x = budget / (q * cost_top)
        out.append(max(0, math.ceil((2.0 * sigma) ** 2 * q * math.log(x))) if x > 0 else 0)
    return out


@register
class MFElimination(RoundPolicy):
    """Elimination for MF-MAB (Wang et al. 2023, Algorithm 3): explore at fidelity M in phases,
    eliminate, exploit the survivors at fidelity 1.

    Args:
        n_arms: see :class:`~mf_sched.policy.Policy`.
        ladder: see :class:`~mf_sched.policy.Policy`.
        **kwargs: `noise`, `seed`, `budget` (the capital Λ (required: the phase lengths and ε depend on it)); see
            :class:`~mf_sched.policy.Policy`.
        eps: ε > 0, or `"theorem"` (default, Theorem 4.8) / `"appendix"` (App. F.3), see
            :func:`default_eps`.
    """

    name = "mf-mab-elimination"
    paper = "Wang, Wu, Chen, Lui 2023 (NeurIPS), Multi-Fidelity Multi-Armed Bandits Revisited, Algorithm 3"
    objective = "regret"
    summary = "Elimination: explore at fidelity M in phases, exploit the survivors at fidelity 1 (Wang's regret)"
    _state_attrs = ("_active", "_phase", "_phase_open", "_exploiting", "_rr", "_log")

    def __init__(
        self,
        n_arms: int,
        ladder: FidelityLadder,
        *,
        eps: float | str = "theorem",
        **kwargs: Any,
    ) -> None:
        super().__init__(n_arms, ladder, **kwargs)
        if self.budget is None:
            raise ValueError("mf-mab-elimination needs the budget Λ (a finite number > 0): its phases depend on it")
        if isinstance(eps, str):
            value = default_eps(self.n_arms, self.budget, float(self._costs[-1]), eps)
        else:
            value = check_real("eps", eps, gt=0.0, accepted="a finite number > 0, 'theorem' or 'appendix'")
        self.eps = value
        self._set_config(eps=eps if isinstance(eps, str) else value)
        self.targets = elimination_schedule(self.budget, float(self._costs[-1]), value, self.sigma)
        self._active = np.ones(self.n_arms, dtype=bool)
        self._phase = 0
        self._phase_open = False
        self._exploiting = False
        self._rr = 0
        self._log: list[list[int]] = []  # [phase, target, survivors after its elimination]
        self._start()

    # ----------------------------------------------------------------------------- phases
    def _eliminate(self) -> None:
        p = self._phase
        top = self.M - 1
        idx = np.flatnonzero(self._active)
        n = self._counts[idx, top]
        has = n > 0
        if has.any():  # arms without a sample cannot be judged (only if a target was 0): they stay
            mu = self._sums[idx[has], top] / n[has]
            drop = idx[has][~(mu + 2.0 ** (1 - p) > mu.max())]
            self._active[drop] = False
        self._log.append([p, self.targets[p], int(self._active.sum())])
        self._phase = p + 1
        self._phase_open = False

    def _next_round(self) -> tuple[np.ndarray, np.ndarray] | None:
        top = self.M - 1
        while not self._exploiting:
            if self._phase_open:
                self._eliminate()
            idx = np.flatnonzero(self._active)
            if self._phase >= len(self.targets) or idx.size <= 1:
                self._exploiting = True
                break
            need = np.maximum(0, self.targets[self._phase] - self._counts[idx, top])
            self._phase_open = True
            if need.sum() > 0:
                # The targets grow as σ²·4^p·log Λ and can exceed what Λ pays for by orders of magnitude (a
                # large σ or Λ): issue only the pulls the budget affords and two more (the count is rounded
                # down), which the budget then refuses, so the policy stops exactly where the whole phase would
                # have stopped it, without materialising a phase that could never be paid for.
                need = np.diff(np.minimum(np.cumsum(need), self._pulls_affordable(top) + 2), prepend=0)
                return np.repeat(idx, need), np.full(int(need.sum()), top, dtype=np.int64)
        idx = np.flatnonzero(self._active)
        afford = self._pulls_affordable(0)
        chunk = idx.size * max(1, _EXPLOIT_CHUNK // idx.size)
        size = max(1, min(afford, chunk))  # an unaffordable single pull lets the budget stop the policy
        arms = idx[(self._rr + np.arange(size)) % idx.size]
        self._rr = int((self._rr + size) % idx.size)
        return arms, np.zeros(size, dtype=np.int64)

    def _pulls_affordable(self, fidelity: int) -> int:
        """How many pulls at `fidelity` the budget left (after the outstanding pulls) still pays for."""
        assert self.budget is not None
        left = self.budget - self._cost - self._outstanding_cost
        return int(math.floor(left / self._costs[fidelity] * (1 + 1e-12))) if left > 0 else 0

    def _observe_round(self, arms: np.ndarray, fidelities: np.ndarray, values: np.ndarray) -> None:
        """Nothing to accumulate: the elimination reads the shared fidelity-M statistics."""

    def _observe_round_one(self, arm: int, fidelity: int, value: float) -> None:
        pass

    # ----------------------------------------------------------------------------- answers
    @property
    def active(self) -> np.ndarray:
        """Indices of the surviving arms `C_p`."""
        return np.flatnonzero(self._active)

    @property
    def exploiting(self) -> bool:
        """True once exploration is over (the survivors are pulled in turn at fidelity 1)."""
        return self._exploiting

    @property
    def phase_log(self) -> list[tuple[int, int, int]]:
        """`(p, n_p, survivors after phase p's elimination)` for every completed phase."""
        return [tuple(x) for x in self._log]  # type: ignore[misc]

    def _recommend(self) -> Recommendation:
        idx = np.flatnonzero(self._active)
        details = {"phase": self._phase, "n_active": int(idx.size), "exploiting": self._exploiting, "eps": self.eps}
        if self._exploiting and idx.size == 1:
            return self._answer(idx[0], details=details)
        return self._empirical_recommendation(certified=False, reason=self._default_reason(), arms=idx, **details)

    def _describe(self) -> dict[str, Any]:
        d = super()._describe()
        d.update(active_mask_summary(self._active), phase=self._phase, exploiting=self._exploiting, eps=self.eps)
        return d
