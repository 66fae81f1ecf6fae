"""Ray Tune schedulers: racing (default) or IISE's synchronous elimination at the rungs of a ladder.

Install with `pip install "mf-sched[ray]"`. The two lines people write work as they are:

```python
tune.run(trainable, config=space, metric="acc", mode="max", scheduler=IISEScheduler())
tune.Tuner(trainable, param_space=space,
           tune_config=tune.TuneConfig(metric="acc", mode="max", scheduler=IISEScheduler())).fit()
```

Every scheduler drives one :class:`~mf_sched.racing.engine.RungEliminator`, keyed by `trial_id`:

* :class:`IISEScheduler` — by default **racing** (`rule="race"`) with the **anytime schedule**: a trial is
  stopped for good at a rung when even the optimistic bound on its final value (the shipped curve-aware bound:
  how much a run with its value and slope can still improve) is below the best finished trial's value; trials
  are otherwise scheduled as ASHA does (Li et al. 2020, MLSys) — a trial among the best `1/η` at its rung goes
  on, the others pause while trials wait to start — and once ASHA has nothing left to do, the paused trials
  that can still win are resumed best-first until each is stopped or finished, which certifies the answer
  (:mod:`mf_sched.racing.schedule`; with probability `≥ 1 − δ` the answer is within the tolerance of the full
  search's, :mod:`mf_sched.racing.engine`). Stopped early (`time_budget_s`, a stopper), the experiment's best trial is
  at least as good as ASHA's would have been. Pausing needs the trial's checkpoint: a trial pauses only when the
  result at its rung carries one (a function trainable that passes `checkpoint=` to `tune.report`, or a
  class trainable); otherwise it simply continues — function trainables without checkpoints get the
  asynchronous behaviour automatically. `IISEScheduler(rule="iise")` is the synchronous IISE variant: all
  live trials pause at each rung, then IISE's symmetric rule (`2ζ(m)`) decides simultaneously (needs a
  ladder with ζ and checkpointing trainables: a result at a rung without a checkpoint raises `RuntimeError`
  at the pause, before any epoch is re-run).
* :class:`AsyncIISEScheduler` — racing that never pauses (stop or continue, like ASHA).
* :class:`RungScheduler` — the general class behind both.

Zero configuration: the rungs are inferred from the maximum resource — `max_t`, the trial's stopping
criterion on `time_attr` (`tune.run(stop={"training_iteration": 27})`, `RunConfig(stop=...)`), or the
last `time_attr` of the first trial that completes — as `≈ 2% of R × 3^k`; the bound is the one shipped for
the metric's family (accuracies, error rates and percentages; losses and negated losses; `metric_family=` names
it), raised by the study's own finished trials; metric and mode come from `TuneConfig` / `tune.run`
(`set_search_properties`).

Failures: a failed trial is no longer waited for (a retried one, `FailureConfig(max_failures=k)`, is re-added
with the same id and raced again); a trial whose metric is NaN at a rung is stopped. A trial that errored, diverged
or ended below the top rung without being stopped by the rule is *lost*: listed as uncovered in the certificate,
whose ε then covers the other trials. :meth:`RungScheduler.choose_trial_to_run` has no side effects (Ray may call it
repeatedly) and never leaves every trial PAUSED. Ray does not restore scheduler state with `Tuner.restore`; add
:class:`SchedulerStateCallback` to `RunConfig(callbacks=[...])`; :func:`load_certificate` reads the certificate
back from the experiment directory (JSON, nothing unpickled).

Seeing the race: :meth:`RungScheduler.debug_string` gives Tune's (classic) progress reporter one line per rung under
the incumbent; :class:`SchedulerStateCallback` adds the scheduler's decision to every result
(:meth:`RungScheduler.race_metrics`: `race/bound`, `race/stopped`, ...), so Tune's CSV, JSON and TensorBoard
loggers record it; :func:`mf_sched.visualization.plot_race` draws the race from the experiment directory.
"""

from __future__ import annotations

import csv
import heapq
import json
import math
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from ray import tune
from ray.tune.experiment import Trial
from ray.tune.schedulers import FIFOScheduler, TrialScheduler

from mf_sched._serialize import StateFormatError, encode
from mf_sched._validate import check_choice
from mf_sched.ladder import FidelityLadder
from mf_sched.racing.bias import metric_transform
from mf_sched.racing.engine import FINISHED, HALTED, RULES, STOPPED, RungCertificate, RungEliminator
from mf_sched.racing.schedule import SCHEDULES

from ._common import (
    BOUNDS,
    DEFAULT_TOLERANCE,
    auto_race_bias,
    check_tolerance,
    default_sigma,
    no_family_message,
    resolve_rungs,
)

__all__ = [
    "RungScheduler",
    "IISEScheduler",
    "AsyncIISEScheduler",
    "SchedulerStateCallback",
    "STATE_FILE",
    "load_certificate",
    "curves_from_results",
]

_SHOULD_CHECKPOINT = "should_checkpoint"  # ray.tune.result.SHOULD_CHECKPOINT: the result carries a checkpoint
_LIVE = (Trial.PENDING, Trial.RUNNING, Trial.PAUSED)
_NEEDS_CHECKPOINT = (
    "Report a checkpoint with every tune.report(..., checkpoint=...) and restore it from tune.get_checkpoint() "
    "(class trainables do this by themselves), or use the default IISEScheduler() (racing), which pauses only "
    "trials that have a checkpoint, or AsyncIISEScheduler(ladder, rule='iise'), which never pauses."
)


def _k_bucket(n: int | None) -> int:
    """Which study size of the shipped bound a count of trials selects (0: unknown)."""
    return 0 if n is None else (8 if n < 24 else 24 if n < 64 else 64)


def _is_class_trainable(trial: Trial) -> bool:
    """A class trainable saves its own checkpoint when paused; a function trainable only with `checkpoint=`."""
    try:
        from ray.tune.registry import get_trainable_cls
        from ray.tune.trainable.function_trainable import FunctionTrainable

        cls = get_trainable_cls(trial.trainable_name)
        return isinstance(cls, type) and not issubclass(cls, FunctionTrainable)
    except Exception:  # an unregistered stub trial, or a Ray without these internals: assume no checkpoint
        return False


