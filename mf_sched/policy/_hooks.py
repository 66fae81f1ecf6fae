"""The interface a policy implements: the hooks :class:`~mf_sched.policy.Policy` calls, the helpers that build its
answer, and the constructor signature a subclass shows.

Writing a policy (see :mod:`mf_sched.policy`): implement `_propose`, `_observe` and `_is_done` (and, as needed,
`_on_issue`, `_on_give_back`, `_claim`, `_observe_extra`, the batch variants, `_recommend`, `_describe`); answer
with `_answer` (or `_empirical_recommendation`); end the constructor's arguments in `**kwargs` passed on to the
base, whose arguments :func:`inherit_base_arguments` then adds to the subclass's signature.
"""

from __future__ import annotations

import abc
import inspect
import typing
from collections.abc import Mapping
from typing import Any

import numpy as np

from mf_sched.policy._recommendation import Recommendation, empirical_best, make_recommendation

__all__ = ["PolicyHooks", "inherit_base_arguments"]


def inherit_base_arguments(cls: type) -> None:
    """Give `cls.__init__` the signature it accepts when it ends in `**kwargs` passed to the base's.

    A subclass constructor `__init__(self, n_arms, ladder, *, own=..., **kwargs)` that forwards
    `**kwargs` to `super().__init__` accepts every keyword argument of the base constructor too. This
    sets its `__signature__` (what :func:`inspect.signature` reports) to its own arguments followed by
    the base's keyword arguments it does not list itself, and adds the base's (resolved) annotations, so
    that :func:`mf_sched.registry.build_policy`, the CLI and `help()` see the full list. A constructor
    without `**kwargs` is left alone. :class:`~mf_sched.policy.Policy` calls this for every subclass.

    Args:
        cls: the class just defined (a subclass of :class:`~mf_sched.policy.Policy`); its `__init__` is updated
            in place.

    >>> from typing import Any
    >>> from mf_sched import FidelityLadder
    >>> from mf_sched.policy import RoundPolicy
    >>> class _Demo(RoundPolicy):
    ...     def __init__(self, n_arms: int, ladder: FidelityLadder, *, width: int = 1, **kwargs: Any) -> None:
    ...         super().__init__(n_arms, ladder, **kwargs)
    >>> list(inspect.signature(_Demo.__init__).parameters)
    ['self', 'n_arms', 'ladder', 'width', 'noise', 'budget', 'seed']
    """
    init = cls.__dict__.get("__init__")
    if not inspect.isfunction(init):
        return
    sig = inspect.signature(init)
    own = list(sig.parameters.values())
    if not own or own[-1].kind is not inspect.Parameter.VAR_KEYWORD:
        return
    base_init = super(cls, cls).__init__  # type: ignore[misc]
    base = inspect.signature(base_init).parameters.values()
    names = {p.name for p in own}
    keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    inherited = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in base if p.kind in keyword and p.name not in names
    ]
    rest = [p for p in base if p.kind is inspect.Parameter.VAR_KEYWORD]  # the base forwards more still
    init.__signature__ = sig.replace(parameters=own[:-1] + inherited + rest)  # type: ignore[attr-defined]
    try:
        hints = typing.get_type_hints(base_init)
    except Exception:  # pragma: no cover - an unresolvable annotation: the signature alone still lists it
        return
    annotations = dict(init.__annotations__)
    annotations.pop(own[-1].name, None)
    annotations.update({p.name: hints[p.name] for p in inherited if p.name in hints})
    init.__annotations__ = annotations


