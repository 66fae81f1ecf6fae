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
  that can still win are resumed best-first until each is stopped or finished (:mod:`mf_sched.racing.schedule`);
  then :meth:`RungScheduler.certificate` says whether the answer is certified
  (:func:`mf_sched.racing.certificate.certification`). Stopped early (`time_budget_s`, a stopper), the experiment's
  best trial is the best latest value (ASHA's rule; measured against ASHA per budget in docs/racing.md). Pausing
  needs the trial's checkpoint: a trial pauses only when the result at its rung carries one (a function trainable
  that passes `checkpoint=` to `tune.report`, or a class trainable); otherwise it simply continues — function
  trainables without checkpoints get the asynchronous behaviour automatically. `IISEScheduler(rule="iise")` is the
  synchronous IISE variant: all live trials pause at each rung, then IISE's symmetric rule (`2ζ(m)`) decides
  simultaneously (needs a ladder with ζ and checkpointing trainables: a result at a rung without a checkpoint
  raises `RuntimeError` at the pause, before any epoch is re-run).
* :class:`AsyncIISEScheduler` — racing that never pauses (stop or continue, like ASHA).
* :class:`RungScheduler` — the general class behind both.

Zero configuration: the rungs are inferred from the maximum resource — `max_t`, the trial's stopping
criterion on `time_attr` (`tune.run(stop={"training_iteration": 27})`, `RunConfig(stop=...)`), or the
last `time_attr` of the first trial that completes — as `≈ 2% of R × 3^k`; the bound is the one shipped for
the metric's family (accuracies, error rates and percentages; losses and negated losses; `metric_family=` names
it), raised by the study's own finished trials; metric and mode come from `TuneConfig` / `tune.run`
(`set_search_properties`).

Trials not started start in a random order drawn with `seed` (default 0), not in Tune's order: a grid listed worst
first would otherwise race every trial against a weak incumbent. Tune asks for a worker for every PENDING trial at
once, so the trials of its own search (`param_space`) are held back as PAUSED until
:meth:`RungScheduler.choose_trial_to_run` releases them; the order is saved with the scheduler's state.

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

import json
import math
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ray import tune
from ray.tune.experiment import Trial
from ray.tune.schedulers import FIFOScheduler, TrialScheduler
from ray.tune.search import BasicVariantGenerator

from mf_sched._serialize import StateFormatError, encode
from mf_sched.ladder import FidelityLadder
from mf_sched.racing.engine import RULES, RungCertificate, RungEliminator

from ._common import DEFAULT_TOLERANCE, resolve_rungs
from ._ray_core import (
    CONTINUE,
    ERROR,
    PAUSE,
    PAUSED,
    PENDING,
    RUNNING,
    STOP,
    TERMINATED,
    RungCore,
    RungSettings,
    needs_metric_and_mode,
)
from ._ray_iise import IISECore
from ._ray_race import RaceCore
from ._ray_results import curves_from_results

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
#: at most this many trials not started are held back as PAUSED at once: Tune creates trials from the param space
#: until 200 are PENDING, and held trials are not (the bound keeps an endless `num_samples=-1` finite)
_MAX_HELD = 1_000
#: Ray's trial statuses as the core reads them
_STATUS = {Trial.PENDING: PENDING, Trial.RUNNING: RUNNING, Trial.PAUSED: PAUSED, Trial.TERMINATED: TERMINATED,
           Trial.ERROR: ERROR}  # fmt: skip
#: the core's decisions as Ray's
_DECISION = {CONTINUE: TrialScheduler.CONTINUE, PAUSE: TrialScheduler.PAUSE, STOP: TrialScheduler.STOP}
#: the core of each rule: its behaviour, chosen once
_CORES: dict[str, type[RungCore]] = {"race": RaceCore, "iise": IISECore}


