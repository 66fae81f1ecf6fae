"""Racing against a full-fidelity incumbent, best-first and asynchronous: the default of the integrations.

Rule: :mod:`mf_sched.rungs` (``rule="race"``), mf-sched's one-sided variant of IISE's elimination rule
(Poiani, Metelli, Restelli, *Multi-Fidelity Best-Arm Identification*, NeurIPS 2022, Eq. 3): an arm stops as
soon as the optimistic bound on its final value, ``ζ⁺``-bound of ``v_i(m) + b_i(m)``, falls below the best
full-fidelity lower bound ``max_j v_j(M) − B_j``; ``ζ⁺`` bounds only the *best* arm's improvement after rung
``m`` (:class:`~mf_sched.race.RaceBias`). The module docstring of :mod:`mf_sched.rungs` proves that the best
arm is never stopped with probability ``≥ 1 − δ − α`` (``α``: the miscoverage of ``ζ⁺``).

Order (resumable runs: an arm is a training run that advances one rung per pull, paying
``λ(m) − λ(m − 1)`` under ``semantics="resumable"``): every pull advances the arm with the highest priority
(:meth:`~mf_sched.rungs.RungEliminator.priority`): arms not yet started first, then the run with the best
*estimated* final value (its latest value plus ζ⁺'s typical improvement; ``order="bound"`` uses the optimistic
bound instead, which is nearly breadth-first while ζ⁺ is loose). The most promising run thus reaches the top
early and becomes the incumbent against which the others are raced; a paused run is resumed only while it
can still beat the incumbent (it is stopped, without being resumed, when a better incumbent arrives:
freeze-thaw). There is no barrier: with
``W`` workers, ``W`` different arms are in flight whenever that many can still win.

Answer: once every arm is stopped or at the top, the best top-rung value, ε-certified
(:meth:`~mf_sched.rungs.RungEliminator.certificate`; ``certified`` when it is the only arm left). Before that
(a budget, a user asking early) the answer uses every rung's evidence: the arm with the best *estimated*
final value (:meth:`~mf_sched.rungs.RungEliminator.best_estimate`), and ``details["rung"]`` says which rung it
rests on.

Failures: a pull given back (a failed evaluation) can be retried; after ``max_failures`` failures the arm is
dropped (``details["dropped"]``; the guarantee then covers the other arms only).

``race_bias`` defaults to the ladder's ζ (a valid, conservative ζ⁺: the best arm's improvement is at most its
bias); pass a calibrated ζ⁺ (:func:`mf_sched.curves.calibration.calibrate_race`, :func:`mf_sched.race.race_prior`) to
prune more.

Example:
    >>> from mf_sched import FidelityLadder
    >>> from mf_sched.policies.race import Race
    >>> ladder = FidelityLadder(costs=[1, 3, 9], zeta=[0.3, 0.1, 0.0])
    >>> p = Race(n_arms=4, ladder=ladder, race_bias=[0.1, 0.03, 0.0], noise={"kind": "subgaussian", "sigma": 0.01})
    >>> means = [0.2, 0.5, 0.8, 0.75]
    >>> while not p.done:
    ...     pull = p.ask()
    ...     p.tell(pull, means[pull.arm] - 0.05 * (2 - pull.fidelity))
    >>> rec = p.recommendation()
    >>> rec.arm, p.counts.sum(axis=0).tolist()     # arm 2 raced to the top; 3 stopped at rung 1, 0 and 1 at 0
    (2, [4, 2, 1])
    >>> rec.certified, rec.details["stopped"]
    (True, 3)
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mf_sched._serialize import encode
from mf_sched._validate import check_delta, check_int
from mf_sched.ladder import FidelityLadder
from mf_sched.policy import Policy, Recommendation
from mf_sched.race import RaceBias
from mf_sched.registry import register
from mf_sched.rungs import RungEliminator

__all__ = ["Race"]


@register
class Race(Policy):
    """Racing against the full-fidelity incumbent (see the module docstring).

    Args:
        n_arms, ladder, noise, budget, seed: see :class:`~mf_sched.policy.Policy`; ``noise`` gives σ.
        delta: confidence δ ∈ (0, 1).
        race_bias: ζ⁺ per rung (:class:`~mf_sched.race.RaceBias`, its dict, or absolute values); default the
            ladder's ζ.
        fixed_arms: the arms are fixed before any evaluation (True for a simulated instance or a candidate
            set): the lower radius then needs a union over rungs only (see :mod:`mf_sched.rungs`).
        max_failures: failed pulls (given back) tolerated per arm before it is dropped (≥ 1).
        order: promotion order, ``"estimate"`` (default) or ``"bound"`` (see :class:`~mf_sched.rungs.RungEliminator`).
    """

    name = "race"
    paper = (
        "mf-sched's racing rule (mf_sched.rungs): Poiani, Metelli, Restelli 2022 (NeurIPS) Eq. 3 made one-sided "
        "against a full-fidelity incumbent, with the best arm's bias bound ζ⁺"
    )
    summary = "race runs against the best full-fidelity result with the best arm's ζ⁺; best-first, no barrier"
    _state_attrs = ("_engine_state", "_reached", "_alive", "_busy", "_failures")

    def __init__(
        self,
        n_arms: int,
        ladder: FidelityLadder,
        *,
        delta: float = 0.05,
        race_bias: RaceBias | Sequence[float] | Mapping[str, Any] | None = None,
        fixed_arms: bool = True,
        max_failures: int = 3,
        order: str = "estimate",
        **kwargs: Any,
    ) -> None:
        super().__init__(n_arms, ladder, **kwargs)
        self.delta = check_delta(delta)
        bias = RaceBias.coerce(race_bias if race_bias is not None else ladder.zeta, ladder.M)
        self.max_failures = check_int("max_failures", max_failures, 1)
        self._engine = RungEliminator(
            ladder,
            delta=self.delta,
            sigma=self.sigma,
            n_arms=self.n_arms,
            rule="race",
            race_bias=bias,
            fixed_arms=bool(fixed_arms),
            order=order,
        )
        for k in range(self.n_arms):
            self._engine.register(k)
        self._set_config(delta=self.delta, race_bias=bias.to_dict(), fixed_arms=bool(fixed_arms),
                         max_failures=self.max_failures, order=order)  # fmt: skip
        K = self.n_arms
        self._reached = np.full(K, -1, dtype=np.int64)  # highest rung told, per arm
        self._alive = np.ones(K, dtype=bool)  # neither stopped, dropped nor at the top
        self._busy = np.zeros(K, dtype=bool)  # a pull of the arm is outstanding
        self._failures = np.zeros(K, dtype=np.int64)
        self._rebuild_heap()

    # ------------------------------------------------------------------ state
    @property
    def engine(self) -> RungEliminator:
        """The racing engine (read it, do not drive it: the policy does)."""
        return self._engine

    @property
    def _engine_state(self) -> dict[str, Any]:
        return self._engine.state_dict()

    @_engine_state.setter
    def _engine_state(self, state: dict[str, Any]) -> None:
        # Policy.load_state_dict hands the section over decoded (arrays restored): encode it back for the engine
        self._engine = RungEliminator.from_state_dict(encode(state))

    def _after_load(self) -> None:
        self._rebuild_heap()

    def _rebuild_heap(self) -> None:
        """The promotion queue: ``(−U_a, a)`` for every arm that may be promoted now. Entries go stale when an
        arm's bound changes or it stops; they are skipped when popped, so the order is a function of the
        state alone (rebuilt exactly on load)."""
        arms = np.flatnonzero(self._alive & ~self._busy)
        self._heap = [(-self._engine.priority(int(a)), int(a)) for a in arms.tolist()]
        heapq.heapify(self._heap)

    def _push(self, arm: int) -> None:
        if self._alive[arm] and not self._busy[arm]:
            heapq.heappush(self._heap, (-self._engine.priority(arm), arm))

    def _top_of_heap(self) -> int | None:
        h = self._heap
        while h:
            negu, a = h[0]
            if self._alive[a] and not self._busy[a] and -negu == self._engine.priority(a):
                return a
            heapq.heappop(h)
        return None

    # ------------------------------------------------------------------ protocol hooks
    def _propose(self) -> tuple[int, int] | None:
        a = self._top_of_heap()
        return None if a is None else (a, int(self._reached[a]) + 1)

    def _on_issue(self, arm: int, fidelity: int) -> None:
        self._busy[arm] = True

    def _claim(self, arm: int, fidelity: int) -> bool:
        if self._alive[arm] and not self._busy[arm] and fidelity == self._reached[arm] + 1:
            self._busy[arm] = True
            return True
        return False

    def _on_give_back(self, arm: int, fidelity: int) -> None:
        self._busy[arm] = False
        self._failures[arm] += 1
        if self._failures[arm] >= self.max_failures and self._alive[arm]:
            self._alive[arm] = False
            self._engine.mark_lost(arm)
        self._push(arm)

    def _record_value(self, arm: int, fidelity: int, value: float) -> None:
        eng = self._engine
        if eng.value(arm, fidelity) is None:
            eng.report(arm, fidelity, value)
        self._reached[arm] = max(int(self._reached[arm]), fidelity)
        if fidelity == self.M - 1:
            self._alive[arm] = False
            stopped = eng.eliminate()  # a new top value may be a better incumbent: race everyone against it
        else:
            stopped = [arm] if eng.should_stop(arm) else []
        for k in stopped:
            self._alive[int(k)] = False
        self._push(arm)

    def _observe(self, arm: int, fidelity: int, value: float) -> None:
        self._busy[arm] = False
        self._record_value(arm, fidelity, value)

    def _observe_extra(self, arm: int, fidelity: int, value: float) -> None:
        # an outside evaluation (another worker, an enqueued trial): evidence when it is new for the arm
        if self._engine.value(arm, fidelity) is None and self._engine.status(arm) in ("running", "finished", "lost"):
            self._record_value(arm, fidelity, value)

    def _is_done(self) -> bool:
        return not bool(self._alive.any())

    # ------------------------------------------------------------------ answer
    def _recommend(self) -> Recommendation:
        eng = self._engine
        dropped = np.flatnonzero(self._failures >= self.max_failures).tolist()
        finished = self._is_done() and not self._outstanding
        cert = eng.certificate()
        details: dict[str, Any] = {
            "rule": "race",
            "bias_source": cert.bias_source,
            "stopped": int(cert.counts.get("stopped", 0)),
            "dropped": dropped,
        }
        if finished and cert.key is not None:
            details.update(epsilon=cert.epsilon, rung=self.M - 1, estimate=cert.value, guaranteed=cert.guaranteed)
            reason = "identified" if cert.identified else "finished"
            return self._answer(cert.key, certified=cert.identified, reason=reason, details=details)
        key, rung, est = eng.best_estimate()
        details.update(epsilon=None, rung=rung, estimate=est, guaranteed=cert.guaranteed)
        reason = self._default_reason() if not finished else "exhausted"
        return self._answer(key, reason=reason, details=details)

    def _describe(self) -> dict[str, Any]:
        _, lcb = self._engine.incumbent()
        return {
            "alive": int(self._alive.sum()),
            "busy": int(self._busy.sum()),
            "incumbent_lcb": None if math.isinf(lcb) else lcb,
        }
