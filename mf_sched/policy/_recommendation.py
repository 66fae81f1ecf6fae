"""What a policy answers: the :class:`Recommendation`, the one builder of it, and the default choice of arm.

Every policy answers through its `_answer` method (:class:`~mf_sched.policy.Policy`), which fills in the policy's
cost, pull count and confidence and calls :func:`make_recommendation`; a policy without a rule of its own
recommends :func:`empirical_best`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Recommendation", "empirical_best", "make_recommendation"]


@dataclass(frozen=True)
class Recommendation:
    """What a policy answers.

    Attributes:
        arm: the recommended arm, or `None` when there is nothing to recommend (no data yet, or an
            infeasible constrained problem).
        certified: `True` only when the policy's stopping rule fired, i.e. the answer carries the
            policy's guarantee (e.g. correct with probability `≥ 1 − δ`).
        reason: why the policy stands where it is: `"identified"` (stopping rule fired),
            `"budget"` (cost cap reached), `"finished"` (a fixed schedule ended), `"exhausted"`,
            `"infeasible"`, or `"in-progress"`.
        cost: cost spent on told pulls (independent-pulls accounting).
        n_pulls: number of told pulls (extras included).
        delta: the confidence parameter, for δ-correct policies.
        mixture: for mixture-valued policies (SFSR), the recommended mixture object.
        details: policy-specific extras (JSON-safe).
    """

    arm: int | None
    certified: bool
    reason: str
    cost: float
    n_pulls: int
    delta: float | None = None
    mixture: Any = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The answer as a JSON-safe mapping with one key per attribute (`details` copied into a plain `dict`; a
        mixture with a `to_dict` method saved through it), e.g. for a study attribute or a results file.

        >>> Recommendation(arm=2, certified=False, reason="budget", cost=30.0, n_pulls=12).to_dict()["reason"]
        'budget'
        """
        mix = self.mixture
        if mix is not None and hasattr(mix, "to_dict"):
            mix = mix.to_dict()
        return {
            "arm": self.arm,
            "certified": self.certified,
            "reason": self.reason,
            "cost": self.cost,
            "n_pulls": self.n_pulls,
            "delta": self.delta,
            "mixture": mix,
            "details": dict(self.details),
        }


def make_recommendation(
    arm: Any,
    *,
    certified: bool,
    reason: str,
    cost: float,
    n_pulls: int,
    delta: Any = None,
    mixture: Any = None,
    details: Mapping[str, Any] | None = None,
) -> Recommendation:
    """The :class:`Recommendation` with its fields in canonical types: the one builder every answer goes through.

    Args:
        arm: the recommended arm (any integer, NumPy integers included; stored as an `int`), or `None` for no
            answer yet.
        certified: whether the stopping rule fired (stored as a `bool`).
        reason: why the policy stands where it is (see :attr:`Recommendation.reason`).
        cost: cost spent on told pulls, in units of λ.
        n_pulls: number of told pulls, extras included.
        delta: the policy's confidence parameter; kept only when it is a `float` (a δ-correct policy's checked
            `delta`), anything else (`None`, a policy without δ) gives `None`.
        mixture: the recommended mixture (mixture-valued policies), or `None`.
        details: policy-specific extras (JSON-safe); `None` gives an empty mapping.

    >>> import numpy as np
    >>> rec = make_recommendation(np.int64(3), certified=1, reason="identified", cost=12.0, n_pulls=4, delta=0.05)
    >>> (type(rec.arm), rec.certified, rec.delta, rec.details)
    (<class 'int'>, True, 0.05, {})
    """
    return Recommendation(
        arm=None if arm is None else int(arm),
        certified=bool(certified),
        reason=reason,
        cost=cost,
        n_pulls=n_pulls,
        delta=delta if isinstance(delta, float) else None,
        mixture=mixture,
        details={} if details is None else details,
    )


def empirical_best(counts: np.ndarray, sums: np.ndarray, arms: Any = None) -> int | None:
    """The arm with the best empirical mean at the highest fidelity where any of `arms` has data.

    The default answer of a policy without a rule of its own (the default `_recommend` of
    :class:`~mf_sched.policy.Policy`): only the arms with data at that fidelity compete; ties go to the lowest arm
    index.

    Args:
        counts: told pulls per (arm, fidelity), shape `(K, M)`.
        sums: sums of the told rewards per (arm, fidelity), shape `(K, M)`.
        arms: the candidate arms (indices into the rows); `None` for all `K`.

    Returns:
        The best candidate, or `None` when no candidate has data (unless there is only one candidate: that one).

    >>> counts = np.array([[2, 1], [3, 0], [1, 0]])
    >>> sums = np.array([[1.0, 0.4], [2.7, 0.0], [0.95, 0.0]])
    >>> empirical_best(counts, sums), empirical_best(counts, sums, arms=[1, 2])
    (0, 2)
    """
    candidates = np.arange(counts.shape[0]) if arms is None else np.asarray(arms, dtype=np.int64)
    if candidates.size:
        cnt = counts[candidates]
        has = cnt > 0
        if has.any():
            m = int(np.flatnonzero(has.any(axis=0))[-1])
            sub = cnt[:, m] > 0
            mu = sums[candidates[sub], m] / cnt[sub, m]
            return int(candidates[sub][int(np.argmax(mu))])
        if candidates.size == 1:
            return int(candidates[0])
    return None
