"""Racing against a full-fidelity incumbent, best-first and asynchronous: the default of the integrations.

Rule: :mod:`mf_sched.racing.engine` (`rule="race"`), mf-sched's one-sided variant of IISE's elimination rule
(Poiani, Metelli, Restelli, *Multi-Fidelity Best-Arm Identification*, NeurIPS 2022, Eq. 3): an arm stops as
soon as the optimistic bound on its final value, `ζ⁺`-bound of `v_i(m) + b_i(m)`, falls below the best
full-fidelity lower bound `max_j v_j(M) − B_j`; `ζ⁺` bounds only the *best* arm's improvement after rung
`m` (:class:`~mf_sched.racing.bias.RaceBias`). The module docstring of :mod:`mf_sched.racing.certificate`
proves that the best arm is never stopped with probability `≥ 1 − δ − α` (`α`: the miscoverage of `ζ⁺`).

Order (resumable runs: an arm is a training run that advances one rung per pull, paying
`λ(m) − λ(m − 1)` under `semantics="resumable"`): the anytime schedule of :mod:`mf_sched.racing.schedule`
(`schedule="anytime"`, default): ASHA's promotions first (an arm paused at rung `m` among the best
`⌊n_m/η⌋` values there goes up one rung, the highest rung first), then a new arm (in a seeded random order),
then — once ASHA has nothing to do — the paused arm at the highest rung with the best value (`order="depth"`;
`"estimate"`: the best estimated final value, its latest value plus the bound's typical improvement;
`"bound"`: the optimistic bound). Stopped at any budget, the policy answers by ASHA's rule from the evidence so far
(not always ASHA's answer: ASHA's work is interleaved with the racing cut); run to the end, it certifies.
`schedule="best-first"`: every arm to the first rung, then best-first (the order before the anytime schedule).
A paused run is resumed only while it can still beat the incumbent (it is stopped, without being resumed, when a
better incumbent arrives: freeze-thaw). There is no barrier: with `W` workers, `W` different arms are in
flight whenever that many can still win.

Answer: once every arm is stopped or at the top, the best top-rung value, ε-certified
(:meth:`~mf_sched.racing.engine.RungEliminator.certificate`; `certified` when the bound was earned or given,
:func:`mf_sched.racing.certificate.certification`; `details["certificate"]` says it in one sentence). Before that
(a budget, a user asking early) the answer is the best evidence: the arm with the best latest value, a finished
arm preferred on ties (:meth:`~mf_sched.racing.engine.RungEliminator.answer`), and `details["rung"]` says which rung it
rests on.

Failures: a pull given back (a failed evaluation) can be retried; after `max_failures` failures the arm is
dropped (`details["dropped"]`; the guarantee then covers the other arms only).

`race_bias` defaults to the ladder's ζ (a valid, conservative ζ⁺: the best arm's improvement is at most its
bias); pass the curve-aware bound (:func:`mf_sched.racing.shipped_curve_bound` `(...).select(...)`, or your own
fit, :func:`mf_sched.racing.fit.fit_curve_bound`) or a calibrated ζ⁺ (:func:`mf_sched.racing.bias.race_prior`) to prune
more.

Example:
    >>> from mf_sched import FidelityLadder
    >>> from mf_sched.racing.policy import Race
    >>> ladder = FidelityLadder(costs=[1, 3, 9], zeta=[0.3, 0.1, 0.0])
    >>> p = Race(n_arms=4, ladder=ladder, race_bias=[0.1, 0.03, 0.0], noise={"kind": "subgaussian", "sigma": 0.01},
    ...          seed=0)
    >>> means = [0.2, 0.5, 0.8, 0.75]
    >>> pulls = []
    >>> while not p.done:
    ...     pull = p.ask()
    ...     pulls.append((pull.arm, pull.fidelity))
    ...     p.tell(pull, means[pull.arm] - 0.05 * (2 - pull.fidelity))
    >>> pulls    # 2, 0, 1 start (seeded order); 2, best of three, goes on (ASHA); 3 starts; 2 finishes first
    [(2, 0), (0, 0), (1, 0), (2, 1), (3, 0), (2, 2), (3, 1)]
    >>> rec = p.recommendation()
    >>> rec.arm, rec.certified, rec.details["stopped"]   # 0, 1 stopped at rung 0 and 3 at rung 1: identified
    (2, True, 3)
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mf_sched._serialize import encode
from mf_sched._validate import check_choice, check_delta, check_int, check_real
from mf_sched.ladder import FidelityLadder
from mf_sched.policy import Policy, Recommendation
from mf_sched.racing.bias import RaceBias
from mf_sched.racing.curve_bound import CurveBound
from mf_sched.racing.engine import RUNNING, RungEliminator, promotion_quota
from mf_sched.racing.schedule import SCHEDULES
from mf_sched.registry import register

__all__ = ["Race"]


@register
class Race(Policy):
    """Racing against the full-fidelity incumbent (see the module docstring).

    Args:
        n_arms: see :class:`~mf_sched.policy.Policy`.
        ladder: see :class:`~mf_sched.policy.Policy`.
        **kwargs: `noise` (gives σ), `budget`, `seed` (also draws the order in which arms are started); see
            :class:`~mf_sched.policy.Policy`.
        delta: confidence δ ∈ (0, 1).
        race_bias: the improvement bound: a :class:`~mf_sched.racing.curve_bound.CurveBound` (curve-aware) or ζ⁺
            per rung (:class:`~mf_sched.racing.bias.RaceBias`, its dict, or absolute values); default the ladder's ζ.
        fixed_arms: the arms are fixed before any evaluation (True for a simulated instance or a candidate
            set): the lower radius then needs a union over rungs only (see :mod:`mf_sched.racing.engine`).
        max_failures: failed pulls (given back) tolerated per arm before it is dropped (≥ 1).
        order: the resumption order of the certification phase, `"depth"` (default: the highest rung first,
            then the best value), `"estimate"` or `"bound"` (see :class:`~mf_sched.racing.engine.RungEliminator`).
        schedule: `"anytime"` (default) or `"best-first"` (see :mod:`mf_sched.racing.schedule`).
        eta: ASHA's reduction factor η > 1 for the promotions of the anytime schedule (default 3).
        audit: the probability, in `[0, 1]`, that an arm the rule stops is trained on to the top anyway (an *audit*,
            drawn once per arm from the seed; default 0). An audited arm that ends among the good ones with a curve
            beyond the bound is the miss event caught in the act: λ is raised, the arms that can now win run again
            and the certificate is void (:mod:`mf_sched.racing.evidence`). Audits run when nothing else waits; their
            epochs count like any other.
    """

    name = "race"
    paper = (
        "mf-sched's racing rule (mf_sched.racing.engine): Poiani, Metelli, Restelli 2022 (NeurIPS) Eq. 3 made "
        "one-sided "
        "against a full-fidelity incumbent, with the best arm's bias bound; ASHA's order first (Li et al. 2020, MLSys)"
    )
    summary = (
        "race runs against the best full-fidelity result; ASHA's promotions first, then best-first to a certificate"
    )
    #: ASHA's promotions let the best arm at a rung go on before `η` values are recorded there (True: the schedule
    #: before `benchmarks.small_budget` measured it; a subclass may set it to compare)
    _keep_one = False
    _state_attrs = ("_engine_state", "_reached", "_alive", "_busy", "_failures", "_start_order", "_audit_u", "_audited")

    def __init__(
        self,
        n_arms: int,
        ladder: FidelityLadder,
        *,
        delta: float = 0.05,
        race_bias: CurveBound | RaceBias | Sequence[float] | Mapping[str, Any] | None = None,
        fixed_arms: bool = True,
        max_failures: int = 3,
        order: str = "depth",
        schedule: str = "anytime",
        eta: float = 3.0,
        audit: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(n_arms, ladder, **kwargs)
        self.delta = check_delta(delta)
        bias: Any = race_bias if race_bias is not None else ladder.zeta
        if not isinstance(bias, CurveBound):
            bias = bias if isinstance(bias, Mapping) and "hi" in bias else RaceBias.coerce(bias, ladder.M)
        self.max_failures = check_int("max_failures", max_failures, 1)
        self.schedule = check_choice("schedule", schedule, SCHEDULES)
        self.eta = check_real("eta", eta, gt=1.0)
        self.audit = check_real("audit", audit, ge=0.0, accepted="0 <= audit <= 1")
        if self.audit > 1:
            raise ValueError(f"audit = {audit!r} is out of range; accepted: 0 <= audit <= 1")
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
        bias_dict = (self._engine.curve_bound or self._engine.race_bias).to_dict()  # type: ignore[union-attr]
        self._set_config(delta=self.delta, race_bias=bias_dict, fixed_arms=bool(fixed_arms),
                         max_failures=self.max_failures, order=order, schedule=self.schedule,
                         eta=self.eta, audit=self.audit)  # fmt: skip
        K = self.n_arms
        self._reached = np.full(K, -1, dtype=np.int64)  # highest rung told, per arm
        self._alive = np.ones(K, dtype=bool)  # neither stopped, dropped nor at the top
        self._busy = np.zeros(K, dtype=bool)  # a pull of the arm is outstanding
        self._failures = np.zeros(K, dtype=np.int64)
        self._start_order = self._rng.permutation(K).astype(np.int64)  # never the order arms were written in
        # audits: an arm the rule stops continues to the top with probability `audit` (a draw fixed per arm)
        self._audit_u = self._rng.random(K) if self.audit > 0 else np.ones(K)
        self._audited = np.zeros(K, dtype=bool)  # stopped by the rule, trained on to the top as an audit
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
        """The work queues, a function of the state alone (rebuilt exactly on load): `_heap`, the
        certification order `(−priority, a)` of every arm that may be resumed; per rung below the top,
        `_rung_vals` (every value recorded there, sorted) and `_rung_heap` (`(−value, a)` of the arms
        paused there: ASHA's candidates); `_next_start`, the position in `_start_order` of the next arm to
        start. Entries go stale when an arm moves on, stops or is busy; they are skipped when popped."""
        arms = np.flatnonzero(self._alive & ~self._busy)
        self._heap = [(-self._engine.priority(int(a)), int(a)) for a in arms.tolist()]
        heapq.heapify(self._heap)
        top = self.M - 1
        vals = self._engine_values()
        self._rung_vals = [sorted(vals[~np.isnan(vals[:, m]), m].tolist()) for m in range(top)]
        self._rung_heap = [[] for _ in range(top)]
        for a in arms.tolist():
            r = int(self._reached[a])
            if 0 <= r < top:
                self._rung_heap[r].append((-float(vals[a, r]), a))
        for h in self._rung_heap:
            heapq.heapify(h)
        self._next_start = 0

    def _engine_values(self) -> np.ndarray:
        return self._engine.values_all()  # arms are registered in order 0..K-1 (the constructor)

    def _push(self, arm: int) -> None:
        if self._alive[arm] and not self._busy[arm]:
            heapq.heappush(self._heap, (-self._engine.priority(arm), arm))
            r = int(self._reached[arm])
            if 0 <= r < self.M - 1:
                v = self._engine.value(arm, r)
                heapq.heappush(self._rung_heap[r], (-float(v), arm))  # type: ignore[arg-type]

    def _top_of_heap(self) -> int | None:
        h = self._heap
        while h:
            negu, a = h[0]
            if self._alive[a] and not self._busy[a] and self._reached[a] >= 0 and -negu == self._engine.priority(a):
                return a
            heapq.heappop(h)
        return None

    def _promotion(self) -> int | None:
        """ASHA (Algorithm 2 of Li et al. 2020): the best arm paused at the highest rung where it is among the best
        `⌊n_m/η⌋` values (:func:`~mf_sched.racing.engine.promotion_quota` without `keep_one`: arms resume, so the
        first arms at a rung wait for `η` values before one goes on)."""
        for m in range(self.M - 2, -1, -1):
            h = self._rung_heap[m]
            while h and not (self._alive[h[0][1]] and not self._busy[h[0][1]] and self._reached[h[0][1]] == m):
                heapq.heappop(h)
            if not h:
                continue
            vals = self._rung_vals[m]
            keep = promotion_quota(len(vals), self.eta, keep_one=self._keep_one)
            v = -h[0][0]
            if keep and len(vals) - bisect.bisect_right(vals, v) < keep:
                return h[0][1]
        return None

    def _fresh(self) -> int | None:
        order = self._start_order
        while self._next_start < order.size:
            a = int(order[self._next_start])
            if self._reached[a] < 0 and self._alive[a] and not self._busy[a]:
                return a
            if self._reached[a] >= 0 or not self._alive[a]:
                self._next_start += 1  # started (or dropped) already: never again
            else:
                return self._fresh_after(self._next_start + 1)
        return None

    def _fresh_after(self, i: int) -> int | None:
        for a in self._start_order[i:].tolist():
            if self._reached[a] < 0 and self._alive[a] and not self._busy[a]:
                return int(a)
        return None

    # ------------------------------------------------------------------ protocol hooks
    def _propose(self) -> tuple[int, int] | None:
        a = self._promotion() if self.schedule == "anytime" else None
        if a is None:
            a = self._fresh()
        if a is None:
            a = self._top_of_heap()
        if a is None:  # nothing else to do: an audit climbs one rung
            idle = [int(x) for x in self._audit_pending().tolist() if not self._busy[x]]
            a = idle[0] if idle else None
        return None if a is None else (a, int(self._reached[a]) + 1)

    def _on_issue(self, arm: int, fidelity: int) -> None:
        self._busy[arm] = True

    def _claim(self, arm: int, fidelity: int) -> bool:
        ok = self._alive[arm] or (self._audited[arm] and self._reached[arm] < self.M - 1)
        if ok and not self._busy[arm] and fidelity == self._reached[arm] + 1:
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
        before = eng.incumbent()[1] if fidelity == self.M - 1 else None
        lam = eng.curve_bound.lam if eng.curve_bound is not None else None
        if eng.value(arm, fidelity) is None:
            eng.report(arm, fidelity, value)
            if fidelity < self.M - 1:
                bisect.insort(self._rung_vals[fidelity], float(value))
        self._reached[arm] = max(int(self._reached[arm]), fidelity)
        # the bound learned from the study's curves moved (a run reached the top): every bound changed
        learned = eng.curve_bound is not None and eng.curve_bound.lam != lam
        if fidelity == self.M - 1:
            self._alive[arm] = False
            # a better incumbent (or a bound the study's curves tightened) may stop others: race everyone against
            # it (no better one, no new stop)
            stopped = eng.eliminate() if learned or eng.incumbent()[1] > before else []
        else:
            stopped = [arm] if eng.should_stop(arm) else []
        for k in stopped:
            self._alive[int(k)] = False
            if self._audit_u[int(k)] < self.audit and int(self._reached[int(k)]) < self.M - 1:
                self._audited[int(k)] = True  # audited: trained on to the top to check the bound on a stopped run
        if eng.curve_bound is not None and (learned or eng.curve_bound.raised_by) and fidelity == self.M - 1:
            # the study's curve raised the bound: every priority changed, and the engine revived the stopped arms
            # that can win again
            codes, reached = eng.statuses(), eng.reached_all()
            self._alive |= (codes == RUNNING) & (reached < self.M - 1) & (self._failures < self.max_failures)
            self._rebuild_heap()
        else:
            self._push(arm)

    def _observe(self, arm: int, fidelity: int, value: float) -> None:
        self._busy[arm] = False
        self._record_value(arm, fidelity, value)

    def _observe_extra(self, arm: int, fidelity: int, value: float) -> None:
        # an outside evaluation (another worker, an enqueued trial): evidence when it is new for the arm
        if self._engine.value(arm, fidelity) is None and self._engine.status(arm) in ("running", "finished", "lost"):
            self._record_value(arm, fidelity, value)

    def _is_done(self) -> bool:
        return not bool(self._alive.any()) and not bool(self._audit_pending().size)

    def _audit_pending(self) -> np.ndarray:
        """Audited arms below the top (stopped by the rule, trained on to the top)."""
        return np.flatnonzero(self._audited & (self._reached < self.M - 1) & (self._failures < self.max_failures))

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
            details.update(epsilon=cert.epsilon, rung=self.M - 1, estimate=cert.value, guaranteed=cert.guaranteed,
                           certificate=cert.sentence(), evidence=dict(cert.evidence))  # fmt: skip
            reason = "identified" if cert.identified else "finished"
            return self._answer(cert.key, certified=cert.certified, reason=reason, details=details)
        key, rung, est = eng.answer()
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
