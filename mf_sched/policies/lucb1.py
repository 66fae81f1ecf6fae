"""LUCB1 at a single fidelity (Kalyanakrishnan, Tewari, Auer, Stone 2012).

Paper: S. Kalyanakrishnan, A. Tewari, P. Auer, P. Stone, *PAC Subset Selection in Stochastic
Multi-armed Bandits*, ICML 2012, Algorithm LUCB with the confidence bound of LUCB1 (§3, Theorem 6),
for m = 1 (best-arm identification):

* sample every arm once (round ``t = 1``);
* each round ``t``: ``h_t = argmax_a µ̂_a`` (empirical best), ``l_t = argmax_{a ≠ h_t} UCB_a`` with
  ``UCB_a = µ̂_a + β(u_a, t)``, ``LCB_a = µ̂_a − β(u_a, t)``;
* stop when ``UCB_{l_t} − LCB_{h_t} < ε`` (``ε = 0``: the intervals separate) and return ``h_t``;
* else sample ``h_t`` and ``l_t`` and go on.

Radius: ``β(u, t) = √(log(k₁ K t⁴/δ)/(2u))`` with ``k₁ = 5/4`` for [0, 1] rewards, generalised to
σ-sub-Gaussian rewards as ``σ √(2 log(k₁ K t⁴/δ)/u)`` (:func:`mf_sched.confidence.lucb1_beta`). ``t``
counts rounds, the initial sweep being round 1 (the paper's convention). Ties are broken at random.
With ``ε > 0`` the answer is ε-optimal with probability ≥ 1 − δ.

Parallel workers: the two pulls of a round are handed out together; the next round waits for both.
Every sample of an arm at the working fidelity (adopted extras included) enters its estimate.

Example:
    >>> from mf_sched import FidelityLadder
    >>> from mf_sched.policies.lucb1 import LUCB1
    >>> p = LUCB1(n_arms=3, ladder=FidelityLadder([1.0]), delta=0.1, seed=0)
    >>> while not p.done:
    ...     pull = p.ask(); p.tell(pull, [0.1, 0.9, 0.2][pull.arm])
    >>> p.recommendation().arm
    1
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mf_sched.confidence import lucb1_beta
from mf_sched.ladder import FidelityLadder
from mf_sched.policy import Recommendation, RoundPolicy, argmax_random, check_delta
from mf_sched.registry import register


@register
class LUCB1(RoundPolicy):
    """LUCB1 (Kalyanakrishnan et al. 2012) at one fidelity.

    Args:
        n_arms, ladder, noise, budget, seed: see :class:`~mf_sched.policy.Policy`.
        delta: confidence; the answer is (ε-)optimal with probability ≥ 1 − δ.
        epsilon: tolerance ε ≥ 0 (0: exact best arm).
        fidelity: fidelity to sample (default: the highest).
    """

    name = "lucb1"
    paper = "Kalyanakrishnan, Tewari, Auer, Stone 2012 (ICML), LUCB1"
    objective = "best-arm"
    summary = "LUCB1 at the highest fidelity only (δ-correct baseline)"
    sample_agnostic = True
    _state_attrs = ("_t", "_identified")

    def __init__(
        self,
        n_arms: int,
        ladder: FidelityLadder,
        *,
        delta: float = 0.05,
        epsilon: float = 0.0,
        fidelity: int | None = None,
        noise: Any = None,
        budget: float | None = None,
        seed: int | None = None,
    ) -> None:
        super().__init__(n_arms, ladder, noise=noise, budget=budget, seed=seed)
        self.delta = check_delta(delta)
        epsilon = float(epsilon)
        if not (epsilon >= 0 and np.isfinite(epsilon)):
            raise ValueError(f"epsilon = {epsilon} is out of range; accepted: a finite number >= 0")
        self.epsilon = epsilon
        self.fidelity = ladder.top if fidelity is None else ladder._check_index(fidelity)
        self._set_config(delta=self.delta, epsilon=epsilon, fidelity=fidelity)
        self._t = 0
        self._identified = -1
        self._start()

    def _bounds(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = self._counts[:, self.fidelity]
        mu = self._sums[:, self.fidelity] / np.maximum(n, 1)
        beta = lucb1_beta(n, self._t, self.delta, self.n_arms, self.sigma)
        return mu, mu - beta, mu + beta

    def _next_round(self) -> tuple[np.ndarray, np.ndarray] | None:
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
        l = argmax_random(u, self._rng)
        if ucb[l] - lcb[h] < self.epsilon:
            self._identified = h
            return None
        return np.array([h, l]), np.full(2, self.fidelity, dtype=np.int64)

    def _observe_round(self, arms: np.ndarray, fidelities: np.ndarray, values: np.ndarray) -> None:
        pass  # estimates come from the shared per-(arm, fidelity) statistics

    def _observe_round_one(self, arm: int, fidelity: int, value: float) -> None:
        pass

    def _round_complete(self) -> None:
        self._t += 1

    def _recommend(self) -> Recommendation:
        if self._identified >= 0:
            return Recommendation(
                arm=self._identified,
                certified=True,
                reason="identified",
                cost=self.cost,
                n_pulls=self.n_pulls,
                delta=self.delta,
                details={"rounds": self._t},
            )
        return self._empirical_recommendation(certified=False, reason=self._default_reason(), rounds=self._t)
