"""Successive Halving over the fidelity ladder (Jamieson & Talwalkar 2016; Li et al. 2018).

Papers: K. Jamieson, A. Talwalkar, *Non-stochastic Best Arm Identification and Hyperparameter
Optimization*, AISTATS 2016 (Algorithm 1, Successive Halving); L. Li, K. Jamieson, G. DeSalvo,
A. Rostamizadeh, A. Talwalkar, *Hyperband: A Novel Bandit-Based Approach to Hyperparameter
Optimization*, JMLR 18 (2018), Algorithm 1's inner loop:

    for i = 0 .. s:  n_i = ⌊n η^{-i}⌋, r_i = r η^i;  evaluate the survivors with resource r_i;
                     keep the best ⌊n_i / η⌋.

Here the resources `r_i` are the rungs of the fidelity ladder: rung `i` is fidelity
`min_fidelity + i`, up to the highest fidelity, whatever the ratio between consecutive resources (the
ladder, not η, fixes them; choose a geometric ladder such as epochs 1, 3, 9, 27, 81 to match the
paper's `r_i = r η^i`). All `K` arms enter the first rung; after each rung the best
`max(1, ⌊n_i/η⌋)` survive (the `max(1, ·)` keeps one arm when `K < η^{M−1}`); the survivors of the
last rung are evaluated at the highest fidelity and the best is recommended. Each arm is evaluated
`samples_per_rung` times per rung (1 in the papers, whose losses are deterministic; more for noisy
rewards). Ties are broken at random.

SH assumes nothing about ζ and gives no δ-guarantee: it is the heuristic that Optuna's and Ray's
(A)SHA implement, included as the baseline practitioners know. Under the *resumable runs* semantics
(an arm is a training run that advances through rungs) a survivor pays only `λ(m) − λ(m − 1)` per
rung; the simulator accounts for that with `semantics="resumable"`.

Parallel workers: a rung is handed out at once; the next rung waits for all (synchronous SH).

Example:
    >>> from mf_sched import FidelityLadder
    >>> from mf_sched.policies.successive_halving import SuccessiveHalving
    >>> ladder = FidelityLadder(costs=[1, 3, 9], zeta=[0.3, 0.1, 0.0])
    >>> p = SuccessiveHalving(n_arms=9, ladder=ladder, eta=3, seed=0)
    >>> while not p.done:
    ...     pull = p.ask(); p.tell(pull, pull.arm / 10)
    >>> p.recommendation().arm, p.counts.sum(axis=0).tolist()
    (8, [9, 3, 1])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mf_sched._validate import check_int, check_real
from mf_sched.ladder import FidelityLadder
from mf_sched.policy import ArmSumRoundPolicy, Recommendation, RoundPolicy, _state_arms, _state_int, top_k_random
from mf_sched.registry import register


@register
class SuccessiveHalving(ArmSumRoundPolicy):
    """Synchronous Successive Halving over the ladder's rungs.

    Args:
        n_arms: see :class:`~mf_sched.policy.Policy`.
        ladder: see :class:`~mf_sched.policy.Policy`.
        **kwargs: `noise`, `budget`, `seed`; see :class:`~mf_sched.policy.Policy`.
        eta: reduction factor η > 1 (default 3): keep the best `⌊n/η⌋` at each rung.
        samples_per_rung: evaluations of each survivor per rung (default 1).
        min_fidelity: the first rung (default 0, the cheapest fidelity).
    """

    name = "sh"
    paper = "Jamieson & Talwalkar 2016 (AISTATS) Alg. 1; Li et al. 2018 (JMLR) Hyperband inner loop"
    objective = "fixed-budget"
    summary = "Successive Halving over the fidelity ladder (heuristic, no δ-guarantee)"
    _state_attrs = ("_survivors", "_fid", "_rsum", "_winner")
    _variable_shape = RoundPolicy._variable_shape + ("_survivors",)

    def _validate_state(self, sub: dict[str, Any]) -> None:
        super()._validate_state(sub)
        _state_arms(sub, "_survivors", self.n_arms)
        _state_int(sub, "_fid", 0, self.M)  # M: past the top fidelity (finished)

    def __init__(
        self,
        n_arms: int,
        ladder: FidelityLadder,
        *,
        eta: float = 3,
        samples_per_rung: int = 1,
        min_fidelity: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(n_arms, ladder, **kwargs)
        self.eta = check_real("eta", eta, gt=1.0)
        self.samples_per_rung = check_int("samples_per_rung", samples_per_rung, 1)
        self.min_fidelity = ladder.check_index(min_fidelity)
        self._set_config(eta=self.eta, samples_per_rung=self.samples_per_rung, min_fidelity=self.min_fidelity)
        self._rsum = np.zeros(self.n_arms, dtype=float)
        self._winner = -1
        self._init_brackets()
        self._start()

    # --- bracket management (Hyperband overrides these) ---------------------------------------
    def _init_brackets(self) -> None:
        self._survivors = np.arange(self.n_arms, dtype=np.int64)
        self._fid = self.min_fidelity if self.n_arms > 1 else self.ladder.top + 1

    def _bracket_finished(self, best: int) -> bool:
        """A bracket ended with `best`; return True when the policy is finished."""
        self._winner = best
        return True

    # --- rounds -------------------------------------------------------------------------------
    def _next_round(self) -> tuple[np.ndarray, np.ndarray] | None:
        if self._fid > self.ladder.top:
            return None
        arms = np.repeat(self._survivors, self.samples_per_rung)
        return arms, np.full(arms.size, self._fid, dtype=np.int64)

    def _round_complete(self) -> None:
        surv = self._survivors
        mu = self._rsum[surv] / self.samples_per_rung
        self._rsum[surv] = 0.0
        if self._fid == self.ladder.top:
            best = int(surv[top_k_random(mu, 1, self._rng)[0]])
            if self._bracket_finished(best):
                self._fid = self.ladder.top + 1
            return
        keep = max(1, int(math.floor(surv.size / self.eta + 1e-9)))
        self._survivors = np.sort(surv[top_k_random(mu, keep, self._rng)])
        self._fid += 1

    def _recommend(self) -> Recommendation:
        top = self.ladder.top
        n = self._counts[:, top]
        reason = "finished" if self._finished else self._default_reason()
        if self.n_arms == 1:
            return self._answer(0, certified=True)
        if n.any():
            mu = np.where(n > 0, self._sums[:, top] / np.maximum(n, 1), -np.inf)
            best = int(top_k_random(mu, 1, np.random.default_rng(0))[0])
            return self._answer(best, reason=reason, details={"winner_of_last_bracket": self._winner})
        return self._empirical_recommendation(certified=False, reason=reason, arms=self._survivors)

    def _describe(self) -> dict[str, Any]:
        d = super()._describe()
        d.update(rung_fidelity=int(self._fid), n_survivors=int(self._survivors.size))
        return d
