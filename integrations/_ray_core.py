"""The decision core of the Ray schedulers, apart from Ray: what both rules keep about the trials and the rungs.

:class:`~mf_sched.integrations.ray.RungScheduler` is a thin adapter: it maps Tune's calls (`on_trial_add`,
`on_trial_result`, ...) and `Trial` objects to a core fed with `(trial id, time_attr value, metric value)`, and the
core's answers (`"CONTINUE"`, `"PAUSE"`, `"STOP"`, the trial to run next) back to Tune. The core knows nothing of
Ray: the trials' statuses reach it through :class:`Trials`, a view the adapter implements over Tune's controller.

* :class:`RungCore` (this module): the bookkeeping both rules share — the ladder (given, or inferred once the
  maximum resource is known), the :class:`~mf_sched.racing.engine.RungEliminator` that holds every value and every
  decision, the trials in order of arrival (their `δ_k` index) and the seeded random order they start in, the
  metric's values (its family, σ), the results seen before the rungs were known, the last result of each trial, the
  paused trials, the certificate, the view Tune's loggers record (:meth:`RungCore.metrics`), the progress lines and
  the saved state.
* :class:`~mf_sched.integrations._ray_race.RaceCore`: racing (`rule="race"`), the anytime schedule with pausing.
* :class:`~mf_sched.integrations._ray_iise.IISECore`: IISE's elimination (`rule="iise"`), synchronous or not.

The rule is chosen once, when the scheduler is built; each core carries its rule's behaviour (as Ray's
`AsyncHyperBandScheduler` keeps its rule in a small `_Bracket`, and Optuna's `HyperbandPruner` composes
`SuccessiveHalvingPruner`s).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, KeysView
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from mf_sched._validate import check_choice, check_delta, check_int, check_optional_int
from mf_sched.ladder import FidelityLadder
from mf_sched.racing.bias import metric_transform
from mf_sched.racing.engine import FINISHED, HALTED, ORDERS, STOPPED, RungCertificate, RungEliminator
from mf_sched.racing.schedule import SCHEDULES

from ._common import BOUNDS, RungArgs, check_tolerance, default_sigma

__all__ = ["CONTINUE", "PAUSE", "STOP", "PENDING", "RUNNING", "PAUSED", "TERMINATED", "ERROR", "LIVE", "Trials",
           "RungSettings", "RungCore", "needs_metric_and_mode"]  # fmt: skip

#: the core's decisions for a trial's result (the strings of Ray's `TrialScheduler.CONTINUE`, `PAUSE`, `STOP`)
CONTINUE, PAUSE, STOP = "CONTINUE", "PAUSE", "STOP"
#: a trial's status as the core reads it through :class:`Trials` (the names of Ray's `Trial` statuses)
PENDING, RUNNING, PAUSED, TERMINATED, ERROR = "PENDING", "RUNNING", "PAUSED", "TERMINATED", "ERROR"
#: the statuses of a trial that may still run
LIVE = (PENDING, RUNNING, PAUSED)
_ELIMINATED = ("stopped", "halted")


def needs_metric_and_mode(who: str) -> str:
    """The error raised when a result arrives before the metric and its mode are known.

    Args:
        who: the scheduler's class name, which the message starts with.
    """
    return f"{who} needs metric and mode (in the scheduler, TuneConfig(metric=, mode=) or tune.run(metric=, mode=))"


class Trials(Protocol):
    """The framework's trials as the core sees them: statuses (:data:`LIVE`, :data:`TERMINATED`, :data:`ERROR`;
    None: unknown) and the one action the core takes on a trial other than the one reporting, stopping it."""

    def status(self, key: str) -> str | None:
        """The status of the trial `key` (None when the framework does not know it).

        Args:
            key: the trial's id.
        """
        ...

    def listing(self) -> list[tuple[str, str | None]]:
        """Every trial of the experiment as `(id, status)`, in the framework's order."""
        ...

    def stop(self, key: str) -> None:
        """Stop the trial `key` for good (the framework then calls back; the adapter ignores those calls).

        Args:
            key: the trial's id.
        """
        ...