def _is_class_trainable(trial: Trial) -> bool:
    """A class trainable saves its own checkpoint when paused; a function trainable only with `checkpoint=`."""
    try:
        from ray.tune.registry import get_trainable_cls
        from ray.tune.trainable.function_trainable import FunctionTrainable

        cls = get_trainable_cls(trial.trainable_name)
        return isinstance(cls, type) and not issubclass(cls, FunctionTrainable)
    except Exception:  # an unregistered stub trial, or a Ray without these internals: assume no checkpoint
        return False


class _TuneTrials:
    """Tune's trials as the core sees them (:class:`~mf_sched.integrations._ray_core.Trials`): statuses by id, and
    stopping a trial through the controller while the scheduler ignores the calls back."""

    def __init__(self, scheduler: RungScheduler, tune_controller: Any) -> None:
        self._scheduler = scheduler
        self._controller = tune_controller

    def status(self, key: str) -> str | None:
        t = self._scheduler._trials.get(key)
        return None if t is None else _STATUS.get(t.status)

    def listing(self) -> list[tuple[str, str | None]]:
        return [(t.trial_id, _STATUS.get(t.status)) for t in self._controller.get_trials()]

    def stop(self, key: str) -> None:
        trial = self._scheduler._trial(key, self._controller)
        if trial is None:
            return
        self._scheduler._processing = True  # stop_trial calls on_trial_remove / on_trial_complete back
        try:
            self._controller.stop_trial(trial)
        finally:
            self._scheduler._processing = False


