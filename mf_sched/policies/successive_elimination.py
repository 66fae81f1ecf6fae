"""Successive Elimination at a single fidelity (Even-Dar, Mannor, Mansour 2006).

Paper: E. Even-Dar, S. Mannor, Y. Mansour, *Action Elimination and Stopping Conditions for the
Multi-Armed Bandit and Reinforcement Learning Problems*, JMLR 7 (2006), Algorithm "Successive
Elimination" (known-δ version). It is the **SE** baseline of Poiani et al. (2022, §7 and Table 1), whose
released code fixes the constants we use (`riccardopoiani/mf-bai`, `SuccessiveElimination`):

* every round pulls each active arm once at the chosen fidelity (default: the highest, `M`);
* after round `t` every active arm has `t` samples; with `B(t, δ') = √(2σ² log(4t²/δ')/t)`
  (:func:`mf_sched.confidence.anytime_radius`) and `δ' = δ/K`, arm `i` is eliminated when
  `max_j µ̂_j − B ≥ µ̂_i + B` (Even-Dar et al. write `p̂_max − p̂_a ≥ 2α_t` with
  `α_t = √(log(4Kt²/δ)/t)` for [0, 1] rewards; Poiani's sub-Gaussian form is the same rule with the
  Hoeffding constant `σ = 1/2`);
* eliminations within a round are simultaneous (computed from one snapshot);
* it stops when one arm is left and recommends it (δ-correct). Two arms with the same best mean are never
  separated, so it never stops on a tie: give it a `budget` where one is possible (SE has no ε); without one it
  warns after :attr:`~mf_sched.policy.Policy.stall_warning_pulls` pulls
  (:class:`~mf_sched.policy.NotStoppingWarning`).

With a single fidelity this is exactly IISE with `M = 1` and δ/K in place of δ/(KM).

Parallel workers: a round is handed out at once; the next round waits for all its results.
Semantics: *independent pulls* (each pull is a fresh sample). Adopted pulls of an active arm at the
working fidelity fill that arm's slot in the current round; anything else is an extra sample that is
recorded but not used (it would break the equal-count structure the radius relies on).

Example:
    >>> from mf_sched import FidelityLadder
    >>> from mf_sched.policies.successive_elimination import SuccessiveElimination
    >>> se = SuccessiveElimination(n_arms=2, ladder=FidelityLadder([1.0]), delta=0.1, seed=0)
    >>> while not se.done:
    ...     p = se.ask(); se.tell(p, 1.0 if p.arm == 1 else 0.0)
    >>> se.recommendation().arm, se.recommendation().certified
    (1, True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mf_sched._validate import check_delta
from mf_sched.confidence import anytime_radius
from mf_sched.ladder import FidelityLadder
from mf_sched.policy import ArmSumRoundPolicy, Recommendation, active_mask_summary
from mf_sched.registry import register


@register
class SuccessiveElimination(ArmSumRoundPolicy):
    """Successive Elimination (Even-Dar et al. 2006) at one fidelity, with Poiani et al.'s constants.

    Args:
        n_arms: see :class:`~mf_sched.policy.Policy`.
        ladder: see :class:`~mf_sched.policy.Policy`.
        **kwargs: `noise`, `budget`, `seed`; see :class:`~mf_sched.policy.Policy`.
        delta: confidence; the returned arm is the best one with probability ≥ 1 − δ.
        fidelity: the fidelity to sample (default: the highest, where ζ = 0 and the guarantee holds;
            any other fidelity identifies the best arm *of that fidelity*).
    """

    name = "se"
    paper = "Even-Dar, Mannor, Mansour 2006 (JMLR), Successive Elimination; constants of Poiani et al. 2022 §7"
    summary = "Successive elimination at the highest fidelity only (δ-correct baseline)"
    _state_attrs = ("_active", "_rsum", "_t")

    def __init__(
        self,
        n_arms: int,
        ladder: FidelityLadder,
        *,
        delta: float = 0.05,
        fidelity: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(n_arms, ladder, **kwargs)
        self.delta = check_delta(delta)
        self.fidelity = ladder.top if fidelity is None else ladder.check_index(fidelity)
        self._set_config(delta=self.delta, fidelity=fidelity)
        self._active = np.ones(self.n_arms, dtype=bool)
        self._rsum = np.zeros(self.n_arms, dtype=float)
        self._t = 0
        self._start()

    def radius(self, t: int) -> float:
        """`B(t, δ/K)` after `t` rounds.

        Args:
            t: the number of completed rounds (samples per active arm), `≥ 0` (0 gives `+inf`).
        """
        return float(anytime_radius(t, self.delta / self.n_arms, self.sigma))

    def _next_round(self) -> tuple[np.ndarray, np.ndarray] | None:
        idx = np.flatnonzero(self._active)
        if idx.size <= 1:
            return None
        return idx, np.full(idx.size, self.fidelity, dtype=np.int64)

    def _round_complete(self) -> None:
        self._t += 1
        act = self._active
        mu = self._rsum[act] / self._t
        b = self.radius(self._t)
        keep = mu.max() - b < mu + b
        idx = np.flatnonzero(act)
        self._active[idx[~keep]] = False

    def _recommend(self) -> Recommendation:
        idx = np.flatnonzero(self._active)
        if self._finished and idx.size == 1:
            return self._answer(idx[0], certified=True, details={"rounds": self._t})
        return self._empirical_recommendation(certified=False, reason=self._default_reason(), arms=idx, rounds=self._t)

    def _describe(self) -> dict[str, Any]:
        d = super()._describe()
        d.update(active_mask_summary(self._active), t=self._t)
        return d
