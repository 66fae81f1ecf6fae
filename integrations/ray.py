"""Ray Tune schedulers: ζ-aware elimination of trials at the rungs of a fidelity ladder.

Install with ``pip install "mf-sched[ray]"``. Facts about Ray Tune 2.60 that shaped this module are in the
project's ``notes/ray-facts.md``. Every scheduler here drives one :class:`~mf_sched.rungs.RungEliminator`
(IISE's elimination rule, Poiani et al. 2022 Eq. 3, with one value per trial and rung), keyed by
``trial_id``:

* :class:`IISEScheduler` — **synchronous**: a trial that reaches rung ``m`` (``time_attr`` ≥
  ``ladder.resources[m]``) is PAUSED until every live trial has reported there; then, simultaneously, the
  trials that provably cannot be the best (``v_j − B_j − v_i − B_i ≥ 2ζ(m)``) stop and the others resume
  from their checkpoints. Needs checkpointing trainables (class trainables checkpoint by themselves;
  function trainables must pass ``checkpoint=`` to ``tune.report`` and read ``tune.get_checkpoint()``):
  a trial that resumes below its rung (its epochs would silently be re-run) raises a RuntimeError naming
  the fix. Guarantee: the best trial is never stopped, with probability ≥ 1 − δ, given ζ and σ.
* :class:`AsyncIISEScheduler` — **asynchronous**: decides when a trial reports at a rung, against the
  values already recorded there, and never pauses (no checkpoints needed; no worker idles at a barrier).
  Same guarantee (the rule only fires on evidence), fewer early stops.
* :class:`RungScheduler` — the general class behind both: ``synchronous=True/False``, ``bias="zeta"``
  (IISE) or ``"gamma"`` (IISE-γ, needs ``ladder.gamma``), and the heuristic ``eta`` cut (successive-halving
  style, as ASHA/HyperBand; voids the guarantee, and :meth:`RungScheduler.certificate` says so).

Trials stop at the top rung (``resources[-1]``). Errors: a failed trial is no longer waited for (a rung
never waits on it); a retried trial (``FailureConfig(max_failures=k)``) is re-added with the same id and
waited for again. Trials added later join at rung 0. The scheduler never leaves every trial PAUSED: when
nothing else can run, the lowest paused rung is decided with the values present.

Ray does not restore scheduler state with ``Tuner.restore``; add :class:`SchedulerStateCallback` to
``RunConfig(callbacks=[...])``: its state (the engine's exact JSON state, keyed by trial id) is saved with
every experiment checkpoint and restored before the trials are re-added.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ray import tune
from ray.tune.experiment import Trial
from ray.tune.schedulers import FIFOScheduler, TrialScheduler

from mf_sched.ladder import FidelityLadder
from mf_sched.rungs import RungCertificate, RungEliminator

__all__ = ["RungScheduler", "IISEScheduler", "AsyncIISEScheduler", "SchedulerStateCallback", "curves_from_results"]


def _resolve(ladder: FidelityLadder | None, calibration: Any) -> FidelityLadder:
    if (ladder is None) == (calibration is None):
        raise ValueError("give exactly one of ladder= (a FidelityLadder with resources) or calibration=")
    lad = ladder if ladder is not None else calibration.ladder()
    if not isinstance(lad, FidelityLadder):
        raise TypeError(f"ladder must be a FidelityLadder, got {type(lad).__name__}")
    if lad.resources is None:
        raise ValueError("the ladder needs resources: the value of time_attr at each rung (e.g. epochs 1, 3, 9)")
    return lad


class RungScheduler(FIFOScheduler):
    """ζ-aware elimination at rungs, synchronous or asynchronous (see the module docstring).

    Args:
        ladder / calibration: the rungs (``resources``, in units of ``time_attr``), ζ (and γ).
        metric, mode: as Ray's schedulers; may come from ``TuneConfig`` instead.
        time_attr: the result field that measures progress (default ``"training_iteration"``).
        delta: confidence δ. sigma: seed-to-seed σ of the metric (one number or one per rung; default
            the calibration's, else 0.05).
        n_trials: the number of trials if known (δ split δ/(KM)); default open-ended (6δ/(π²k²) per trial,
            k in order of arrival).
        bias: ``"zeta"`` (IISE) or ``"gamma"`` (IISE-γ). eta: optional heuristic halving cut.
        synchronous: pause at rungs (True) or decide as results arrive (False).
    """

    _supports_buffered_results = False

    def __init__(
        self,
        ladder: FidelityLadder | None = None,
        *,
        calibration: Any = None,
        metric: str | None = None,
        mode: str | None = None,
        time_attr: str = "training_iteration",
        delta: float = 0.05,
        sigma: float | Sequence[float] | None = None,
        n_trials: int | None = None,
        bias: str = "zeta",
        eta: float | None = None,
        synchronous: bool = True,
    ) -> None:
        super().__init__()
        self.ladder = _resolve(ladder, calibration)
        if mode is not None and mode not in ("min", "max"):
            raise ValueError(f"mode = {mode!r} is unknown; accepted: 'min', 'max'")
        if sigma is None:
            sigma = calibration.sigma.tolist() if calibration is not None else 0.05
        self._metric, self._mode = metric, mode
        self.time_attr = time_attr
        self.synchronous = bool(synchronous)
        self._engine_kw = dict(delta=delta, sigma=sigma, n_arms=n_trials, bias=bias, eta=eta)
        self.engine = RungEliminator(self.ladder, **self._engine_kw)
        self._steps = [float(r) for r in self.ladder.resources]
        self._live: set[str] = set()  # trials the rungs wait for
        self._paused: dict[str, int] = {}  # trial id -> rung it waits at
        self._to_unpause: set[str] = set()
        self._configs: dict[str, dict[str, Any]] = {}
        self._last_t: dict[str, float] = {}
        self._resumed_at: dict[str, float] = {}  # paused trials released to resume: time_attr at the pause
        self._processing = False

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
                f"{type(self).__name__} needs metric and mode (in the scheduler or in TuneConfig(metric=, mode=))"
            )
        return 1.0 if self._mode == "max" else -1.0

    def on_trial_add(self, tune_controller: Any, trial: Trial) -> None:
        tid = trial.trial_id
        self._configs[tid] = dict(trial.config) if isinstance(trial.config, dict) else {}
        if tid not in self.engine:
            self.engine.register(tid)
        elif self.engine.status(tid) == "lost":
            self.engine.revive(tid)  # retried after an error
        if trial.status in (Trial.TERMINATED, Trial.ERROR) or self.engine.status(tid) in ("stopped", "halted"):
            # restored experiment: a finished or eliminated trial is evidence only
            self._live.discard(tid)
            self._paused.pop(tid, None)
            self._to_unpause.discard(tid)
            return
        self._live.add(tid)

    def _rung_of(self, t: float) -> int | None:
        """The highest rung whose resource ``t`` has reached."""
        m = None
        for i, s in enumerate(self._steps):
            if t + 1e-9 >= s:
                m = i
        return m

    def on_trial_result(self, tune_controller: Any, trial: Trial, result: dict[str, Any]) -> str:
        sign = self._sign()
        tid = trial.trial_id
        if self._metric not in result or self.time_attr not in result:
            return TrialScheduler.CONTINUE
        t = float(result[self.time_attr])
        self._to_unpause.discard(tid)  # it runs again: released (a later pause needs a new decision)
        if tid in self.engine and self.engine.status(tid) in ("stopped", "halted"):
            self._live.discard(tid)  # already eliminated (e.g. restarted by Tuner.restore from an older snapshot)
            return TrialScheduler.STOP
        if tid in self._paused and self.synchronous:
            return TrialScheduler.PAUSE  # still waiting for its rung's decision (e.g. after Tuner.restore)
        if tid in self._resumed_at:
            at = self._resumed_at.pop(tid)
            if t <= at + 1e-9:
                raise RuntimeError(
                    f"trial {tid} was paused at {self.time_attr} = {at:g} and resumed at {t:g}: it restarted "
                    "without a checkpoint and would re-run epochs. Report a checkpoint with every "
                    "tune.report(..., checkpoint=...) and restore it from tune.get_checkpoint() (class "
                    "trainables do this by themselves), or use AsyncIISEScheduler, which never pauses."
                )
        self._last_t[tid] = t
        rung = self._rung_of(t)
        if rung is None:
            return TrialScheduler.CONTINUE
        reached = self.engine.reached(tid) if tid in self.engine else -1
        if rung <= reached:
            return TrialScheduler.CONTINUE  # between rungs
        v = result[self._metric]
        value = float(v) if v is not None else math.nan
        if not math.isfinite(value):
            return TrialScheduler.CONTINUE  # no evidence either way
        self.engine.report(tid, rung, sign * value)
        if rung == self.ladder.top:  # the last rung: the trial is done
            self._live.discard(tid)
            self._release(tune_controller)
            return TrialScheduler.STOP
        if not self.synchronous:
            if self.engine.should_stop(tid):
                self._live.discard(tid)
                return TrialScheduler.STOP
            return TrialScheduler.CONTINUE
        if self._rung_complete(rung):
            stopped = set(self._decide(tune_controller, rung, current=tid))
            if tid in stopped:
                self._live.discard(tid)
                return TrialScheduler.STOP
            return TrialScheduler.CONTINUE
        self._paused[tid] = rung
        return TrialScheduler.PAUSE

    def _rung_complete(self, rung: int) -> bool:
        return all(self.engine.reached(tid) >= rung for tid in self._live)

    def _decide(self, tune_controller: Any, rung: int, current: str | None = None) -> list[str]:
        """Decide ``rung`` among the live trials waiting there; stop losers, release survivors."""
        waiting = [tid for tid in self._live if self.engine.reached(tid) == rung]
        if current is not None and current not in waiting:
            waiting.append(current)
        stopped = self.engine.decide_rung(rung, keys=waiting)
        self._processing = True
        try:
            for tid in waiting:
                if tid in self._paused and self._paused[tid] == rung:
                    del self._paused[tid]
                    if tid in stopped or rung == self.ladder.top:
                        self._live.discard(tid)
                        trial = self._find(tune_controller, tid)
                        if trial is not None and trial.status in (Trial.PAUSED, Trial.PENDING, Trial.RUNNING):
                            tune_controller.stop_trial(trial)
                    else:
                        self._to_unpause.add(tid)
                        self._resumed_at[tid] = self._last_t.get(tid, self._steps[rung])
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

    def _drop(self, tune_controller: Any, trial: Trial, lost: bool) -> None:
        tid = trial.trial_id
        if self._processing:
            return
        self._live.discard(tid)
        self._paused.pop(tid, None)
        self._to_unpause.discard(tid)
        self._resumed_at.pop(tid, None)
        if lost and tid in self.engine:
            self.engine.mark_lost(tid)
        self._release(tune_controller)

    def _release(self, tune_controller: Any) -> None:
        """Decide every rung whose live trials have all arrived (after a trial left)."""
        if not self.synchronous:
            return
        for rung in sorted(set(self._paused.values())):
            if self._rung_complete(rung):
                self._decide(tune_controller, rung)

    def on_trial_complete(self, tune_controller: Any, trial: Trial, result: dict[str, Any]) -> None:
        tid = trial.trial_id
        if result and self._metric in result and self.time_attr in result and tid in self.engine:
            rung = self._rung_of(float(result[self.time_attr]))
            v = result[self._metric]
            if rung is not None and rung > self.engine.reached(tid) and v is not None and math.isfinite(float(v)):
                self.engine.report(tid, rung, self._sign() * float(v))
        self._drop(tune_controller, trial, lost=False)

    def on_trial_remove(self, tune_controller: Any, trial: Trial) -> None:
        self._drop(tune_controller, trial, lost=False)

    def on_trial_error(self, tune_controller: Any, trial: Trial) -> None:
        self._drop(tune_controller, trial, lost=True)

    def choose_trial_to_run(self, tune_controller: Any) -> Trial | None:
        trials = tune_controller.get_trials()
        paused = [t for t in trials if t.status == Trial.PAUSED]
        for t in paused:  # a paused trial nobody waits for (eliminated, or not live): stop it, never leave it
            tid = t.trial_id
            if tid not in self._live or (tid in self.engine and self.engine.status(tid) in ("stopped", "halted")):
                self._paused.pop(tid, None)
                self._processing = True
                try:
                    tune_controller.stop_trial(t)
                finally:
                    self._processing = False
        for t in trials:
            if t.status == Trial.PENDING:
                return t
        for t in trials:
            if t.status == Trial.PAUSED and t.trial_id in self._to_unpause:
                return t
        paused = [t for t in trials if t.status == Trial.PAUSED]
        if paused and not any(t.status in (Trial.RUNNING, Trial.PENDING) for t in trials):
            # never all-PAUSED: decide the lowest rung with what is there
            rung = min(self._paused.get(t.trial_id, 0) for t in paused)
            self._live &= {t.trial_id for t in trials if t.status in (Trial.PAUSED, Trial.RUNNING, Trial.PENDING)}
            self._decide(tune_controller, rung)
            for t in tune_controller.get_trials():
                if t.status == Trial.PAUSED and t.trial_id in self._to_unpause:
                    return t
        return None

    def debug_string(self) -> str:
        mode = "synchronous" if self.synchronous else "asynchronous"
        return f"{type(self).__name__} ({mode}, {len(self._paused)} paused)\n" + self.engine.describe()

    # ------------------------------------------------------------------ answer and state
    def certificate(self) -> RungCertificate:
        """The best trial at the top rung and its certificate (see :class:`~mf_sched.rungs.RungCertificate`)."""
        return self.engine.certificate()

    def best_config(self) -> dict[str, Any] | None:
        key = self.engine.certificate().key
        return None if key is None else self._configs.get(str(key))

    def get_state(self) -> dict[str, Any]:
        return {
            "engine": self.engine.state_dict(),
            "live": sorted(self._live),
            "paused": dict(self._paused),
            "to_unpause": sorted(self._to_unpause),
            "resumed_at": dict(self._resumed_at),
            "last_t": dict(self._last_t),
            "configs": {
                k: {kk: vv for kk, vv in v.items() if isinstance(vv, (int, float, str, bool))}
                for k, v in self._configs.items()
            },  # fmt: skip
            "metric": self._metric,
            "mode": self._mode,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.engine = RungEliminator.from_state_dict(state["engine"])
        self._live = set(state["live"])
        self._paused = {str(k): int(v) for k, v in state["paused"].items()}
        self._to_unpause = set(state["to_unpause"])
        self._resumed_at = {str(k): float(v) for k, v in state.get("resumed_at", {}).items()}
        self._last_t = {str(k): float(v) for k, v in state.get("last_t", {}).items()}
        self._configs = {str(k): dict(v) for k, v in state.get("configs", {}).items()}
        self._metric = self._metric or state.get("metric")
        self._mode = self._mode or state.get("mode")


class IISEScheduler(RungScheduler):
    """Synchronous ζ-aware elimination (IISE with one round per rung); see :class:`RungScheduler`."""

    def __init__(self, ladder: FidelityLadder | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("synchronous", True)
        super().__init__(ladder, **kwargs)


class AsyncIISEScheduler(RungScheduler):
    """Asynchronous ζ-aware elimination: no barrier, no pause; see :class:`RungScheduler`."""

    def __init__(self, ladder: FidelityLadder | None = None, **kwargs: Any) -> None:
        kwargs["synchronous"] = False
        super().__init__(ladder, **kwargs)


class SchedulerStateCallback(tune.Callback):
    """Saves a :class:`RungScheduler`'s state with every experiment checkpoint and restores it on
    ``Tuner.restore`` (Ray keeps no scheduler state of its own). Add it to ``RunConfig(callbacks=[...])``."""

    def __init__(self, scheduler: RungScheduler) -> None:
        self.scheduler = scheduler

    def get_state(self) -> dict[str, Any] | None:
        return self.scheduler.get_state()

    def set_state(self, state: dict[str, Any]) -> None:
        self.scheduler.set_state(state)


def curves_from_results(
    path: str | Path, *, metric: str, mode: str, fidelity: str = "training_iteration", metric_name: str | None = None
) -> Any:
    """The learning curves of a finished (or restored) Tune experiment directory as
    :class:`mf_sched.curves.LearningCurves`, for :func:`mf_sched.calibration.calibrate`.

    Reads every trial folder's ``params.json`` (the configuration) and ``progress.csv`` (one row per
    reported result; ``fidelity`` and ``metric`` columns). Files are parsed as JSON and CSV numbers only;
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