@dataclass(frozen=True)
class RungSettings:
    """The scheduler's arguments other than the rungs (:class:`~mf_sched.integrations._common.RungArgs`) and the
    metric, checked once (:meth:`checked`) and read by the rule's core.

    Attributes:
        rule: `"race"` or `"iise"`.
        delta: the confidence δ (checked by the engine, in (0, 1)).
        n_trials: the number of trials if known (δ split δ/(KM)); None: open-ended.
        fixed_arms: racing: the configurations were fixed before any result (no union over trials).
        bias: IISE: `"zeta"` (`2ζ(m)`) or `"gamma"` (`γ(m)`).
        eta: IISE: the heuristic halving cut `η > 1`, or None.
        synchronous: IISE: every live trial pauses at each rung until the rung is decided.
        pause: racing: best-first promotion by pausing at rungs (trials with a checkpoint only).
        order: racing: which paused trial resumes first, `"depth"`, `"estimate"` or `"bound"`.
        schedule: racing: `"anytime"` (ASHA's promotions first) or `"best-first"`.
        tolerance: racing with the shipped curve-aware bound: the relative tolerance, in [0, 1).
        metric_family: how to read the metric when its values do not tell (a name of
            :data:`mf_sched.racing.bias.NAMED_FAMILIES`), or None.
        bound: the shipped bound, `"curve"` (curve-aware) or `"zeta+"` (the unconditional ζ⁺ prior).
        reduction_factor: `η`, the ratio of the inferred ladder's rungs and ASHA's cut (`> 1`).
        seed: seeds the random order in which trials not started yet start (None: fresh entropy).
    """

    rule: str
    delta: float
    n_trials: int | None
    fixed_arms: bool
    bias: str
    eta: float | None
    synchronous: bool
    pause: bool
    order: str
    schedule: str
    tolerance: float
    metric_family: str | None
    bound: str
    reduction_factor: float
    seed: int | None

    @classmethod
    def checked(
        cls,
        *,
        rule: str,
        delta: float,
        n_trials: int | None,
        fixed_arms: bool,
        bias: str,
        eta: float | None,
        synchronous: bool | None,
        pause: bool,
        order: str,
        schedule: str,
        tolerance: float,
        metric_family: str | None,
        bound: str,
        reduction_factor: float,
        seed: int | None,
    ) -> RungSettings:
        """The settings, checked in the order the scheduler documents them (all at construction, also when the
        engine is built later, from the first finished trial).

        Args:
            rule: `"race"` or `"iise"` (already checked by the scheduler).
            delta: the confidence δ.
            n_trials: the number of trials if known, else None.
            fixed_arms: racing: the configurations are fixed before any result.
            bias: IISE only: `"zeta"` or `"gamma"` (racing: must stay `"zeta"`).
            eta: IISE only: the halving cut, or None (racing: must stay None).
            synchronous: IISE: pause every trial at each rung; None: True for `rule="iise"` (racing: must not be
                True).
            pause: racing: pause at rungs (ignored by IISE, where it is False).
            order: racing: the resume order.
            schedule: racing: one of :data:`mf_sched.racing.schedule.SCHEDULES`.
            tolerance: the curve-aware bound's relative tolerance, in [0, 1).
            metric_family: a family name of :data:`mf_sched.racing.bias.NAMED_FAMILIES`, or None.
            bound: one of `"curve"`, `"zeta+"`.
            reduction_factor: `η > 1` (already checked with the rungs).
            seed: an integer `≥ 0` that seeds the order in which trials start, or None (fresh entropy).

        Raises:
            ValueError: an argument out of its range or given to the other rule; the message names it.
        """
        if synchronous is None:
            synchronous = rule == "iise"
        if synchronous and rule == "race":
            raise ValueError("synchronous = True applies to rule = 'iise'; racing needs no barrier")
        if rule == "race" and (eta is not None or bias != "zeta"):
            raise ValueError("bias= and eta= apply to rule = 'iise' only")
        schedule = check_choice("schedule", schedule, SCHEDULES)
        tolerance = check_tolerance(tolerance)
        if metric_family is not None:
            metric_transform([], "max", metric_family)  # fails now on an unknown name
        bound = check_choice("bound", bound, BOUNDS)
        check_delta(delta)
        check_optional_int("n_trials", n_trials, none="unknown")
        check_choice("order", order, ORDERS)
        seed = check_int("seed", seed, low=0, none_ok=True)
        return cls(
            rule=rule, delta=delta, n_trials=n_trials, fixed_arms=bool(fixed_arms), bias=bias, eta=eta,
            synchronous=bool(synchronous), pause=bool(pause) and rule == "race", order=order, schedule=schedule,
            tolerance=tolerance, metric_family=metric_family, bound=bound, reduction_factor=float(reduction_factor),
            seed=seed,
        )  # fmt: skip