class RungScheduler(FIFOScheduler):
    """Racing or IISE's elimination at rungs (see the module docstring).

    Args:
        ladder: the rungs (`resources`, in units of `time_attr`) and ζ; default: inferred.
        calibration: a :class:`~mf_sched.curves.calibration.Calibration` whose ladder is used.
        resources: the rungs alone (racing with the ζ⁺ prior); default: inferred.
        metric: the result field to optimise, as Ray's schedulers; may come from `TuneConfig` / `tune.run`.
        mode: `"max"` or `"min"`, as Ray's schedulers; may come from `TuneConfig` / `tune.run`.
        time_attr: the result field that measures progress (default `"training_iteration"`).
        rule: `"race"` (default) or `"iise"` (needs a ladder with ζ).
        race_bias: ζ⁺ (:class:`~mf_sched.racing.bias.RaceBias`, a list, a RaceCalibration); default the shipped prior.
        max_t: the top resource of the inferred ladder, as in ASHA (default: from the trials' stopping criterion
            or the first completed trial).
        min_t: the first rung of the inferred ladder (default `≈ 2%` of `max_t`).
        reduction_factor: `η`, the ratio of consecutive rungs of the inferred ladder and ASHA's cut (default 3).
        delta: confidence δ.
        sigma: seed-to-seed σ of the metric (one number or one per rung).
        n_trials: the number of trials if known (δ split δ/(KM)); default open-ended (6δ/(π²k²), k in order of
            arrival).
        fixed_arms: the trials' configurations are fixed before any result (a grid, a random search without a
            searcher): the racing radius then needs no union over trials.
        bias: `rule="iise"` only: `"zeta"` or `"gamma"`.
        eta: `rule="iise"` only: the heuristic halving cut.
        synchronous: `rule="iise"` only (default True): pause every trial at each rung.
        pause: `rule="race"` only (default True): best-first promotion by pausing at rungs (needs checkpoints;
            a trial without one just continues).
        order: `rule="race"` only: which paused trial resumes first once ASHA's work is done, `"depth"`
            (default: the highest rung, then the best value), `"estimate"` (the most promising) or `"bound"`
            (the most optimistic; see :class:`~mf_sched.racing.engine.RungEliminator`).
        schedule: `rule="race"` only: `"anytime"` (default: ASHA's promotions with `reduction_factor` first,
            then the trials not started, then best-first; :mod:`mf_sched.racing.schedule`) or `"best-first"`.
        tolerance: `rule="race"` only: the shipped curve-aware bound keeps, with probability `1 − δ`, an
            answer within this relative tolerance of the full search's (default 0.005: 0.5%).
        metric_family: how to read the metric when it is not recognised from its values (one of
            :data:`mf_sched.racing.bias.NAMED_FAMILIES`, e.g. `"percent"`, `"negated_loss"`).
        bound: `"curve"` (default: the curve-aware bound) or `"zeta+"` (the unconditional ζ⁺ prior).

    Example:
        >>> from mf_sched.integrations.ray import IISEScheduler
        >>> s = IISEScheduler(metric="acc", mode="max", max_t=27)
        >>> s.ladder.resources, s.rule
        ((1.0, 3.0, 9.0, 27.0), 'race')
    """

    _supports_buffered_results = False

    def __init__(
        self,
        ladder: FidelityLadder | None = None,
        *,
        calibration: Any = None,
        resources: Sequence[float] | None = None,
        metric: str | None = None,
        mode: str | None = None,
        time_attr: str = "training_iteration",
        rule: str = "race",
        race_bias: Any = None,
        max_t: float | None = None,
        min_t: float | None = None,
        reduction_factor: float = 3,
        delta: float = 0.05,
        sigma: float | Sequence[float] | None = None,
        n_trials: int | None = None,
        fixed_arms: bool = False,
        bias: str = "zeta",
        eta: float | None = None,
        synchronous: bool | None = None,
        pause: bool = True,
        order: str = "depth",
        schedule: str = "anytime",
        tolerance: float = DEFAULT_TOLERANCE,
        metric_family: str | None = None,
        bound: str = "curve",
    ) -> None:
        super().__init__()
        if rule not in RULES:
            raise ValueError(f"rule = {rule!r} is unknown; accepted: {', '.join(map(repr, RULES))}")
        self.rule = rule
        self._rungs = resolve_rungs(
            type(self).__name__, ladder=ladder, calibration=calibration, resources=resources, sigma=sigma,
            race_bias=race_bias, max_resource=max_t, min_resource=min_t, reduction_factor=reduction_factor,
            zeta_needed_by="rule = 'iise'" if rule == "iise" else None, names=("max_t", "min_t"),
        )  # fmt: skip
        if mode is not None and mode not in ("min", "max"):
            raise ValueError(f"mode = {mode!r} is unknown; accepted: 'min', 'max'")
        if synchronous is None:
            synchronous = rule == "iise"
        if synchronous and rule == "race":
            raise ValueError("synchronous = True applies to rule = 'iise'; racing needs no barrier")
        if rule == "race" and (eta is not None or bias != "zeta"):
            raise ValueError("bias= and eta= apply to rule = 'iise' only")
        self._metric, self._mode = metric, mode
        self.time_attr = time_attr
        self.synchronous = bool(synchronous)
        self.pause = bool(pause) and rule == "race"
        self._engine_kw = dict(delta=delta, n_arms=n_trials)
        if rule == "iise":
            self._engine_kw.update(bias=bias, eta=eta)
        else:
            self._engine_kw.update(fixed_arms=bool(fixed_arms), order=order)
        self.schedule = check_choice("schedule", schedule, SCHEDULES)
        self.tolerance = check_tolerance(tolerance)
        if metric_family is not None:
            metric_transform([], "max", metric_family)  # fails now on an unknown name
        self.metric_family = metric_family
        self.bound = check_choice("bound", bound, BOUNDS)
        self.reduction_factor = float(reduction_factor)
        self._bias_key: tuple[Any, ...] | None = None  # (family, K bucket) the shipped bound was chosen for
        self._warned_family = False
        self.ladder: FidelityLadder | None = self._rungs.initial_ladder()
        self.engine: RungEliminator | None = None
        self._pending_curves: dict[str, list[tuple[float, float]]] = {}  # results seen before the ladder is known
        self._order: list[str] = []  # trial ids in order of arrival (their δ_k index)
        self._arrival_of: dict[str, int] = {}
        self._values: list[float] = []  # raw metric values (the metric's family)
        self._configs: dict[str, dict[str, Any]] = {}
        self._trials: dict[str, Trial] = {}  # trial id -> Trial (to check statuses without scanning every trial)
        self._unstarted: dict[str, None] = {}  # added, no result yet (ordered: Ray's order of addition)
        self._heap: list[tuple[float, int, str]] = []  # paused trials by priority (lazy: stale entries skipped)
        self._heap_bias: Any = None  # the ζ⁺ the heap's priorities were computed with
        self._last: dict[str, tuple[float, float]] = {}  # last (time_attr, value) per trial
        self._paused: dict[str, int] = {}  # trial id -> rung it paused at
        self._live: set[str] = set()  # iise: trials the rungs wait for
        self._to_unpause: set[str] = set()  # iise: released after a rung decision
        self._resumed_at: dict[str, float] = {}  # iise: time_attr at which a released trial was paused
        self._processing = False
        if self.ladder is not None:
            self._make_engine()

    # ------------------------------------------------------------------ engine and ladder
    def _make_engine(self) -> None:
        lad = self.ladder
        assert lad is not None
        sigma = self._rungs.sigma if self._rungs.sigma is not None else default_sigma(self._values)
        if self.rule == "iise":
            self.engine = RungEliminator(lad, sigma=sigma, **self._engine_kw)
        else:
            bias = self._rungs.given_bias(lad.M)
            self._auto_bias = bias is None
            self._family_values = len(self._values)
            if bias is None:
                bias = self._shipped_bias()
            self.engine = RungEliminator(lad, sigma=sigma, rule="race", race_bias=bias, refine=self._auto_bias,
                                         **self._engine_kw)  # fmt: skip
        for tid in self._order:
            self.engine.register(tid)
        for tid, pts in self._pending_curves.items():
            self._last.pop(tid, None)
            for t, v in pts:
                self._record(tid, t, v)
        self._pending_curves.clear()
        # trials that left before the rungs were known (failed, removed) are not waited for
        self.engine.mark_lost_many([t for t in self._order if t not in self._live and t not in self._unstarted])

    def _ensure_ladder(self, trial: Trial | None = None, result: dict[str, Any] | None = None) -> bool:
        """Build the ladder and engine once the maximum resource is known (from the trial's stopping criterion,
        or a completed trial's last `time_attr`)."""
        if self.engine is not None:
            return True
        R = None
        if trial is not None:
            crit = getattr(trial, "stopping_criterion", None) or {}
            if isinstance(crit.get(self.time_attr), (int, float)):
                R = float(crit[self.time_attr])
        if R is None and result is not None and self.time_attr in result:
            R = float(result[self.time_attr])
        if R is None or not R > 0:
            return False
        self.ladder = self._rungs.inferred(R)
        self._make_engine()
        return True

    def _n_arms(self) -> int | None:
        """The study size the shipped bound is chosen for: `n_trials`, else the trials added so far."""
        n = self._engine_kw.get("n_arms")
        return int(n) if n is not None else (len(self._order) or None)

    def _shipped_bias(self) -> Any:
        """The shipped bound for the metric family of the values reported so far (see :func:`auto_race_bias`);
        warns once when no family fits."""
        lad, mode = self.ladder, self._mode or "max"
        assert lad is not None
        fam = metric_transform(self._values, mode, self.metric_family)
        K = self._n_arms()
        self._bias_key = (None if fam is None else fam.kind, _k_bucket(K))
        if fam is None and any(math.isfinite(v) for v in self._values) and not self._warned_family:
            self._warned_family = True
            warnings.warn(no_family_message(mode, type(self).__name__), stacklevel=4)
        return auto_race_bias(lad, self._values, mode, n_arms=K, alpha=float(self._engine_kw["delta"]),
                              tolerance=self.tolerance, family=self.metric_family, bound=self.bound,
                              fit=self._rungs.fit)  # fmt: skip

    def _refresh_bias(self) -> None:
        """With the shipped bound: re-choose it when the metric's values reveal another family (a loss that first
        reported values below 1), or the study grew into another size bucket of the bound; never back to "no
        bound" once a family fitted. A bound the study's curves raised keeps its raised λ."""
        if self.rule != "race" or not getattr(self, "_auto_bias", False) or self.engine is None:
            return
        if (
            len(self._values) < 2 * max(1, self._family_values)
            and self._bias_key is not None
            and (self._bias_key[1] == _k_bucket(self._n_arms()))
        ):
            return
        self._family_values = len(self._values)
        fam = metric_transform(self._values, self._mode or "max", self.metric_family)
        key = (None if fam is None else fam.kind, _k_bucket(self._n_arms()))
        if key == self._bias_key or fam is None:
            return
        new = self._shipped_bias()
        old = self.engine.curve_bound
        if old is not None and old.raised_by and getattr(new, "lam", None) is not None and new.lam < old.lam:
            new = new.raised(old.lam, old.raised_by)
        self.engine.set_race_bias(new)

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
        sign = self._sign()
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

    # ------------------------------------------------------------------ Ray API
    def set_search_properties(self, metric: str | None, mode: str | None, **spec: Any) -> bool:
        if self._metric and metric and metric != self._metric or self._mode and mode and mode != self._mode:
            return False
        self._metric = self._metric or metric
        self._mode = self._mode or mode
        if self._mode is not None and self._mode not in ("min", "max"):
            raise ValueError(f"mode = {self._mode!r} is unknown; accepted: 'min', 'max'")
        return True

    def _sign(self) -> float:
        if self._metric is None or self._mode is None:
            raise ValueError(
                f"{type(self).__name__} needs metric and mode (in the scheduler, TuneConfig(metric=, mode=) or "
                "tune.run(metric=, mode=))"
            )
        return 1.0 if self._mode == "max" else -1.0

    def on_trial_add(self, tune_controller: Any, trial: Trial) -> None:
        tid = trial.trial_id
        self._configs[tid] = dict(trial.config) if isinstance(trial.config, dict) else {}
        self._trials[tid] = trial
        self._unstarted[tid] = None
        if tid not in self._arrival_of:
            self._arrival_of[tid] = len(self._order)
            self._order.append(tid)
        self._ensure_ladder(trial)
        eng = self.engine
        if eng is not None:
            if tid not in eng:
                eng.register(tid)
            elif eng.status(tid) == "lost":
                eng.revive(tid)  # retried after an error
        if trial.status in (Trial.TERMINATED, Trial.ERROR) or (
            eng is not None and eng.status(tid) in ("stopped", "halted")
        ):
            self._forget(tid)  # restored experiment: a finished or eliminated trial is evidence only
            return
        self._live.add(tid)
        self._refresh_bias()  # the study may have grown into another size of the shipped bound

    def _forget(self, tid: str) -> None:
        self._unstarted.pop(tid, None)
        self._live.discard(tid)
        self._paused.pop(tid, None)
        self._to_unpause.discard(tid)
        self._resumed_at.pop(tid, None)

    def on_trial_result(self, tune_controller: Any, trial: Trial, result: dict[str, Any]) -> str:
        sign = self._sign()  # noqa: F841 - raises early without metric/mode
        tid = trial.trial_id
        if self._metric not in result or self.time_attr not in result:
            return TrialScheduler.CONTINUE
        t = float(result[self.time_attr])
        raw = result[self._metric]
        v = float(raw) if raw is not None else math.nan
        if math.isfinite(v):
            self._values.append(v)
        self._to_unpause.discard(tid)  # it runs again: released (a later pause needs a new decision)
        self._unstarted.pop(tid, None)
        eng = self.engine
        if eng is not None and tid in eng and eng.status(tid) in ("stopped", "halted"):
            self._forget(tid)  # already eliminated (e.g. restarted by Tuner.restore from an older snapshot)
            return TrialScheduler.STOP
        if self.rule == "iise":
            return self._iise_result(tune_controller, trial, t, v, result)
        if eng is None:
            self._pending_curves.setdefault(tid, []).append((t, v))
            self._last[tid] = (t, v)
            return TrialScheduler.CONTINUE
        self._paused.pop(tid, None)
        self._refresh_bias()
        rung = self._rung_of(t)
        before = eng.reached(tid) if tid in eng else -1
        if rung is None or rung <= before:
            self._last[tid] = (t, v)
            return TrialScheduler.CONTINUE  # between rungs
        if not math.isfinite(v):
            self._diverged(tid, t, v)
            return TrialScheduler.STOP
        self._record(tid, t, v)
        if rung == self.ladder.top:  # type: ignore[union-attr]
            self._forget(tid)
            self._eliminate(tune_controller)
            return TrialScheduler.STOP
        if eng.should_stop(tid):
            self._forget(tid)
            return TrialScheduler.STOP
        if self.pause and self._can_pause(trial, result) and self._should_pause(tune_controller, tid):
            self._paused[tid] = rung
            heapq.heappush(self._heap, (-eng.priority(tid), self._arrival(tid), tid))
            return TrialScheduler.PAUSE
        return TrialScheduler.CONTINUE

    def _should_pause(self, tune_controller: Any, tid: str) -> bool:
        """The anytime schedule (:mod:`mf_sched.racing.schedule`): a trial that ASHA would promote goes on at
        once; else it pauses when other work waits — a trial not started, a paused trial ASHA would promote, or
        (once ASHA's work is done) a paused trial with a higher priority. `"best-first"`: the last two only."""
        eng = self.engine
        assert eng is not None
        if self.schedule == "best-first":
            return self._better_waiting(tune_controller, tid)
        promos = eng.promotable(self.reduction_factor)
        if tid in promos:
            return False
        if any(self._status_of(t) == Trial.PAUSED for t in promos):
            return True
        return self._better_waiting(tune_controller, tid)

    def _diverged(self, tid: str, t: float, v: float) -> None:
        """A diverged run (NaN/inf at a rung) is no evidence: it is stopped and listed as uncovered."""
        eng = self.engine
        assert eng is not None
        self._last[tid] = (t, v)
        eng.register(tid)
        eng.mark_lost(tid)
        self._forget(tid)

    def _can_pause(self, trial: Trial, result: dict[str, Any]) -> bool:
        return bool(result.get(_SHOULD_CHECKPOINT)) or _is_class_trainable(trial)

    def _better_waiting(self, tune_controller: Any, tid: str) -> bool:
        """A trial not started yet, or a paused one with a higher priority (`order`), waits for a worker.
        O(trials not started + trials paused), not O(all trials)."""
        eng = self.engine
        assert eng is not None
        if any(self._status_of(t) == Trial.PENDING for t in self._unstarted if t != tid):
            return True
        best = self._best_paused()
        return best is not None and best != tid and eng.priority(best) > eng.priority(tid)

    def _status_of(self, tid: str) -> str | None:
        t = self._trials.get(tid)
        return None if t is None else t.status

    def _eliminate(self, tune_controller: Any) -> None:
        """Race every live trial against the incumbent; stop the paused losers without resuming them."""
        eng = self.engine
        if eng is None or self.rule != "race":
            return
        if eng.curve_bound is not None and eng.curve_bound.raised_by:
            # the study's curves raised the bound and the engine gave stopped runs back; a trial Ray has ended
            # cannot run again: it is uncovered (the certificate, voided by the violation, lists it)
            gone = (Trial.TERMINATED, Trial.ERROR)
            ended = [k for k in eng.keys if eng.status(k) == "running" and k not in self._live
                     and k not in self._unstarted and self._status_of(k) in gone]  # fmt: skip
            eng.mark_lost_many(ended)
        stopped = set(eng.eliminate())
        if not stopped:
            return
        self._processing = True
        try:
            for t in tune_controller.get_trials():
                if t.trial_id in stopped and t.status in (Trial.PAUSED, Trial.PENDING):
                    self._forget(t.trial_id)
                    tune_controller.stop_trial(t)
        finally:
            self._processing = False

    def on_trial_complete(self, tune_controller: Any, trial: Trial, result: dict[str, Any]) -> None:
        tid = trial.trial_id
        if result and self._metric in result and self.time_attr in result:
            v = result[self._metric]
            v = float(v) if v is not None else math.nan
            if self.engine is None and self.rule == "race":
                self._pending_curves.setdefault(tid, []).append((float(result[self.time_attr]), v))
                self._ensure_ladder(result=result)  # the first completed trial fixes the maximum resource
            elif self.engine is not None and tid in self.engine and math.isfinite(v):
                t = float(result[self.time_attr])
                rung = self._rung_of(t)
                if rung is not None and rung > self.engine.reached(tid):
                    self._record(tid, t, v)
        self._drop(tune_controller, trial)  # ended below the top rung, not stopped: uncovered
        self._eliminate(tune_controller)

    def on_trial_remove(self, tune_controller: Any, trial: Trial) -> None:
        self._drop(tune_controller, trial)

    def on_trial_error(self, tune_controller: Any, trial: Trial) -> None:
        self._drop(tune_controller, trial)

    def _drop(self, tune_controller: Any, trial: Trial) -> None:
        """The trial left (complete, removed or failed): no longer waited for. A run the rule neither stopped
        nor saw reach the top rung is marked lost — uncovered in the certificate — rather than left running,
        which would keep ε undefined after the experiment ended (a crash, a trainable that returned early, a
        trial Ray stopped); a retried trial is revived by :meth:`on_trial_add`."""
        tid = trial.trial_id
        if self._processing:
            return
        self._forget(tid)
        if self.engine is not None and tid in self.engine:
            self.engine.mark_lost(tid)
        if self.rule == "iise":
            self._release(tune_controller)

    def choose_trial_to_run(self, tune_controller: Any) -> Trial | None:
        """PENDING trials first (every trial's first rung), then the paused trial with the highest optimistic
        bound that can still win (`rule="iise"`: the trials a rung decision released). No side effects; when
        nothing else can run, a paused trial is returned rather than leaving every trial PAUSED."""
        if self.rule == "race":
            return self._race_choose(tune_controller)
        trials = tune_controller.get_trials()
        for t in trials:
            if t.status == Trial.PENDING:
                return t
        paused = [t for t in trials if t.status == Trial.PAUSED]
        if not paused:
            return None
        if self.rule == "iise":
            for t in paused:
                if t.trial_id in self._to_unpause:
                    return t
            if any(t.status == Trial.RUNNING for t in trials):
                return None
            # never all-PAUSED: decide the lowest rung with what is there (iise), or resume the best
            return self._iise_unblock(tune_controller, paused)
        return None  # pragma: no cover - both rules are handled above

    def _arrival(self, tid: str) -> int:
        return self._arrival_of.get(tid, len(self._order))

    def _best_paused(self) -> str | None:
        """The paused trial that ranks first, from the lazy heap (stale entries are dropped, entries whose
        priority changed are re-pushed: bookkeeping only, the same answer as a full ranking)."""
        eng = self.engine
        if eng is None:
            return next((t for t in self._paused if self._status_of(t) == Trial.PAUSED), None)
        bias = eng.curve_bound if eng.curve_bound is not None else eng.race_bias
        if self._heap_bias is not bias:  # the bound changed (refined, another family): every priority did
            self._heap = [(-eng.priority(t), self._arrival(t), t) for t in self._paused if t in eng]
            heapq.heapify(self._heap)
            self._heap_bias = bias
        h = self._heap
        while h:
            negp, arrival, tid = h[0]
            if tid not in self._paused or self._status_of(tid) != Trial.PAUSED or eng.status(tid) != "running":
                heapq.heappop(h)
                continue
            p = eng.priority(tid)
            if -negp != p:
                heapq.heapreplace(h, (-p, arrival, tid))
                continue
            return tid
        return None

    def _race_choose(self, tune_controller: Any) -> Trial | None:
        """Racing: a paused trial ASHA would promote (`schedule="anytime"`), else the first PENDING trial (in
        Ray's order), else the paused trial that ranks first; all trials are scanned only when none is found (a
        trial Ray added or paused behind the scheduler's back must not be left waiting)."""
        eng = self.engine
        if eng is not None and self.schedule == "anytime":
            for tid in eng.promotable(self.reduction_factor):  # ASHA's promotions first
                if self._status_of(tid) == Trial.PAUSED:
                    return self._trials[tid]
        for tid in self._unstarted:
            if self._status_of(tid) == Trial.PENDING:
                return self._trials[tid]
        best = self._best_paused()
        if best is not None:
            return self._trials[best]
        trials = tune_controller.get_trials()
        for t in trials:
            if t.status == Trial.PENDING:
                return t
        others = [t for t in trials if t.status == Trial.PAUSED]
        live = [t for t in others if eng is None or t.trial_id not in eng or eng.status(t.trial_id) == "running"]
        if live:
            best = eng.first([t.trial_id for t in live if t.trial_id in eng]) if eng is not None else None
            return next((t for t in live if t.trial_id == best), live[0])
        if others and not any(t.status == Trial.RUNNING for t in trials):
            return others[0]  # eliminated but not yet stopped (a restore): it stops at its next result
        return None

    def debug_string(self) -> str:
        """What Tune's progress reporter shows (`tune.run` / `Tuner` with the classic reporter,
        `RAY_AIR_NEW_OUTPUT=0`): the trials per status and the incumbent, then one line per rung with how many
        trials reported there, how many the rule stopped there, and the leader at that rung."""
        kind = "racing" if self.rule == "race" else ("synchronous IISE" if self.synchronous else "asynchronous IISE")
        head = f"{type(self).__name__} ({kind}, {len(self._paused)} paused)"
        eng = self.engine
        if eng is None:
            return head + " — rungs not known yet"
        sign = 1.0 if self._mode != "min" else -1.0
        metric = self._metric or "metric"
        cert = eng.certificate()
        counts = ", ".join(f"{v} {k}" for k, v in cert.counts.items() if v)
        top = eng.M - 1
        inc, lcb = eng.incumbent() if self.rule == "race" else (cert.key, math.nan)
        if inc is None:
            incumbent = "no incumbent yet (no trial at the top rung)"
        else:
            word = "lower" if sign > 0 else "upper"
            b = "" if not math.isfinite(lcb) else f" ({word} bound {sign * lcb:.4g})"
            incumbent = f"incumbent {inc} {metric}={sign * eng.value(inc, top):.4g}{b}"  # type: ignore[operator]
        eps = "" if cert.epsilon is None else f"; ε = {cert.epsilon:.3g}, δ = {cert.delta:g}"
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

    def race_metrics(self, trial_id: str, result: dict[str, Any] | None = None) -> dict[str, Any]:
        """The scheduler's view of a trial after its latest result, as flat result fields (`race/...`) that
        :class:`SchedulerStateCallback` adds to every result, so that Tune's loggers (CSV, JSON, TensorBoard)
        record the decisions: `race/rung` (highest rung reached, −1: none), `race/status` (running, paused,
        stopped, halted, finished, lost), `race/stopped` (1 once the rule stopped it), `race/stop_rung`,
        `race/value` (its value at its highest rung), `race/bound` (racing: the best final value it could still
        reach), `race/incumbent` (trial id), `race/incumbent_value` and `race/incumbent_lower_bound`
        (`race/incumbent_upper_bound` when minimising), `race/stopped_trials` and `race/finished_trials`.
        Every field is present from the first result (NaN, −1 or `""` when unknown), as CSV headers need.
        `result`: the trial's last result (`done`), which the scheduler records only afterwards, in
        `on_trial_complete`: its rung and value are shown, as `finished` at the top rung, else `lost`."""
        sign = 1.0 if self._mode != "min" else -1.0
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
        if self.rule == "race":
            inc, lcb = eng.incumbent()
            if inc is not None:
                out.update(
                    {"race/incumbent": str(inc), "race/incumbent_value": sign * eng.value(inc, top), word: sign * lcb}
                )  # type: ignore[operator]
        if trial_id not in eng:
            return out
        r = eng.reached(trial_id)
        st = eng.status(trial_id)
        out["race/rung"] = r
        out["race/status"] = "paused" if st == "running" and trial_id in self._paused else st
        out["race/stopped"] = int(st in ("stopped", "halted"))
        sr = eng.stop_rung(trial_id)
        out["race/stop_rung"] = -1 if sr is None else sr
        if r >= 0:
            out["race/value"] = sign * eng.value(trial_id, r)  # type: ignore[operator]
            if self.rule == "race":
                u = eng.upper_bound(trial_id)
                out["race/bound"] = sign * u if math.isfinite(u) else nan
        if result is not None and result.get("done") and st == "running" and self.time_attr in result:
            rung = self._rung_of(float(result[self.time_attr]))
            v = result.get(self._metric) if self._metric else None
            if rung is not None and rung > r and isinstance(v, (int, float)) and math.isfinite(v):
                out.update({"race/rung": rung, "race/value": float(v), "race/bound": nan})
                out["race/status"] = "finished" if rung == top else "lost"
        return out

    # ------------------------------------------------------------------ the synchronous IISE variant
    def _iise_result(self, tune_controller: Any, trial: Trial, t: float, v: float, result: dict[str, Any]) -> str:
        tid = trial.trial_id
        eng = self.engine
        assert eng is not None
        if tid in self._paused and self.synchronous:
            return TrialScheduler.PAUSE  # still waiting for its rung's decision (e.g. after Tuner.restore)
        if tid in self._resumed_at:
            at = self._resumed_at.pop(tid)
            if t <= at + 1e-9:
                raise RuntimeError(
                    f"trial {tid} was paused at {self.time_attr} = {at:g} and resumed at {t:g}: it restarted "
                    f"without a checkpoint and would re-run epochs. {_NEEDS_CHECKPOINT}"
                )
        rung = self._rung_of(t)
        reached = eng.reached(tid) if tid in eng else -1
        if rung is None or rung <= reached:
            self._last[tid] = (t, v)
            return TrialScheduler.CONTINUE
        if not math.isfinite(v):
            self._diverged(tid, t, v)
            self._release(tune_controller)  # the rung no longer waits for it
            return TrialScheduler.STOP
        self._record(tid, t, v)
        if rung == self.ladder.top:  # type: ignore[union-attr]
            self._live.discard(tid)
            self._release(tune_controller)
            return TrialScheduler.STOP
        if not self.synchronous:
            if eng.should_stop(tid):
                self._live.discard(tid)
                return TrialScheduler.STOP
            return TrialScheduler.CONTINUE
        if self._rung_complete(rung):
            stopped = set(self._decide(tune_controller, rung, current=tid))
            if tid in stopped:
                self._live.discard(tid)
                return TrialScheduler.STOP
            return TrialScheduler.CONTINUE
        if not self._can_pause(trial, result):
            # pausing it would restart it from scratch: refuse now, before any epoch is re-run
            raise RuntimeError(
                f"synchronous IISE pauses every trial at each rung, but trial {tid} reported rung {rung} "
                f"({self.time_attr} = {t:g}) without a checkpoint: resumed, it would restart from scratch and "
                f"re-run epochs. {_NEEDS_CHECKPOINT}"
            )
        self._paused[tid] = rung
        return TrialScheduler.PAUSE

    def _rung_complete(self, rung: int) -> bool:
        eng = self.engine
        return all(tid in eng and eng.reached(tid) >= rung for tid in self._live)  # type: ignore[operator]

    def _decide(self, tune_controller: Any, rung: int, current: str | None = None) -> list[str]:
        """Decide `rung` among the live trials waiting there; stop losers, release survivors."""
        eng = self.engine
        assert eng is not None
        waiting = [tid for tid in self._live if tid in eng and eng.reached(tid) == rung]
        if current is not None and current not in waiting:
            waiting.append(current)
        stopped = eng.decide_rung(rung, keys=waiting)
        self._processing = True
        try:
            for tid in waiting:
                if tid in self._paused and self._paused[tid] == rung:
                    del self._paused[tid]
                    if tid in stopped or rung == self.ladder.top:  # type: ignore[union-attr]
                        self._live.discard(tid)
                        trial = self._find(tune_controller, tid)
                        if trial is not None and trial.status in _LIVE:
                            tune_controller.stop_trial(trial)
                    else:
                        self._to_unpause.add(tid)
                        self._resumed_at[tid] = self._last.get(tid, (self.ladder.resources[rung], 0.0))[0]  # type: ignore[union-attr]
        finally:
            self._processing = False
        for tid in stopped:
            self._live.discard(tid)
        return [str(k) for k in stopped]

    @staticmethod
    def _find(tune_controller: Any, tid: str) -> Trial | None:
        for t in tune_controller.get_trials():
            if t.trial_id == tid:
                return t
        return None

    def _release(self, tune_controller: Any) -> None:
        """Decide every rung whose live trials have all arrived (after a trial left)."""
        if not self.synchronous:
            return
        for rung in sorted(set(self._paused.values())):
            if self._rung_complete(rung):
                self._decide(tune_controller, rung)

    def _iise_unblock(self, tune_controller: Any, paused: list[Trial]) -> Trial | None:
        """Nothing runs and every live trial is paused: decide the lowest rung with the values present, and
        stop paused trials nobody waits for (eliminated, or no longer live). Ray would otherwise hang."""
        eng = self.engine
        assert eng is not None
        self._processing = True
        try:
            for t in paused:
                tid = t.trial_id
                if tid not in self._live or (tid in eng and eng.status(tid) in ("stopped", "halted")):
                    self._paused.pop(tid, None)
                    tune_controller.stop_trial(t)
        finally:
            self._processing = False
        paused = [t for t in tune_controller.get_trials() if t.status == Trial.PAUSED]
        if not paused:
            return None
        rung = min(self._paused.get(t.trial_id, 0) for t in paused)
        self._live &= {t.trial_id for t in tune_controller.get_trials() if t.status in _LIVE}
        self._decide(tune_controller, rung)
        for t in tune_controller.get_trials():
            if t.status == Trial.PAUSED and t.trial_id in self._to_unpause:
                return t
        return None

    # ------------------------------------------------------------------ answer and state
    def certificate(self) -> RungCertificate | None:
        """The best trial at the top rung and its certificate (:class:`~mf_sched.racing.engine.RungCertificate`); None
        while the rungs are not known."""
        return None if self.engine is None else self.engine.certificate()

    def best_config(self) -> dict[str, Any] | None:
        """The configuration of the best trial at the top rung (None before one finished)."""
        c = self.certificate()
        return None if c is None or c.key is None else self._configs.get(str(c.key))

    def get_state(self) -> dict[str, Any]:
        return {
            "engine": None if self.engine is None else self.engine.state_dict(),
            "order": list(self._order),
            "pending_curves": {k: [list(p) for p in v] for k, v in self._pending_curves.items()},
            "values": self._values[-10_000:],
            "live": sorted(self._live),
            "paused": dict(self._paused),
            "to_unpause": sorted(self._to_unpause),
            "resumed_at": dict(self._resumed_at),
            "last": {k: list(v) for k, v in self._last.items()},
            "configs": {
                k: {kk: vv for kk, vv in v.items() if isinstance(vv, (int, float, str, bool))}
                for k, v in self._configs.items()
            },  # fmt: skip
            "metric": self._metric,
            "mode": self._mode,
            "time_attr": self.time_attr,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        eng = state.get("engine")
        self.engine = None if eng is None else RungEliminator.from_state_dict(eng)
        if self.engine is not None:
            self.ladder = self.engine.ladder
            self._auto_bias = self.rule == "race" and self._rungs.race_bias is None
            self._family_values = len(state.get("values", []))
        self._order = [str(k) for k in state.get("order", [])]
        self._arrival_of = {k: i for i, k in enumerate(self._order)}
        self._pending_curves = {
            str(k): [(float(a), float(b)) for a, b in v] for k, v in state.get("pending_curves", {}).items()
        }
        self._values = [float(x) for x in state.get("values", [])]
        self._live = set(state.get("live", []))
        self._paused = {str(k): int(v) for k, v in state.get("paused", {}).items()}
        self._to_unpause = set(state.get("to_unpause", []))
        self._resumed_at = {str(k): float(v) for k, v in state.get("resumed_at", {}).items()}
        self._last = {str(k): (float(v[0]), float(v[1])) for k, v in state.get("last", {}).items()}
        self._configs = {str(k): dict(v) for k, v in state.get("configs", {}).items()}
        self._metric = self._metric or state.get("metric")
        self._mode = self._mode or state.get("mode")


class IISEScheduler(RungScheduler):
    """The default scheduler: racing, best-first with pausing (`rule="iise"`: synchronous IISE); see
    :class:`RungScheduler`."""


class AsyncIISEScheduler(RungScheduler):
    """Racing that never pauses (stop or continue, like ASHA; no checkpoints needed); see :class:`RungScheduler`.

    Args:
        ladder: as :class:`RungScheduler`.
        **kwargs: every other argument of :class:`RungScheduler`; `pause` is always False (with `rule="iise"`,
            `synchronous` defaults to False).
    """

    def __init__(self, ladder: FidelityLadder | None = None, **kwargs: Any) -> None:
        if kwargs.get("rule", "race") == "iise":
            kwargs.setdefault("synchronous", False)
        else:
            kwargs["pause"] = False
        super().__init__(ladder, **kwargs)


STATE_FILE = "mf_sched-scheduler-state.json"
_STATE_FORMAT = "mf_sched.ray.SchedulerState/1"


class SchedulerStateCallback(tune.Callback):
    """Saves a :class:`RungScheduler`'s state with every experiment checkpoint and restores it on
    `Tuner.restore` (Ray keeps no scheduler state of its own). Add it to `RunConfig(callbacks=[...])`.

    Ray stores callback state with `cloudpickle` (`callback-states-*.pkl` in the experiment directory) and
    reads it back on `Tuner.restore`. So that the state can be read without unpickling anything, the callback
    also writes it as validated JSON, :data:`STATE_FILE`, into the driver's staging copy of the experiment
    directory at every experiment checkpoint; Ray syncs `*.json` files there to the experiment directory
    (local or remote storage). :func:`load_certificate` reads it.

    Args:
        scheduler: the scheduler of the experiment (the same object passed to `TuneConfig(scheduler=...)`).

    Example:
        >>> from mf_sched.integrations.ray import IISEScheduler, SchedulerStateCallback
        >>> sched = IISEScheduler(metric="acc", mode="max", max_t=9)
        >>> callback = SchedulerStateCallback(sched)  # tune.RunConfig(callbacks=[callback])
        >>> sorted(callback.get_state())[:3]
        ['configs', 'engine', 'last']
    """

    def __init__(self, scheduler: RungScheduler) -> None:
        if not isinstance(scheduler, RungScheduler):
            raise TypeError(f"scheduler = {scheduler!r} is not a RungScheduler (IISEScheduler, AsyncIISEScheduler)")
        self.scheduler = scheduler
        self._staging: str | None = None  # the driver's staging copy of the experiment directory

    def on_step_begin(self, iteration: int, trials: list[Trial], **info: Any) -> None:
        if self._staging is None and trials:
            # Trial.storage (a Ray StorageContext) knows the driver staging directory that Ray syncs to the
            # experiment directory; there is no public accessor on the driver.
            path = getattr(getattr(trials[0], "storage", None), "experiment_driver_staging_path", None)
            self._staging = path if isinstance(path, str) else None

    def on_trial_result(
        self, iteration: int, trials: list[Trial], trial: Trial, result: dict[str, Any], **info: Any
    ) -> None:
        """Add the scheduler's decision for this result (:meth:`RungScheduler.race_metrics`) to the result, before
        Tune's CSV, JSON and TensorBoard loggers (which run after user callbacks) write it."""
        result.update(self.scheduler.race_metrics(trial.trial_id, result))

    def get_state(self) -> dict[str, Any] | None:
        state = self.scheduler.get_state()
        if self._staging is not None:
            self.write_state(self._staging, state)
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        self.scheduler.set_state(state)

    def write_state(self, directory: str | Path, state: dict[str, Any] | None = None) -> Path:
        """Write the scheduler's state (or `state`) as :data:`STATE_FILE` in `directory`, atomically
        (a temporary file, then a rename). Returns the file's path."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        doc = {
            "format": _STATE_FORMAT,
            "scheduler": type(self.scheduler).__name__,
            "state": encode(self.scheduler.get_state() if state is None else state),
        }
        path = d / STATE_FILE
        tmp = d / f".{STATE_FILE}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(doc, allow_nan=False))
        os.replace(tmp, path)
        return path


def load_certificate(path: str | Path) -> RungCertificate | None:
    """The certificate of a Tune experiment run with :class:`SchedulerStateCallback`, read from its experiment
    directory (`storage_path/name`; or the :data:`STATE_FILE` itself) — after `fit()`, or after
    `Tuner.restore(...).fit()`, without the scheduler object. Its `key` is a `trial_id`
    (`Result.metrics["trial_id"]` in the `ResultGrid`). None when the state was saved before the rungs were
    known.

    The file is JSON, validated field by field (:meth:`mf_sched.racing.engine.RungEliminator.from_state_dict`); nothing
    is unpickled. Raises `FileNotFoundError` when there is no state file and
    :class:`~mf_sched._serialize.StateFormatError` (a `ValueError`) when it is malformed.

    Example:
        >>> import tempfile
        >>> from mf_sched.integrations.ray import IISEScheduler, SchedulerStateCallback, load_certificate
        >>> sched = IISEScheduler(metric="acc", mode="max", max_t=9)
        >>> d = tempfile.mkdtemp()
        >>> _ = SchedulerStateCallback(sched).write_state(d)  # what the callback does at each checkpoint
        >>> load_certificate(d).key is None  # no trial reached the top rung yet
        True
    """
    from mf_sched.visualization._tune import read_state  # the one reader of the state file (validated JSON)

    folder, state = read_state(path)
    file = folder / STATE_FILE
    if state["engine"] is None:
        return None
    try:
        return RungEliminator.from_state_dict(state["engine"]).certificate()
    except (KeyError, TypeError, ValueError) as e:  # StateFormatError is a ValueError
        raise StateFormatError(f"{file}: {e}") from None


def curves_from_results(
    path: str | Path, *, metric: str, mode: str, fidelity: str = "training_iteration", metric_name: str | None = None
) -> Any:
    """The learning curves of a finished (or restored) Tune experiment directory as
    :class:`mf_sched.curves.LearningCurves`, for :func:`mf_sched.curves.calibration.calibrate`.

    Reads every trial folder's `params.json` (the configuration) and `progress.csv` (one row per
    reported result; `fidelity` and `metric` columns). Files are parsed as JSON and CSV numbers only;
    rows whose values are missing or not finite are skipped; a folder without both files is ignored.
    Each trial is one run (seed) of its configuration.
    """
    from mf_sched.curves import LearningCurves

    root = Path(path)
    if not root.is_dir():
        raise ValueError(f"path = {str(root)!r} is not a Tune experiment directory")
    if mode not in ("min", "max"):
        raise ValueError(f"mode = {mode!r} is unknown; accepted: 'min', 'max'")
    records = []
    for trial_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        params_file, progress = trial_dir / "params.json", trial_dir / "progress.csv"
        if not (params_file.is_file() and progress.is_file()):
            continue
        params = json.loads(params_file.read_text())
        if not isinstance(params, dict):
            raise ValueError(f"{params_file} does not hold a JSON object of parameters")
        cfg = json.dumps(params, sort_keys=True, default=str)
        with progress.open(newline="") as f:
            for row in csv.DictReader(f):
                try:
                    x, y = float(row.get(fidelity, "")), float(row.get(metric, ""))
                except ValueError:
                    continue
                if math.isfinite(x) and math.isfinite(y):
                    records.append({"config": cfg, "fidelity": x, "metric": y, "seed": trial_dir.name})
    if not records:
        raise ValueError(f"no trial in {str(root)!r} reported finite {metric!r} and {fidelity!r} values")
    return LearningCurves.from_records(
        records, metric="metric", mode=mode, config="config", fidelity="fidelity", seed="seed",
        metric_name=metric_name or metric, fidelity_name=fidelity,
    )  # fmt: skip