class PolicyHooks(abc.ABC):
    """The hooks of :class:`~mf_sched.policy.Policy` that a subclass implements (the three abstract ones) or
    overrides, with their defaults, and the helpers a subclass calls to build its answer; a base class of `Policy`
    (not used on its own), which supplies the bookkeeping they read (`_counts`, `_sums`, `_budget_blocked`, `cost`,
    `n_pulls`, `sample_agnostic`)."""

    @abc.abstractmethod
    def _propose(self) -> tuple[int, int] | None:
        """The next (arm, fidelity) to hand out, or None to wait / when done. Must not commit it:
        :meth:`_on_issue` is called when the pull is actually issued."""

    def _on_issue(self, arm: int, fidelity: int) -> None:
        """The proposed pull was issued (mark it as pending in the subclass's bookkeeping)."""

    def _propose_batch(self, n: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Optional vectorised proposal of up to `n` pulls handed out together, without committing.
        Return None to fall back to repeated :meth:`_propose`."""
        return None

    def _on_issue_batch(self, arms: np.ndarray, fidelities: np.ndarray) -> None:
        for a, f in zip(arms.tolist(), fidelities.tolist()):
            self._on_issue(a, f)

    @abc.abstractmethod
    def _observe(self, arm: int, fidelity: int, value: float) -> None:
        """An issued (or claimed) pull came back with `value` (validated, finite)."""

    def _observe_batch(self, arms: np.ndarray, fidelities: np.ndarray, values: np.ndarray) -> None:
        rows = values.tolist() if values.ndim == 1 else list(values)
        for a, f, v in zip(arms.tolist(), fidelities.tolist(), rows):
            self._observe(a, f, v)

    def _observe_extra(self, arm: int, fidelity: int, value: float) -> None:
        """An adopted pull that filled no slot came back. Default: sample-agnostic policies use it like
        their own samples; others only keep it in the shared statistics (:attr:`counts`, :attr:`means`)."""
        if self.sample_agnostic:
            self._observe(arm, fidelity, value)

    def _on_give_back(self, arm: int, fidelity: int) -> None:
        """An issued pull failed; undo what :meth:`_on_issue` did so the work can be handed out again."""

    def _claim(self, arm: int, fidelity: int) -> bool:
        """An outside pull (arm, fidelity) was made. Return True if it takes the place of work the policy
        would hand out (and mark it issued); False to treat its result as an extra sample."""
        if self.sample_agnostic:
            self._on_issue(arm, fidelity)
            return True
        return False

    @abc.abstractmethod
    def _is_done(self) -> bool:
        """The policy's own rule says it has finished (not counting the budget)."""

    def _recommend(self) -> Recommendation:
        """Default: the arm with the best empirical mean at the highest fidelity that has data."""
        return self._empirical_recommendation(certified=False, reason=self._default_reason())

    def _describe(self) -> dict[str, Any]:
        """Policy-specific status for :meth:`describe`."""
        return {}

    # ----------------------------------------------------------------------------- building the answer
    def _default_reason(self) -> str:
        if self._budget_blocked and not self._is_done():
            return "budget"
        return "in-progress" if not self._is_done() else "finished"

    def _empirical_recommendation(
        self, *, certified: bool, reason: str, arms: Any = None, **details: Any
    ) -> Recommendation:
        """Best empirical mean at the highest fidelity that has data among `arms` (default: all); see
        :func:`~mf_sched.policy.empirical_best`."""
        best = empirical_best(self._counts, self._sums, arms)
        return self._answer(best, certified=certified, reason=reason, details=details)

    def _answer(
        self,
        arm: Any,
        *,
        certified: bool = False,
        reason: str | None = None,
        details: Mapping[str, Any] | None = None,
        mixture: Any = None,
    ) -> Recommendation:
        """The :class:`~mf_sched.policy.Recommendation` for `arm` (`None`: no answer yet), with this policy's cost,
        pull count and confidence filled in by :func:`~mf_sched.policy.make_recommendation`. The one way a policy
        builds its answer.

        Args:
            arm: the recommended arm, or `None`.
            certified: `True` only when the stopping rule fired (the answer carries the guarantee).
            reason: see :attr:`~mf_sched.policy.Recommendation.reason`; default `"identified"` for a certified answer,
                else :meth:`_default_reason` (`"in-progress"`, `"budget"` or `"finished"`).
            details: policy-specific extras (JSON-safe); default none.
            mixture: the recommended mixture (mixture-valued policies).

        `delta` is the policy's `delta` attribute when it is a number (δ-correct policies), else `None`.

        >>> from mf_sched import FidelityLadder, get_policy
        >>> p = get_policy("se")(n_arms=2, ladder=FidelityLadder([1.0]), delta=0.1)
        >>> rec = p._answer(1, certified=True, details={"rounds": 3})
        >>> (rec.arm, rec.certified, rec.reason, rec.delta, rec.cost, dict(rec.details))
        (1, True, 'identified', 0.1, 0.0, {'rounds': 3})
        """
        if reason is None:
            reason = "identified" if certified else self._default_reason()
        return make_recommendation(
            arm,
            certified=certified,
            reason=reason,
            cost=self.cost,
            n_pulls=self.n_pulls,
            delta=getattr(self, "delta", None),
            mixture=mixture,
            details=details,
        )
