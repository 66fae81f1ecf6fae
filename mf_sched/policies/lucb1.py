"""LUCB1 at a single fidelity (Kalyanakrishnan, Tewari, Auer, Stone 2012).

Paper: S. Kalyanakrishnan, A. Tewari, P. Auer, P. Stone, *PAC Subset Selection in Stochastic
Multi-armed Bandits*, ICML 2012, Algorithm LUCB with the confidence bound of LUCB1 (§3, Theorem 6),
for m = 1 (best-arm identification):

* sample every arm once (round `t = 1`);
* each round `t`: `h_t = argmax_a µ̂_a` (empirical best), `l_t = argmax_{a ≠ h_t} UCB_a` with
  `UCB_a = µ̂_a + β(u_a, t)`, `LCB_a = µ̂_a − β(u_a, t)`;
* stop when `UCB_{l_t} − LCB_{h_t} < ε` (`ε = 0`: the intervals separate) and return `h_t`;
* else sample `h_t` and `l_t` and go on.

Radius: `β(u, t) = √(log(k₁ K t⁴/δ)/(2u))` with `k₁ = 5/4` for [0, 1] rewards, generalised to
σ-sub-Gaussian rewards as `σ √(2 log(k₁ K t⁴/δ)/u)` (:func:`mf_sched.confidence.lucb1_beta`). `t`
counts rounds, the initial sweep being round 1 (the paper's convention). Ties are broken at random.
With `ε > 0` the answer is ε-optimal with probability ≥ 1 − δ.

Parallel workers: the two pulls of a round are handed out together; the next round waits for both.

Cost per round: the empirical means and the UCBs sit in two kinetic tournaments (:mod:`mf_sched._kinetic`),
O(log K) per sampled arm; `h_t`, `l_t` and their ties are exactly those of the vectorised bounds.
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

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from mf_sched._kinetic import KineticMax, LeafModel
from mf_sched._validate import check_delta, check_real
from mf_sched.confidence import lucb1_beta, lucb1_beta_numerator
from mf_sched.ladder import FidelityLadder
from mf_sched.policy import Recommendation, RoundPolicy
from mf_sched.registry import register


@register
class LUCB1(RoundPolicy):
    """LUCB1 (Kalyanakrishnan et al. 2012) at one fidelity.

    Args:
        n_arms: see :class:`~mf_sched.policy.Policy`.
        ladder: see :class:`~mf_sched.policy.Policy`.
        **kwargs: `noise`, `budget`, `seed`; see :class:`~mf_sched.policy.Policy`.
        delta: confidence; the answer is (ε-)optimal with probability ≥ 1 − δ.
        epsilon: tolerance ε ≥ 0 (0: exact best arm).
        fidelity: fidelity to sample (default: the highest).
    """

    name = "lucb1"
    paper = "Kalyanakrishnan, Tewari, Auer, Stone 2012 (ICML), LUCB1"
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
        **kwargs: Any,
    ) -> None:
        super().__init__(n_arms, ladder, **kwargs)
        self.delta = check_delta(delta)
        self.epsilon = epsilon = check_real("epsilon", epsilon, ge=0.0)
        self.fidelity = ladder.top if fidelity is None else ladder.check_index(fidelity)
        self._set_config(delta=self.delta, epsilon=epsilon, fidelity=fidelity)
        self._t = 0
        self._identified = -1
        self._after_load()
        self._start()

    def _after_load(self) -> None:
        # kinetic tournaments (mf_sched._kinetic) over the empirical means and over the UCBs
        self._num = float(lucb1_beta_numerator(max(self._t, 1), self.delta, self.n_arms, self.sigma))
        self._mu_tree = KineticMax(self.n_arms, _MeanLeaves(self._mu_n))
        self._ucb_leaves = _UCBLeaves(self._mu_n, self._num)
        self._ucb_tree = KineticMax(self.n_arms, self._ucb_leaves, s=math.sqrt(self._num))

    def _mu_n(self, k: int) -> tuple[float, int]:
        n = int(self._counts[k, self.fidelity])
        return float(self._sums[k, self.fidelity]) / max(n, 1), n

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
        # h = argmax µ̂ and l = argmax_{a≠h} UCB_a (ties uniformly at random, in arm order), exactly as
        # argmax_random over the vectors of _bounds(), from the two kinetic tournaments
        num = float(lucb1_beta_numerator(self._t, self.delta, self.n_arms, self.sigma))
        self._num = self._ucb_leaves.num = num
        count, h = self._mu_tree.top()
        if count > 1:
            h = self._mu_tree.select(int(self._rng.integers(count)))
        tree = self._ucb_tree
        tree.set_s(math.sqrt(num))
        count, l = tree.top_excluding(h)
        if count > 1:
            l = tree.select_excluding(h, int(self._rng.integers(count)))
        mu_h, n_h = self._mu_n(h)
        mu_l, n_l = self._mu_n(l)
        ucb_l = mu_l + math.sqrt(num / n_l) if n_l else math.inf
        lcb_h = mu_h - math.sqrt(num / n_h) if n_h else -math.inf
        if ucb_l - lcb_h < self.epsilon:
            self._identified = h
            return None
        return np.array([h, l]), np.full(2, self.fidelity, dtype=np.int64)

    def _observe_round(self, arms: np.ndarray, fidelities: np.ndarray, values: np.ndarray) -> None:
        # estimates come from the shared per-(arm, fidelity) statistics
        for k, f in set(zip(arms.tolist(), fidelities.tolist())):
            self._observe_round_one(k, f, 0.0)

    def _observe_round_one(self, arm: int, fidelity: int, value: float) -> None:
        if fidelity == self.fidelity:
            self._mu_tree.update(arm)
            self._ucb_tree.update(arm)

    def _observe_extra(self, arm: int, fidelity: int, value: float) -> None:
        self._observe_round_one(arm, fidelity, value)  # an adopted sample enters the shared statistics

    def _round_complete(self) -> None:
        self._t += 1

    def _recommend(self) -> Recommendation:
        if self._identified >= 0:
            return self._answer(self._identified, certified=True, details={"rounds": self._t})
        return self._empirical_recommendation(certified=False, reason=self._default_reason(), rounds=self._t)


class _MeanLeaves(LeafModel):
    """The empirical means at the working fidelity (constants) as kinetic-tournament leaves; `mu_n(k)`
    gives arm `k`'s `(µ̂, n)`."""

    def __init__(self, mu_n: Callable[[int], tuple[float, int]]) -> None:
        self.mu_n = mu_n

    def lines(self, k: int) -> tuple[tuple[tuple[float, float], ...], Any]:
        mu = self.mu_n(k)[0]
        return ((mu, 0.0),), mu

    def exact(self, k: int, s: float) -> float:
        return self.mu_n(k)[0]


class _UCBLeaves(LeafModel):
    """`UCB_a = µ̂_a + √(num/u_a)` as kinetic-tournament leaves in `s = √num` (`+inf` at `u = 0`);
    `mu_n(k)` gives arm `k`'s `(µ̂, n)` and the policy keeps :attr:`num` (the round's β numerator) current."""

    def __init__(self, mu_n: Callable[[int], tuple[float, int]], num: float) -> None:
        self.mu_n = mu_n
        self.num = num

    def lines(self, k: int) -> tuple[tuple[tuple[float, float], ...], Any]:
        mu, n = self.mu_n(k)
        if n == 0:
            return ((math.inf, 0.0),), None
        return ((mu, 1.0 / math.sqrt(n)),), (mu, n)

    def exact(self, k: int, s: float) -> float:
        mu, n = self.mu_n(k)
        return mu + math.sqrt(self.num / n) if n else math.inf  # the arithmetic of lucb1_beta
