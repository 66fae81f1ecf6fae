"""Uniform allocation: round-robin over all arms at one fidelity.

The "uniform sampling" baseline of best-arm identification (e.g. Bubeck, Munos, Stoltz 2009, *Pure
Exploration in Multi-armed Bandits Problems*, ALT — the uniform allocation strategy; also USLP's
sampling rule in Tang et al. 2024). Every round pulls every arm once at the chosen fidelity (default:
the highest); it recommends the best empirical mean. It stops:

* with `delta`: when the empirical best is separated from every other arm by the anytime radius
  used for successive elimination, `µ̂_best − B ≥ max_{i≠best} µ̂_i + B` with
  `B = B(t, δ/K)` (:func:`mf_sched.confidence.anytime_radius`; the same event that makes SE
  δ-correct, so the answer is correct with probability ≥ 1 − δ) — a certified answer;
* after `rounds` rounds (a fixed schedule), or when the `budget` is spent — uncertified.

At least one of `delta`, `rounds` or `budget` is required so that it ends.

Parallel workers: a round (K pulls) is handed out at once. Semantics: independent pulls.

Example:
    >>> from mf_sched import FidelityLadder
    >>> from mf_sched.policies.uniform import Uniform
    >>> p = Uniform(n_arms=3, ladder=FidelityLadder([1.0, 4.0], [0.1, 0.0]), rounds=2, seed=0)
    >>> while not p.done:
    ...     pull = p.ask(); p.tell(pull, [0.3, 0.6, 0.1][pull.arm])
    >>> p.recommendation().arm, p.cost
    (1, 24.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mf_sched._validate import check_delta, check_int
from mf_sched.confidence import anytime_radius
from mf_sched.ladder import FidelityLadder
from mf_sched.policy import ArmSumRoundPolicy, Recommendation, argmax_random
from mf_sched.registry import register


@register
class Uniform(ArmSumRoundPolicy):
    """Uniform allocation at one fidelity, with an optional δ-stopping rule.

    Args:
        n_arms: see :class:`~mf_sched.policy.Policy`.
        ladder: see :class:`~mf_sched.policy.Policy`.
        **kwargs: `noise`, `budget`, `seed`; see :class:`~mf_sched.policy.Policy`.
        delta: if given, stop as soon as the best arm is certified at confidence 1 − δ.
        rounds: if given, stop after this many rounds (`rounds × K` pulls).
        fidelity: fidelity to sample (default: the highest).
    """

    name = "uniform"
    paper = "Bubeck, Munos, Stoltz 2009 (ALT), uniform allocation; anytime radius of Poiani et al. 2022"
    summary = "Round-robin over all arms at the highest fidelity (fixed budget or δ-stopping)"
    _state_attrs = ("_rsum", "_t", "_identified")

    def __init__(
        self,
        n_arms: int,
        ladder: FidelityLadder,
        *,
        delta: float | None = None,
        rounds: int | None = None,
        fidelity: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(n_arms, ladder, **kwargs)
        self.delta = None if delta is None else check_delta(delta)
        rounds = check_int("rounds", rounds, 1, none_ok=True)
        if self.delta is None and rounds is None and self.budget is None:
            raise ValueError("uniform needs a way to stop: give delta, rounds or budget")
        self.rounds = rounds
        self.fidelity = ladder.top if fidelity is None else ladder.check_index(fidelity)
        self._set_config(delta=self.delta, rounds=rounds, fidelity=fidelity)
        self._rsum = np.zeros(self.n_arms, dtype=float)
        self._t = 0
        self._identified = -1
        self._start()

    def _next_round(self) -> tuple[np.ndarray, np.ndarray] | None:
        if self.n_arms == 1:
            self._identified = 0
            return None
        if self._t > 0 and self.delta is not None:
            mu = self._rsum / self._t
            b = float(anytime_radius(self._t, self.delta / self.n_arms, self.sigma))
            best = argmax_random(mu, self._rng)
            others = np.delete(mu, best)
            if mu[best] - b >= others.max() + b:
                self._identified = best
                return None
        if self.rounds is not None and self._t >= self.rounds:
            return None
        return np.arange(self.n_arms), np.full(self.n_arms, self.fidelity, dtype=np.int64)

    def _round_complete(self) -> None:
        self._t += 1

    @property
    def open_ended(self) -> bool:
        return self.rounds is None and super().open_ended  # a fixed schedule ends by itself

    def _recommend(self) -> Recommendation:
        if self._identified >= 0:
            return self._answer(self._identified, certified=True, details={"rounds": self._t})
        reason = "finished" if self._finished else self._default_reason()
        if self._t == 0:
            return self._empirical_recommendation(certified=False, reason=reason, rounds=0)
        best = argmax_random(self._rsum / self._t, np.random.default_rng(self._t))
        return self._answer(best, reason=reason, details={"rounds": self._t})