class RungScheduler(FIFOScheduler):
    """Racing or IISE's elimination at rungs (see the module docstring).

    A thin adapter: Tune's calls and `Trial` objects are mapped to the decision core of the rule (racing or
    IISE, chosen once from `rule`), which is fed with `(trial_id, time_attr, metric value)`, owns the
    :class:`~mf_sched.racing.engine.RungEliminator` (:attr:`engine`) and knows nothing of Ray.

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
        seed: seeds the order in which trials not started yet start (default 0; None: fresh entropy). They start
            in a random order drawn with this seed, not in Tune's order: a grid listed worst first (an ascending
            hyper-parameter, best last) would otherwise find its incumbent last and race every other trial against
            a weak one. The order is saved with the scheduler's state and survives `Tuner.restore`.

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
        seed: int | None = 0,
    ) -> None:
        super().__init__()
        if rule not in RULES:
            raise ValueError(f"rule = {rule!r} is unknown; accepted: {', '.join(map(repr, RULES))}")
        rungs = resolve_rungs(
            type(self).__name__, ladder=ladder, calibration=calibration, resources=resources, sigma=sigma,
            race_bias=race_bias, max_resource=max_t, min_resource=min_t, reduction_factor=reduction_factor,
            zeta_needed_by="rule = 'iise'" if rule == "iise" else None, names=("max_t", "min_t"),
        )  # fmt: skip
        if mode is not None and mode not in ("min", "max"):
            raise ValueError(f"mode = {mode!r} is unknown; accepted: 'min', 'max'")
        settings = RungSettings.checked(
            rule=rule, delta=delta, n_trials=n_trials, fixed_arms=fixed_arms, bias=bias, eta=eta,
            synchronous=synchronous, pause=pause, order=order, schedule=schedule, tolerance=tolerance,
            metric_family=metric_family, bound=bound, reduction_factor=reduction_factor, seed=seed,
        )  # fmt: skip
        self._metric = metric
        self._core: RungCore = _CORES[rule](rungs, settings, mode=mode, who=type(self).__name__, time_attr=time_attr)
        self._trials: dict[str, Trial] = {}  # trial id -> Trial (to read statuses without scanning every trial)
        self._warned_missing = False  # a result without the metric or time_attr was reported (said once)
        self._requeued: set[str] = set()  # failed trials Tune puts back as PENDING (then re-adds)
        self._processing = False  # stopping trials: Tune's calls back are ignored

    # ------------------------------------------------------------------ the settings (read-only)
    @property
    def rule(self) -> str:
        """`"race"` or `"iise"`."""
        return self._core.settings.rule

    @property
    def time_attr(self) -> str:
        """The result field that measures progress (the rungs' unit)."""
        return self._core.time_attr

    @property
    def synchronous(self) -> bool:
        """IISE: every trial pauses at each rung until the rung is decided."""
        return self._core.settings.synchronous

    @property
    def pause(self) -> bool:
        """Racing: trials with a checkpoint pause at rungs while better work waits."""
        return self._core.settings.pause

    @property
    def schedule(self) -> str:
        """Racing: `"anytime"` or `"best-first"`."""
        return self._core.settings.schedule

    @property
    def tolerance(self) -> float:
        """Racing with the shipped curve-aware bound: its relative tolerance."""
        return self._core.settings.tolerance

    @property
    def metric_family(self) -> str | None:
        """The metric family named by the user (None: read from the values)."""
        return self._core.settings.metric_family

    @property
    def bound(self) -> str:
        """The shipped bound: `"curve"` or `"zeta+"`."""
        return self._core.settings.bound

    @property
    def reduction_factor(self) -> float:
        """`η`: the ratio of the inferred ladder's rungs and ASHA's cut."""
        return self._core.settings.reduction_factor

    @property
    def ladder(self) -> FidelityLadder | None:
        """The rungs (None until the maximum resource is known)."""
        return self._core.ladder

    @property
    def engine(self) -> RungEliminator | None:
        """The engine that holds every value and decision (None until the rungs are known)."""
        return self._core.engine

    @property
    def _mode(self) -> str | None:
        return self._core.mode

    # ------------------------------------------------------------------ Ray API
    def set_search_properties(self, metric: str | None, mode: str | None, **spec: Any) -> bool:
        if self._metric and metric and metric != self._metric or self._mode and mode and mode != self._mode:
            return False
        self._metric = self._metric or metric
        self._core.mode = self._mode or mode
        if self._mode is not None and self._mode not in ("min", "max"):
            raise ValueError(f"mode = {self._mode!r} is unknown; accepted: 'min', 'max'")
        return True

    def _sign(self) -> float:
        if self._metric is None:
            raise ValueError(needs_metric_and_mode(type(self).__name__))
        return self._core.sign

    def _view(self, tune_controller: Any) -> _TuneTrials:
        return _TuneTrials(self, tune_controller)

    def _trial(self, key: str, tune_controller: Any) -> Trial | None:
        t = self._trials.get(key)
        return t if t is not None else next((t for t in tune_controller.get_trials() if t.trial_id == key), None)

    def on_trial_add(self, tune_controller: Any, trial: Trial) -> None:
        """A trial was added (new, retried after an error, or restored). A new trial of Tune's own search
        (`param_space`: a grid, random samples) is held back as PAUSED until :meth:`choose_trial_to_run` releases it,
        in the order drawn with `seed`: Tune asks for a worker for every PENDING trial at once, in its own order.

        Args:
            tune_controller: Tune's controller (its trials and their search algorithm).
            trial: the trial added.
        """
        tid = trial.trial_id
        self._trials[tid] = trial
        crit = getattr(trial, "stopping_criterion", None) or {}
        top = crit.get(self.time_attr)
        self._core.add(
            tid,
            dict(trial.config) if isinstance(trial.config, dict) else {},
            ended=trial.status in (Trial.TERMINATED, Trial.ERROR),
            max_resource=float(top) if isinstance(top, (int, float)) else None,
        )
        requeued = tid in self._requeued
        self._requeued.discard(tid)
        if not requeued and self._should_hold(tune_controller, trial):
            if trial.storage is not None:  # a stub trial (a simulation) has none
                trial.init_local_path()  # what Tune does when it queues a trial (its reporters read every trial's path)
            trial.set_status(Trial.PAUSED)

    def _should_hold(self, tune_controller: Any, trial: Trial) -> bool:
        """Whether to hold a new trial back as PAUSED (see :meth:`on_trial_add`): without it the seeded order would
        decide only the first trial to start. Tune files the trial under the status `on_trial_add` leaves it in
        (`TuneController.add_trial`); a failed trial put back (already filed as PENDING) and trials of a searcher (one
        suggestion at a time) are not held, nor more than `_MAX_HELD` at once."""
        if trial.status != Trial.PENDING or trial.trial_id not in self._core.unstarted:
            return False
        if not isinstance(getattr(tune_controller, "search_alg", None), BasicVariantGenerator):
            return False
        trials = self._trials  # held trials are among the unstarted ones: count there, not over every trial
        held = sum(1 for k in self._core.unstarted if (t := trials.get(k)) is not None and t.status == Trial.PAUSED)
        return held < _MAX_HELD

    def on_trial_result(self, tune_controller: Any, trial: Trial, result: dict[str, Any]) -> str:
        self._sign()  # raises early without metric/mode
        if self._metric not in result or self.time_attr not in result:
            self._warn_missing(trial, result)
            return TrialScheduler.CONTINUE
        t = float(result[self.time_attr])
        raw = result[self._metric]
        v = float(raw) if raw is not None else math.nan
        decision = self._core.result(
            trial.trial_id, t, v, can_pause=lambda: self._can_pause(trial, result), trials=self._view(tune_controller)
        )
        return _DECISION[decision]

    def _warn_missing(self, trial: Trial, result: dict[str, Any]) -> None:
        """Say once that a result lacks the metric or `time_attr`: such results are invisible to the race (a trainable
        that never reports the metric would otherwise end with no answer and no word)."""
        if self._warned_missing:
            return
        self._warned_missing = True
        missing = [k for k in (self._metric, self.time_attr) if k not in result]
        shown = sorted(str(k) for k in result if not str(k).startswith(("config", "race/")))[:12]
        warnings.warn(
            f"{type(self).__name__}: a result of trial {trial.trial_id} has no {' and no '.join(map(repr, missing))} "
            f"(it has {shown}); results without them are not raced, and if no trial reports them the scheduler has "
            f"no answer and no certificate: report {self._metric!r} with tune.report(...) at every "
            f"{self.time_attr!r} (said once)",
            stacklevel=2,
        )

    def _can_pause(self, trial: Trial, result: dict[str, Any]) -> bool:
        return bool(result.get(_SHOULD_CHECKPOINT)) or _is_class_trainable(trial)

    def on_trial_complete(self, tune_controller: Any, trial: Trial, result: dict[str, Any]) -> None:
        if result and self._metric in result and self.time_attr in result:
            v = result[self._metric]
            self._core.complete(trial.trial_id, result[self.time_attr], float(v) if v is not None else math.nan)
        self._drop(tune_controller, trial)  # ended below the top rung, not stopped: uncovered
        self._core.after_finish(self._view(tune_controller))

    def on_trial_remove(self, tune_controller: Any, trial: Trial) -> None:
        self._drop(tune_controller, trial)

    def on_trial_error(self, tune_controller: Any, trial: Trial) -> None:
        self._requeued.add(trial.trial_id)  # if retried, Tune sets it PENDING and adds it again
        self._drop(tune_controller, trial)

    def _drop(self, tune_controller: Any, trial: Trial) -> None:
        """The trial left (complete, removed or failed): see :meth:`RungCore.drop`; ignored while the scheduler
        itself stops trials."""
        if not self._processing:
            self._core.drop(trial.trial_id, self._view(tune_controller))

    def choose_trial_to_run(self, tune_controller: Any) -> Trial | None:
        """Trials not started first (every trial's first rung), in a random order drawn with `seed` (those held
        back as PAUSED by :meth:`on_trial_add` first), then the paused trial with the highest optimistic bound that
        can still win (`rule="iise"`: the trials a rung decision released). No side effects; when nothing else can
        run, a paused trial is returned rather than leaving every trial PAUSED.

        Args:
            tune_controller: Tune's controller (its trials and their statuses).
        """
        key = self._core.choose(self._view(tune_controller))
        return None if key is None else self._trial(key, tune_controller)

    def debug_string(self) -> str:
        """What Tune's progress reporter shows (`tune.run` / `Tuner` with the classic reporter,
        `RAY_AIR_NEW_OUTPUT=0`): the trials per status and the incumbent, then one line per rung with how many
        trials reported there, how many the rule stopped there, and the leader at that rung."""
        return self._core.describe(self._metric or "metric")

    def race_metrics(self, trial_id: str, result: dict[str, Any] | None = None) -> dict[str, Any]:
        """The scheduler's view of a trial after its latest result, as flat result fields (`race/...`) that
        :class:`SchedulerStateCallback` adds to every result, so that Tune's loggers (CSV, JSON, TensorBoard)
        record the decisions: `race/rung` (highest rung reached, −1: none), `race/status` (running, paused,
        stopped, halted, finished, lost), `race/stopped` (1 once the rule stopped it), `race/stop_rung`,
        `race/value` (its value at its highest rung), `race/bound` (racing: the best final value it could still
        reach), `race/incumbent` (trial id), `race/incumbent_value` and `race/incumbent_lower_bound`
        (`race/incumbent_upper_bound` when minimising), `race/stopped_trials` and `race/finished_trials`.
        Every field is present from the first result (NaN, −1 or `""` when unknown), as CSV headers need.

        Args:
            trial_id: the trial's id.
            result: the trial's last result, or None. When it is `done`, its rung and value are shown (the
                scheduler records them only afterwards, in `on_trial_complete`): as `finished` at the top rung,
                else `lost`.
        """
        final = None
        if result is not None and result.get("done") and self.time_attr in result:
            final = (result[self.time_attr], result.get(self._metric) if self._metric else None)
        return self._core.metrics(trial_id, final)

    # ------------------------------------------------------------------ answer and state
    def certificate(self) -> RungCertificate | None:
        """The best trial at the top rung and its certificate (:class:`~mf_sched.racing.engine.RungCertificate`); None
        while the rungs are not known."""
        return self._core.certificate()

    def best_config(self) -> dict[str, Any] | None:
        """The answer's configuration at any moment, by the rule MFSampler's recommendation uses: the best latest
        value of a trial the race has not stopped (a finished trial unless a lower-rung one is already better where
        it stands); once the race is over, the certificate's trial. None before any result."""
        return self._core.best_config()

    def get_state(self) -> dict[str, Any]:
        return {**self._core.get_state(), "metric": self._metric, "mode": self._mode, "time_attr": self.time_attr}

    def set_state(self, state: dict[str, Any]) -> None:
        self._core.set_state(state)
        self._metric = self._metric or state.get("metric")


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
        Tune's CSV, JSON and TensorBoard loggers (which run after user callbacks) write it.

        Args:
            iteration: Tune's step counter (unused).
            trials: every trial of the experiment (unused).
            trial: the trial that reported.
            result: its result, updated in place with the `race/...` fields.
            **info: other keyword arguments Tune passes (unused).
        """
        result.update(self.scheduler.race_metrics(trial.trial_id, result))

    def get_state(self) -> dict[str, Any] | None:
        state = self.scheduler.get_state()
        if self._staging is not None:
            self.write_state(self._staging, state)
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        self.scheduler.set_state(state)

    def write_state(self, directory: str | Path, state: dict[str, Any] | None = None) -> Path:
        """Write the scheduler's state as :data:`STATE_FILE` in `directory`, atomically (a temporary file, then a
        rename). Returns the file's path.

        Args:
            directory: the folder to write into (created if missing), usually the experiment directory.
            state: the state to write (as :meth:`RungScheduler.get_state` returns it); None: the scheduler's
                state now.
        """
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

    Args:
        path: the experiment directory, or the state file itself.

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