class RungCore(ABC):
    """What both rules keep about the trials and the rungs; a rule's core (a subclass) decides.

    Fed with `(trial id, time_attr value, metric value)` by the adapter: :meth:`add`, :meth:`result`,
    :meth:`complete`, :meth:`drop`, :meth:`choose`. Values are recorded at the rungs they reach (the last value
    at or before each rung), signed so that higher is better, in the engine.

    Args:
        rungs: the rung arguments (:func:`~mf_sched.integrations._common.resolve_rungs`): the ladder known now
            (None: inferred from the maximum resource once it is known), σ and ζ⁺.
        settings: the other arguments, checked (:meth:`RungSettings.checked`).
        mode: `"max"` or `"min"`, or None until the framework tells (:attr:`mode` may be set later).
        who: the scheduler's class name, for messages.
        time_attr: the result field that measures progress (the rungs' unit), for messages.
    """

    def __init__(self, rungs: RungArgs, settings: RungSettings, *, mode: str | None, who: str, time_attr: str) -> None:
        # a subclass sets its own fields before calling this: the engine is built here when the ladder is known
        self.rungs = rungs
        self.settings = settings
        self.mode = mode
        self.who = who
        self.time_attr = time_attr
        self.ladder: FidelityLadder | None = rungs.initial_ladder()
        self.engine: RungEliminator | None = None
        self._pending_curves: dict[str, list[tuple[float, float]]] = {}  # results seen before the ladder is known
        self._order: list[str] = []  # trial ids in order of arrival (their δ_k index)
        self._arrival_of: dict[str, int] = {}
        self._values: list[float] = []  # raw metric values (the metric's family)
        self._configs: dict[str, dict[str, Any]] = {}
        self._unstarted: dict[str, None] = {}  # added, no result yet (in the framework's order of addition)
        # the order trials start in: a random key per trial, drawn once when it is first added from a generator
        # seeded with `seed`; the keys and the generator's state are saved, so a restored experiment goes on in
        # the same order (and draws the same keys for trials added later)
        self._rng = np.random.default_rng(settings.seed)
        self._start_key: dict[str, float] = {}
        self._last: dict[str, tuple[float, float]] = {}  # last (time_attr, value) per trial
        self._paused: dict[str, int] = {}  # trial id -> rung it paused at
        self._live: set[str] = set()  # trials added and not yet gone (IISE: the trials the rungs wait for)
        if self.ladder is not None:
            self._make_engine()

    # ------------------------------------------------------------------ the rule's hooks
    @property
    @abstractmethod
    def kind(self) -> str:
        """The rule's name in the progress lines (`"racing"`, `"synchronous IISE"`, ...)."""

    @abstractmethod
    def _new_engine(self, ladder: FidelityLadder, sigma: Any) -> RungEliminator:
        """The rule's engine over `ladder` with the seed-to-seed noise `sigma`."""

    @abstractmethod
    def _result(self, key: str, t: float, v: float, can_pause: Callable[[], bool], trials: Trials) -> str:
        """The rule's decision for a result of a trial not eliminated yet (see :meth:`result`)."""

    @abstractmethod
    def choose(self, trials: Trials) -> str | None:
        """The trial to run next (None: none); no side effects, except where every trial would stay paused.

        Args:
            trials: the framework's trials.
        """

    def _refresh_bias(self) -> None:
        """Racing: re-choose the shipped bound when the study changed (nothing for IISE)."""

    def _complete_before_rungs(self, key: str, t: Any, v: float) -> None:
        """A trial finished before the rungs were known (racing infers them from it; nothing for IISE)."""

    def after_finish(self, trials: Trials) -> None:
        """A trial finished: racing stops the paused losers (nothing for IISE).

        Args:
            trials: the framework's trials.
        """

    def _after_drop(self, trials: Trials) -> None:
        """A trial left: synchronous IISE decides the rungs that no longer wait for it (nothing for racing)."""

    def _running_again(self, key: str) -> None:
        """The trial reports again (IISE: it was released)."""

    def _forgot(self, key: str) -> None:
        """The trial is no longer live (IISE: no longer released)."""

    def _leader(self, cert: RungCertificate) -> tuple[Any, float]:
        """The trial the progress lines show as the incumbent and its lower bound (NaN: none)."""
        return cert.key, math.nan

    def _incumbent_fields(self, out: dict[str, Any], sign: float, word: str, top: int) -> None:
        """Add the incumbent to :meth:`metrics` (racing only)."""

    def _optimistic(self, key: str) -> float | None:
        """The best final value the trial can still reach (racing; None: not shown)."""
        return None

    def _released_state(self) -> dict[str, Any]:
        """The IISE release bookkeeping in the saved state (empty for racing: the same keys for both rules)."""
        return {"to_unpause": [], "resumed_at": {}}

    def _load_released(self, state: dict[str, Any]) -> None:
        """Read the IISE release bookkeeping back (nothing for racing)."""

    def _restored_engine(self, state: dict[str, Any]) -> None:
        """The engine was read back from `state` (racing: whether its bound is the shipped one)."""

    # ------------------------------------------------------------------ engine and ladder
    def _make_engine(self) -> None:
        lad = self.ladder
        assert lad is not None
        sigma = self.rungs.sigma if self.rungs.sigma is not None else default_sigma(self._values)
        self.engine = self._new_engine(lad, sigma)
        for tid in self._order:
            self.engine.register(tid)
        for tid, pts in self._pending_curves.items():
            self._last.pop(tid, None)
            for t, v in pts:
                self._record(tid, t, v)
        self._pending_curves.clear()
        # trials that left before the rungs were known (failed, removed) are not waited for
        self.engine.mark_lost_many([t for t in self._order if t not in self._live and t not in self._unstarted])

    def ensure_ladder(self, max_resource: float | None) -> bool:
        """Build the ladder and the engine once the maximum resource is known; True when they exist.

        Args:
            max_resource: the top rung's `time_attr` (a trial's stopping criterion, or a finished trial's last
                `time_attr`); None or `≤ 0`: not known.
        """
        if self.engine is not None:
            return True
        if max_resource is None or not max_resource > 0:
            return False
        self.ladder = self.rungs.inferred(max_resource)
        self._make_engine()
        return True

    @property
    def sign(self) -> float:
        """`+1` when maximising, `−1` when minimising (the engine's values: higher is better)."""
        if self.mode is None:
            raise ValueError(needs_metric_and_mode(self.who))
        return 1.0 if self.mode == "max" else -1.0

    def _rung_of(self, t: float) -> int | None:
        m = None
        for i, s in enumerate(self.ladder.resources):  # type: ignore[union-attr]
            if t + 1e-9 >= s:
                m = i
        return m

    def _record(self, tid: str, t: float, v: float) -> list[int]:
        """Record the value(s) of rungs a result moved past (the last value at or before each rung: what a run
        reported there). Returns the rungs newly recorded."""
        eng = self.engine
        assert eng is not None and self.ladder is not None
        if tid not in eng:
            eng.register(tid)
        sign = self.sign
        prev_t, prev_v = self._last.get(tid, (-math.inf, math.nan))
        out = []
        for m, s in enumerate(self.ladder.resources):
            if prev_t + 1e-9 < s <= t + 1e-9 and eng.value(tid, m) is None:
                # the last value at or before the rung: this one if it is at the rung, else the previous one
                val = v if abs(t - s) <= 1e-9 or not math.isfinite(prev_t) else prev_v
                if math.isfinite(val):
                    eng.report(tid, m, sign * val)
                    out.append(m)
        self._last[tid] = (t, v)
        return out

    def _arrival(self, tid: str) -> int:
        return self._arrival_of.get(tid, len(self._order))

    @property
    def unstarted(self) -> KeysView[str]:
        """The trials added that have reported nothing yet (and are still live)."""
        return self._unstarted.keys()

    def waiting_to_start(self, key: str, trials: Trials) -> bool:
        """The trial has reported nothing yet and waits for a worker: PENDING, or PAUSED before it started (the
        Ray adapter holds trials not started as PAUSED, releasing them through :meth:`choose` in this order).

        Args:
            key: the trial's id.
            trials: the framework's trials.
        """
        return key in self._unstarted and trials.status(key) in (PENDING, PAUSED)

    def next_unstarted(self, trials: Trials) -> str | None:
        """The trial not started yet that starts next: the one with the lowest random key drawn when it was added
        (:attr:`RungSettings.seed`; ties by arrival) among those held back as PAUSED, else among those PENDING (the
        framework has them queued already); None: none waits. A seeded random order rather than the framework's: a
        grid listed worst first (an ascending hyper-parameter, best last) would otherwise find its incumbent last
        and race every other trial against a weak one.

        Args:
            trials: the framework's trials.
        """
        held, queued = [], []
        for k in self._unstarted:
            st = trials.status(k)
            if st == PAUSED:
                held.append(k)
            elif st == PENDING:
                queued.append(k)
        waiting = held or queued
        if not waiting:
            return None
        return min(waiting, key=lambda k: (self._start_key.get(k, 1.0), self._arrival(k)))

    def _diverged(self, tid: str, t: float, v: float) -> None:
        """A diverged run (NaN/inf at a rung) is no evidence: it is stopped and listed as uncovered."""
        eng = self.engine
        assert eng is not None
        self._last[tid] = (t, v)
        eng.register(tid)
        eng.mark_lost(tid)
        self.forget(tid)

    # ------------------------------------------------------------------ the trials' events
    def add(self, key: str, config: dict[str, Any], *, ended: bool, max_resource: float | None) -> None:
        """A trial was added (or re-added: retried after an error, or restored with the experiment).

        Args:
            key: the trial's id.
            config: its configuration (kept for :meth:`best_config`).
            ended: the framework has it finished or failed already (a restored experiment): evidence only.
            max_resource: the trial's stopping criterion on `time_attr`, which fixes the inferred ladder's top
                rung; None: none.
        """
        self._configs[key] = config
        self._unstarted[key] = None
        if key not in self._start_key:
            self._start_key[key] = float(self._rng.random())
        if key not in self._arrival_of:
            self._arrival_of[key] = len(self._order)
            self._order.append(key)
        self.ensure_ladder(max_resource)
        eng = self.engine
        if eng is not None:
            if key not in eng:
                eng.register(key)
            elif eng.status(key) == "lost":
                eng.revive(key)  # retried after an error
        if ended or (eng is not None and eng.status(key) in _ELIMINATED):
            self.forget(key)  # restored experiment: a finished or eliminated trial is evidence only
            return
        self._live.add(key)
        self._refresh_bias()  # the study may have grown into another size of the shipped bound

    def forget(self, key: str) -> None:
        """The trial is no longer waited for, started or paused (its values stay in the engine).

        Args:
            key: the trial's id.
        """
        self._unstarted.pop(key, None)
        self._live.discard(key)
        self._paused.pop(key, None)
        self._forgot(key)

    def result(self, key: str, t: float, v: float, *, can_pause: Callable[[], bool], trials: Trials) -> str:
        """The decision for a trial's result: :data:`CONTINUE`, :data:`PAUSE` or :data:`STOP`.

        Args:
            key: the trial's id.
            t: the result's `time_attr` value.
            v: the metric's value (NaN when missing or diverged).
            can_pause: whether the trial could resume where it paused (a checkpoint): asked only when pausing.
            trials: the framework's trials.

        Raises:
            RuntimeError: synchronous IISE, a trial that cannot pause or that restarted without a checkpoint.
        """
        if math.isfinite(v):
            self._values.append(v)
        self._running_again(key)  # it runs again (a later pause needs a new decision)
        self._unstarted.pop(key, None)
        eng = self.engine
        if eng is not None and key in eng and eng.status(key) in _ELIMINATED:
            self.forget(key)  # already eliminated (e.g. restarted by Tuner.restore from an older snapshot)
            return STOP
        return self._result(key, t, v, can_pause, trials)

    def complete(self, key: str, t: Any, v: float) -> None:
        """A trial's last result (it finished, or was stopped while running): record a rung it reached.

        Args:
            key: the trial's id.
            t: the result's `time_attr` value (a number).
            v: the metric's value (NaN when missing).
        """
        eng = self.engine
        if eng is None:
            self._complete_before_rungs(key, t, v)
        elif key in eng and math.isfinite(v):
            t = float(t)
            rung = self._rung_of(t)
            if rung is not None and rung > eng.reached(key):
                self._record(key, t, v)

    def drop(self, key: str, trials: Trials) -> None:
        """The trial left (complete, removed or failed): no longer waited for. A run the rule neither stopped
        nor saw reach the top rung is marked lost — uncovered in the certificate — rather than left running,
        which would keep ε undefined after the experiment ended (a crash, a trainable that returned early, a
        trial the framework stopped); a retried trial is revived by :meth:`add`.

        Args:
            key: the trial's id.
            trials: the framework's trials.
        """
        self.forget(key)
        if self.engine is not None and key in self.engine:
            self.engine.mark_lost(key)
        self._after_drop(trials)

    # ------------------------------------------------------------------ what the user reads
    def certificate(self) -> RungCertificate | None:
        """The best trial at the top rung and its certificate; None while the rungs are not known."""
        return None if self.engine is None else self.engine.certificate()

    def best_config(self) -> dict[str, Any] | None:
        """The answer's configuration at any moment — the engine's answer rule
        (:meth:`~mf_sched.racing.engine.RungEliminator.answer`, the same as MFSampler's recommendation): the best
        latest value of a trial the rule has not stopped, a finished trial unless a lower-rung one is already better
        where it stands. Once the race is over it is the certificate's trial. None before any result."""
        eng = self.engine
        key = None if eng is None else eng.answer()[0]
        return None if key is None else self._configs.get(str(key))

    def describe(self, metric: str) -> str:
        """The progress lines: the trials per status and the incumbent, then one line per rung.

        Args:
            metric: the metric's name, as the lines show it.
        """
        head = f"{self.who} ({self.kind}, {len(self._paused)} paused)"
        eng = self.engine
        if eng is None:
            return head + " — rungs not known yet"
        sign = 1.0 if self.mode != "min" else -1.0
        cert = eng.certificate()
        counts = ", ".join(f"{v} {k}" for k, v in cert.counts.items() if v)
        top = eng.M - 1
        inc, lcb = self._leader(cert)
        if inc is None:
            incumbent = "no incumbent yet (no trial at the top rung)"
        else:
            word = "lower" if sign > 0 else "upper"
            b = "" if not math.isfinite(lcb) else f" ({word} bound {sign * lcb:.4g})"
            incumbent = f"incumbent {inc} {metric}={sign * eng.value(inc, top):.4g}{b}"  # type: ignore[operator]
        eps = "" if cert.epsilon is None else f"; ε = {cert.epsilon:.3g}, δ = {cert.delta:g}"
        eps += "; certified" if cert.certified else ""
        lines = [f"{head}: {len(eng)} trials ({counts or 'none yet'}); {incumbent}{eps}"]
        keys = eng.keys
        for row in eng.rung_table():
            m = row["rung"]
            leader, best = None, -math.inf
            for k in keys:
                v = eng.value(k, m)
                if v is not None and v > best:
                    leader, best = k, v
            lead = "-" if leader is None else f"{leader} {metric}={sign * best:.4g}"
            res = row["cost"] if eng.ladder.resources is None else eng.ladder.resources[m]
            lines.append(
                f"  rung {m} ({self.time_attr}={res:g}): "
                f"{row['reported']} reported, {row['stopped'] + row['halted']} stopped here, leader {lead}"
            )
        return "\n".join(lines)

    def metrics(self, key: str, final: tuple[Any, Any] | None = None) -> dict[str, Any]:
        """The core's view of a trial as flat `race/...` fields (see
        :meth:`~mf_sched.integrations.ray.RungScheduler.race_metrics`).

        Args:
            key: the trial's id.
            final: `(time_attr value, metric value)` of the trial's last result (`done`), which is recorded
                only afterwards (:meth:`complete`): shown as `finished` at the top rung, else `lost`; None: none.
        """
        sign = 1.0 if self.mode != "min" else -1.0
        word = "race/incumbent_lower_bound" if sign > 0 else "race/incumbent_upper_bound"
        nan = math.nan
        out: dict[str, Any] = {
            "race/rung": -1, "race/status": "", "race/stopped": 0, "race/stop_rung": -1, "race/value": nan,
            "race/bound": nan, "race/incumbent": "", "race/incumbent_value": nan, word: nan,
            "race/stopped_trials": 0, "race/finished_trials": 0,
        }  # fmt: skip
        eng = self.engine
        if eng is None:
            return out
        top = eng.M - 1
        codes = eng.statuses()
        out["race/stopped_trials"] = int(np.isin(codes, (STOPPED, HALTED)).sum())
        out["race/finished_trials"] = int((codes == FINISHED).sum())
        self._incumbent_fields(out, sign, word, top)
        if key not in eng:
            return out
        r = eng.reached(key)
        st = eng.status(key)
        out["race/rung"] = r
        out["race/status"] = "paused" if st == "running" and key in self._paused else st
        out["race/stopped"] = int(st in _ELIMINATED)
        sr = eng.stop_rung(key)
        out["race/stop_rung"] = -1 if sr is None else sr
        if r >= 0:
            out["race/value"] = sign * eng.value(key, r)  # type: ignore[operator]
            u = self._optimistic(key)
            if u is not None:
                out["race/bound"] = sign * u if math.isfinite(u) else nan
        if final is not None and st == "running":
            rung = self._rung_of(float(final[0]))
            v = final[1]
            if rung is not None and rung > r and isinstance(v, (int, float)) and math.isfinite(v):
                out.update({"race/rung": rung, "race/value": float(v), "race/bound": nan})
                out["race/status"] = "finished" if rung == top else "lost"
        return out

    # ------------------------------------------------------------------ state
    def get_state(self) -> dict[str, Any]:
        """The core's state as plain data (JSON-able with :func:`mf_sched._serialize.encode`)."""
        return {
            "engine": None if self.engine is None else self.engine.state_dict(),
            "order": list(self._order),
            "pending_curves": {k: [list(p) for p in v] for k, v in self._pending_curves.items()},
            "values": self._values[-10_000:],
            "live": sorted(self._live),
            "paused": dict(self._paused),
            **self._released_state(),
            "last": {k: list(v) for k, v in self._last.items()},
            "start_keys": dict(self._start_key),
            "rng": self._rng.bit_generator.state,
            "configs": {
                k: {kk: vv for kk, vv in v.items() if isinstance(vv, (int, float, str, bool))}
                for k, v in self._configs.items()
            },  # fmt: skip
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Continue from a state of :meth:`get_state` (the engine is validated field by field).

        Args:
            state: the state; `mode` is taken from it when not known.
        """
        eng = state.get("engine")
        self.engine = None if eng is None else RungEliminator.from_state_dict(eng)
        if self.engine is not None:
            self.ladder = self.engine.ladder
            self._restored_engine(state)
        self._order = [str(k) for k in state.get("order", [])]
        self._arrival_of = {k: i for i, k in enumerate(self._order)}
        self._pending_curves = {
            str(k): [(float(a), float(b)) for a, b in v] for k, v in state.get("pending_curves", {}).items()
        }
        self._values = [float(x) for x in state.get("values", [])]
        self._live = set(state.get("live", []))
        self._paused = {str(k): int(v) for k, v in state.get("paused", {}).items()}
        self._load_released(state)
        self._last = {str(k): (float(v[0]), float(v[1])) for k, v in state.get("last", {}).items()}
        self._configs = {str(k): dict(v) for k, v in state.get("configs", {}).items()}
        # a trial added before the state was read keeps its key unless the state has one (older states have none)
        self._start_key.update({str(k): float(v) for k, v in state.get("start_keys", {}).items()})
        if state.get("rng") is not None:
            try:
                self._rng.bit_generator.state = state["rng"]
            except (TypeError, ValueError, KeyError) as e:
                raise ValueError(f"the scheduler state's random generator state is invalid: {e}") from None
        self.mode = self.mode or state.get("mode")
