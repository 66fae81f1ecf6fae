"""A deterministic discrete-event simulation of Ray Tune 2.60's trial execution loop, driving real schedulers.

Comparing Ray Tune trial schedulers on replayed learning curves with real ``Tuner.fit`` runs costs seconds per
run (actor start-up dominates); :func:`simulate` runs the same experiment in milliseconds, without Ray actors
or ``ray.init``, and drives the **real** scheduler objects (``FIFOScheduler``, ``ASHAScheduler``,
``HyperBandScheduler``, :class:`mf_sched.integrations.ray.IISEScheduler`, ...) through the calls Ray's
``TuneController`` makes, with the same arguments, in the same order.

What is simulated (mirroring ``ray/tune/execution/tune_controller.py``, ``ray/air/execution/_internal/
actor_manager.py`` and ``ray/tune/trainable/function_trainable.py`` of Ray 2.60):

* **Trials** are real ``ray.tune.experiment.Trial`` objects (``stub=True``), one per row of ``curves``, added
  as ``BasicVariantGenerator`` adds a grid of ``K`` configurations: in grid order, while fewer than
  ``max_pending_trials`` (Ray's default: ``max(200, 1.1 × CPUs)``) are PENDING, so all ``K ≤ 200`` trials are
  added (``on_trial_add``) before anything runs; each is filed under the status ``on_trial_add`` leaves it in
  (a scheduler may hold a trial back as PAUSED), and ``search_alg`` is a ``BasicVariantGenerator``.
* **The step loop**: each step asks the scheduler ``choose_trial_to_run`` (a PAUSED choice becomes PENDING and
  requests an actor), requests actors for PENDING trials, starts requested actors while CPUs are free (one
  CPU per trial; requests are served first-come first-served, as Ray's actor manager does for identical
  resource requests), then processes **one** event: an actor became ready, a training result, a save, a
  restore, a reset of a reused actor, or an actor stopped (its CPU is free only then).
* **The trainable** is a function trainable replaying ``curves[k]``: epoch ``e`` reports
  ``{metric: curves[k, e - 1], "epoch": e, "training_iteration": i}`` after ``epoch_seconds``; the next epoch
  starts only once the driver has processed the result (``tune.report`` blocks until the next ``train()``).
  With ``checkpoint=True`` every report carries a checkpoint (Ray then schedules a save before acting on the
  decision); with a set of epochs, only those do (like a trainable that checkpoints at rungs); with
  ``False``, none. After the last epoch the function returns and Ray's duplicate ``done`` result stops the
  trial (``on_trial_complete``, not ``on_trial_result``).
* **Decisions** are applied as ``TuneController`` applies them: CONTINUE trains on; PAUSE saves (the trial
  stays RUNNING with ``is_saving`` until the save resolves), then stops the actor and sets PAUSED; STOP stops
  the trial (``on_trial_complete``); a stopping criterion (``max_t`` on ``time_attr``, like
  ``RunConfig(stop=...)``) stops the trial without asking the scheduler. ``stop_trial`` on a PENDING or PAUSED
  trial calls ``on_trial_remove``, on a RUNNING one ``on_trial_complete``, as Ray's does.
* **Resuming**: a paused trial chosen again gets a new actor (queued behind earlier requests) or, with
  ``reuse_actors=True``, a cached actor at once (Ray then caches a stopped trial's actor while other trials
  wait for one); it restores its latest checkpoint (its epochs and ``training_iteration`` continue) or, with
  none, restarts at epoch 1 with ``training_iteration`` reset, and its epochs are trained again (and counted).
* **Hangs**: when nothing can run and trials remain PAUSED, Ray 2.60 waits forever; the simulation stops and
  reports ``hang=True`` with the paused trials.

Not simulated: failures and retries, result buffering (``TUNE_RESULT_BUFFER_LENGTH`` is 1 for pausing
schedulers anyway), experiment checkpoints, placement groups other than one CPU per trial, and the timing
noise of a real cluster (events at equal simulated times are processed in the order they were scheduled;
``jitter`` perturbs epoch durations to study the sensitivity to timing). Idle steps (Ray's 0.1 s waits with
no event) are not counted in ``choose_calls``.

Run as a script it measures the simulator's speed (simulated runs per second for ``K = 24`` trials × 52
epochs, per scheduler), or its agreement with real ``Tuner.fit`` runs of the same experiments::

    python -m benchmarks.tune_sim              # speed table, benchmarks/results/tune_sim_speed.json (.png)
    python -m benchmarks.tune_sim --vs-ray     # also one real Tuner.fit per scheduler on the same case
    python -m benchmarks.tune_sim --agreement  # real vs simulated, benchmarks/results/tune_sim_agreement.json

Agreement measured on Ray 2.60 (2 CPUs, ``reuse_actors=True``; 4 synthetic 9 × 9 cases and 2 LCBench 24 × 52
replays): FIFO and IISEScheduler exact in 6/6 cases; HyperBand takes the same decisions (the same trials reach
each milestone) but, when its milestones fall between checkpoints, the epochs re-run after a resume depend on
which trial reaches a milestone last (1 case off by 8 epochs); the asynchronous ASHA and AsyncIISEScheduler
depend on the order of results (4/6 and 5/6 exact; Ray's outcome was always one of those the simulation gives
under perturbed timing).
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import json
import logging
import math
import tempfile
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from ray.tune.experiment import Trial
from ray.tune.schedulers import TrialScheduler
from ray.tune.search import BasicVariantGenerator
from ray.tune.utils import flatten_dict

from benchmarks._common import meta, pyplot, save_figure, write_json

__all__ = ["Latencies", "RAY_LOCAL", "TrialRecord", "SimResult", "simulate", "replay_trainable", "run_tuner"]

_PENDING, _RUNNING, _PAUSED, _TERMINATED, _ERROR = (
    Trial.PENDING, Trial.RUNNING, Trial.PAUSED, Trial.TERMINATED, Trial.ERROR,
)  # fmt: skip
_CONTINUE, _PAUSE, _STOP, _NOOP = (
    TrialScheduler.CONTINUE, TrialScheduler.PAUSE, TrialScheduler.STOP, TrialScheduler.NOOP,
)  # fmt: skip
_SAVING = object()  # marks trial.temporary_state.saving_to while a save is in flight (trial.is_saving)


@dataclass(frozen=True)
class Latencies:
    """Seconds the simulated cluster spends outside training; all 0 (an ideal cluster) by default.

    Attributes:
        start: a new actor, from acquiring its CPU to being ready (process start-up).
        reset: a cached actor re-used for another trial (``reuse_actors=True``).
        restore: restoring a checkpoint when a trial (re)starts.
        save: one save task (every reported checkpoint, every pause).
        stop: an actor stopping; its CPU is free after this.
        report: added to every epoch (the ``tune.report`` round trip).
        finish: the trainable returning after its last epoch (Ray's duplicate ``done`` result).
        step: driver time per processed event: the controller handles one event at a time, so what it starts
            in consecutive steps is staggered by this much.
        start_spread: a random extra ``U(0, start_spread)`` added to each new actor's ``start`` (drawn from the
            simulation's seed): local Ray readied the second of two actors requested together 0.01–0.37 s
            after the first.

    Example:
        >>> Latencies(start=1.0).start
        1.0
    """

    start: float = 0.0
    reset: float = 0.0
    restore: float = 0.0
    save: float = 0.0
    stop: float = 0.0
    report: float = 0.0
    finish: float = 0.0
    step: float = 0.0
    start_spread: float = 0.0

    def __post_init__(self) -> None:
        for name in ("start", "reset", "restore", "save", "stop", "report", "finish", "step", "start_spread"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise ValueError(f"Latencies.{name} = {v!r} must be a finite number of seconds ≥ 0")


# Local Ray 2.60, 2 CPUs on 2 shared cores, reuse_actors=True (measured with run_tuner's event times): ~15 ms
# between the end of an epoch and the start of the next (report ~8 ms + save of its checkpoint ~7 ms), ~15 ms to
# reset a cached actor for another trial, the second of the two first actors ready 0.01–0.37 s after the first.
# A new actor (reuse_actors=False) took 0.3–8 s to start on that machine: not modelled here (set ``start``).
RAY_LOCAL = Latencies(report=0.008, save=0.007, reset=0.015, start_spread=0.4)


@dataclass
class TrialRecord:
    """What one trial (one row of ``curves``) did in a simulated experiment.

    Attributes:
        index: its row in ``curves``. position: its position in the order trials were added.
        trial_id: the Trial's id. status: its final status (``TERMINATED``, or ``PAUSED``/``PENDING`` after a
            hang or truncation).
        epochs_trained: epochs trained, counting epochs trained again after a restart without checkpoint.
        last_epoch: the epoch of its last report (0 if it never reported). max_epoch: the highest epoch reached.
        last_value: the metric of its last report (NaN if none). reached_top: it reported epoch ``T``.
        pauses: times it was paused. starts: times an actor started (or was reused) for it.
        scratch_restarts: restarts at epoch 1 after having reported (no checkpoint to restore).
    """

    index: int
    position: int
    trial_id: str
    status: str = _PENDING
    epochs_trained: int = 0
    last_epoch: int = 0
    max_epoch: int = 0
    last_value: float = math.nan
    reached_top: bool = False
    pauses: int = 0
    starts: int = 0
    scratch_restarts: int = 0


@dataclass
class SimResult:
    """The outcome of :func:`simulate`.

    Attributes:
        trials: one :class:`TrialRecord` per row of ``curves`` (indexed by row).
        T: epochs per curve. workers: CPUs. mode: "max" or "min".
        total_epochs: epochs trained by all trials. makespan: simulated seconds until every trial finished
            (or the hang). busy_seconds: worker-seconds spent training completed epochs.
        utilisation: ``busy_seconds / (workers × makespan)``.
        choose_calls: ``choose_trial_to_run`` calls (one per step). steps: events processed.
        hang: nothing could run while trials were PAUSED (Ray 2.60 would wait forever).
        truncated: stopped after ``max_steps`` steps.
        events: ``(time, kind, row, epoch, detail)`` tuples in processing order when ``record_events=True``;
            kinds: ``add, start, reuse, restore, result, done, save, pause, stop, remove, complete, hang``.
        top_values: the value at epoch ``T`` of every trial that reached it (row → value).
    """

    trials: list[TrialRecord]
    T: int
    workers: int
    mode: str
    total_epochs: int
    makespan: float
    busy_seconds: float
    utilisation: float
    choose_calls: int
    steps: int
    hang: bool = False
    truncated: bool = False
    events: list[tuple[float, str, int, int, str]] = field(default_factory=list)
    top_values: dict[int, float] = field(default_factory=dict)

    @property
    def epochs(self) -> np.ndarray:
        """Epochs trained per row of ``curves``."""
        return np.array([t.epochs_trained for t in self.trials], dtype=int)

    @property
    def reached_top(self) -> list[int]:
        """Rows whose trial reported epoch ``T``, ascending."""
        return sorted(self.top_values)

    @property
    def paused_at_end(self) -> list[int]:
        """Rows whose trial was PAUSED when the simulation ended (non-empty after a hang)."""
        return [t.index for t in self.trials if t.status == _PAUSED]

    def best(self) -> int | None:
        """The row with the best value at epoch ``T`` among the trials that reached it (the experiment's answer),
        or None if no trial did; NaN values never win."""
        finite = {k: v for k, v in self.top_values.items() if math.isfinite(v)}
        if not finite:
            return None
        sign = 1.0 if self.mode == "max" else -1.0
        return max(sorted(finite), key=lambda k: sign * finite[k])

    def summary(self) -> dict[str, Any]:
        """The scalar outcomes as a JSON-ready dict."""
        return {
            "total_epochs": self.total_epochs, "makespan": self.makespan, "utilisation": self.utilisation,
            "choose_calls": self.choose_calls, "steps": self.steps, "hang": self.hang, "truncated": self.truncated,
            "reached_top": self.reached_top, "best": self.best(), "epochs": self.epochs.tolist(),
        }  # fmt: skip


class _Actor:
    __slots__ = ("aid", "run", "state", "gen", "ready_pending", "started")

    def __init__(self, aid: int, run: _Run | None) -> None:
        self.aid = aid
        self.run = run  # the trial it is bound to (None while cached)
        self.state = "pending"  # pending (requested) -> live (holds a CPU) -> stopping -> dead (CPU freed)
        self.gen = 0  # bumped to discard in-flight task futures (clear_actor_task_futures)
        self.ready_pending = False
        self.started = False  # in TuneController._started_actors


class _Run:
    """Per-trial simulator state (what the actor and the controller know about one trial)."""

    __slots__ = ("trial", "rec", "row", "actor", "epoch", "iteration", "time_total", "ckpt", "last_report",
                 "pending_save", "in_flight")  # fmt: skip

    def __init__(self, trial: Trial, rec: TrialRecord) -> None:
        self.trial = trial
        self.rec = rec
        self.row = rec.index
        self.actor: _Actor | None = None
        self.epoch = 0  # epochs completed by the current incarnation of the trainable
        self.iteration = 0  # its training_iteration
        self.time_total = 0.0
        self.ckpt: tuple[int, int, float, dict[str, Any]] | None = None  # registered checkpoint
        self.last_report: tuple[int, int, float, dict[str, Any], bool] | None = None  # the trainable's last
        self.pending_save: tuple[int, int, float, dict[str, Any], bool] | None = None
        self.in_flight = 0.0  # duration of the epoch being trained (for busy time)


class _Executor:
    """``tune_controller.trial_executor`` as Ray's ``_FakeRayTrialExecutor``."""

    def __init__(self, sim: _TuneSim) -> None:
        self._sim = sim

    def pause_trial(self, trial: Trial, should_checkpoint: bool = True) -> None:
        self._sim._schedule_trial_pause(trial, should_checkpoint=should_checkpoint)

    def save(self, trial: Trial, result: dict[str, Any] | None = None) -> Any:
        return self._sim._schedule_trial_save(trial, result)

    def has_resources_for_trial(self, trial: Trial) -> bool:
        return True


class _TuneSim:
    """The simulated ``TuneController``: the object schedulers receive as ``tune_controller``."""

    def __init__(
        self,
        scheduler: TrialScheduler,
        curves: np.ndarray,
        durations: np.ndarray,
        *,
        workers: int,
        ckpt_epochs: np.ndarray,
        metric: str,
        mode: str,
        stop: dict[str, float],
        order: list[int],
        reuse_actors: bool,
        lat: Latencies,
        max_pending_trials: int,
        record_events: bool,
        rng: np.random.Generator,
    ) -> None:
        self._scheduler_alg = scheduler
        self.search_alg = BasicVariantGenerator()  # Tune's own search over a param space (the grid of `curves`)
        self.trial_executor = _Executor(self)
        self._curves = curves
        self._durations = durations
        self._T = curves.shape[1]
        self._workers = workers
        self._ckpt_epochs = ckpt_epochs
        self._metric = metric
        self._mode = mode
        self._stop = stop
        self._order = order
        self._reuse = reuse_actors
        self._lat = lat
        self._max_pending = max_pending_trials
        self._record = record_events
        self._rng = rng

        self._trials: list[Trial] = []
        self._live_trials: set[Trial] = set()
        self._runs: dict[Trial, _Run] = {}
        self.records: list[TrialRecord | None] = [None] * curves.shape[0]
        self._next_pos = 0
        self._search_finished = False
        self._n_finished = 0  # trials TERMINATED or ERROR

        self._pending: dict[Trial, None] = {}  # ordered sets (dicts) for determinism
        self._pending_list: list[Trial] = []
        self._pending_by_res: dict[Trial, None] = {}
        self._staged: dict[Trial, None] = {}
        self._resetting: set[Trial] = set()
        self._cached_decisions: dict[Trial, str] = {}
        self._queued_decisions: dict[Trial, str] = {}

        self._actor_ids = itertools.count()
        self._actor_queue: list[_Actor] = []  # requested, waiting for a CPU (first come, first served)
        self._free = workers
        self._cache: list[_Actor] = []  # reuse_actors: cached live actors
        self._cache_max = 0  # _ObjectCache._max_num_objects for the one resource shape (staged trials)

        self._heap: list[tuple[float, bool, int, str, _Actor, int]] = []
        self._seq = itertools.count()
        self.now = 0.0
        self.events: list[tuple[float, str, int, int, str]] = []
        self.busy = 0.0
        self.choose_calls = 0
        self.steps = 0
        self.top_values: dict[int, float] = {}

    # ------------------------------------------------------------------ API used by schedulers
    def get_trials(self) -> list[Trial]:
        return self._trials

    def get_live_trials(self) -> set[Trial]:
        return self._live_trials

    def _set_trial_status(self, trial: Trial, status: str) -> None:
        if trial.status == status:
            return
        self._n_finished += (status in (_TERMINATED, _ERROR)) - (trial.status in (_TERMINATED, _ERROR))
        if trial.status == _PENDING:
            self._pending.pop(trial, None)
        if status == _PENDING:
            self._pending[trial] = None
            self._pending_list.append(trial)
            self._pending_by_res[trial] = None
        else:
            self._pending_by_res.pop(trial, None)
        trial.set_status(status)
        self._runs[trial].rec.status = status

    def stop_trial(self, trial: Trial) -> None:
        """As ``TuneController.stop_trial``: ``on_trial_remove`` for PENDING/PAUSED, ``on_trial_complete``
        (with the flattened last result) for RUNNING trials; then the actor is stopped."""
        if trial.status in (_ERROR, _TERMINATED):
            return
        row = self._runs[trial].row
        if trial.status in (_PENDING, _PAUSED):
            self._log("remove", row, self._runs[trial].rec.last_epoch)
            self._scheduler_alg.on_trial_remove(self, trial)
        elif trial.status == _RUNNING:
            self._log("complete", row, self._runs[trial].rec.last_epoch)
            self._scheduler_alg.on_trial_complete(self, trial, flatten_dict(trial.last_result))
        self._schedule_trial_stop(trial)
        self._live_trials.discard(trial)

    def pause_trial(self, trial: Trial, should_checkpoint: bool = True) -> None:
        self._cached_decisions.pop(trial, None)
        self._schedule_trial_pause(trial, should_checkpoint=should_checkpoint)

    def _schedule_trial_save(self, trial: Trial, result: dict[str, Any] | None = None) -> Any:
        run = self._runs[trial]
        actor = run.actor
        if actor is None or actor.state != "live":
            return None
        run.pending_save = run.last_report
        trial.temporary_state.saving_to = _SAVING
        self._push(self._lat.save, "save", actor)
        return _SAVING

    # ------------------------------------------------------------------ controller internals (Ray's names)
    def _log(self, kind: str, row: int, epoch: int, detail: str = "") -> None:
        if self._record:
            self.events.append((self.now, kind, row, epoch, detail))

    def _push(self, delay: float, kind: str, actor: _Actor) -> None:
        # at equal times, short tasks (ready, reset, restore, save, done, stopped) resolve before training
        # results, in the order they were scheduled: the limit of a real cluster where they take ~ms and
        # results of equally long epochs still arrive some ms apart
        heapq.heappush(self._heap, (self.now + delay, kind == "result", next(self._seq), kind, actor, actor.gen))

    def _add_trial(self) -> bool:
        if self._next_pos >= len(self._order):
            self._search_finished = True  # BasicVariantGenerator: the call that finds no trial sets finished
            return False
        pos = self._next_pos
        self._next_pos += 1
        row = self._order[pos]
        trial = Trial("__fake", trial_id=f"sim_{pos:05d}", stub=True, config={"row": row},
                      stopping_criterion=dict(self._stop))  # fmt: skip
        rec = TrialRecord(index=row, position=pos, trial_id=trial.trial_id)
        self.records[row] = rec
        self._runs[trial] = _Run(trial, rec)
        self._trials.append(trial)
        self._live_trials.add(trial)
        self._log("add", row, 0)
        self._scheduler_alg.on_trial_add(self, trial)
        self._runs[trial].rec.status = trial.status
        if trial.status == _PENDING:  # TuneController.add_trial files it under the status on_trial_add left
            self._pending[trial] = None
            self._pending_list.append(trial)
            self._pending_by_res[trial] = None
        return True

    def _maybe_update_trial_queue(self) -> None:
        if self._search_finished:
            return
        while len(self._pending) < self._max_pending:
            if not self._add_trial():
                break

    def is_finished(self) -> bool:
        return self._search_finished and self._n_finished == len(self._trials)

    def _maybe_add_actors(self) -> None:
        self.choose_calls += 1
        trial_to_run = self._scheduler_alg.choose_trial_to_run(self)
        if trial_to_run is not None:
            if trial_to_run not in self._staged and self._runs[trial_to_run].actor is None:
                self._set_trial_status(trial_to_run, _PENDING)
                self._staged[trial_to_run] = None
                self._cache_max += 1
                self._schedule_trial_actor(trial_to_run)
            else:
                self._maybe_reuse_cached_actor(trial_to_run)
        candidates = self._pending_list
        kept: list[Trial] = []
        while candidates:
            if len(self._actor_queue) >= self._max_pending:
                break
            trial = candidates.pop(0)
            if trial not in self._pending:
                continue
            if self._runs[trial].actor is not None:
                kept.append(trial)
                continue
            if trial in self._staged:
                self._maybe_reuse_cached_actor(trial)
                continue
            self._staged[trial] = None
            self._cache_max += 1
            self._schedule_trial_actor(trial)
        self._pending_list = kept + candidates
        if self._cache and self._pending_by_res:
            # Ray pops from a set of trials (hash order of object addresses): an arbitrary PENDING trial
            pending = list(self._pending_by_res)
            start_trial = pending[int(self._rng.integers(len(pending)))] if len(pending) > 1 else pending[0]
            del self._pending_by_res[start_trial]
            if not self._maybe_reuse_cached_actor(start_trial):
                self._pending_by_res[start_trial] = None
            elif start_trial not in self._staged:
                self._staged[start_trial] = None
                self._cache_max += 1

    def _maybe_reuse_cached_actor(self, trial: Trial) -> bool:
        if trial in self._resetting:
            return True
        if not self._cache:
            return False
        actor = self._cache.pop(0)
        run = self._runs[trial]
        if run.actor is not None:
            original = run.actor
            original.run = None
            run.actor = None
            self._remove_actor(original)
        actor.run = run
        run.actor = actor
        self._resetting.add(trial)
        self._push(self._lat.reset, "reset", actor)
        return True

    def _schedule_trial_actor(self, trial: Trial) -> None:
        if self._maybe_reuse_cached_actor(trial):
            return
        run = self._runs[trial]
        actor = _Actor(next(self._actor_ids), run)
        run.actor = actor
        self._actor_queue.append(actor)

    def _try_start_actors(self) -> None:
        while self._free > 0 and self._actor_queue:
            actor = self._actor_queue.pop(0)
            self._free -= 1
            actor.state = "live"
            actor.ready_pending = True
            extra = self._rng.uniform(0.0, self._lat.start_spread) if self._lat.start_spread else 0.0
            self._push(self._lat.start + extra, "ready", actor)

    def _remove_actor(self, actor: _Actor) -> None:
        """``RayActorManager.remove_actor``: cancel a request, or stop a live actor (CPU freed once stopped)."""
        actor.gen += 1  # its task futures are discarded
        if actor.state == "pending":
            self._actor_queue.remove(actor)
            actor.state = "dead"
        elif actor.state == "live":
            actor.ready_pending = False  # a __ray_ready__ not yet resolved never fires
            actor.state = "stopping"  # holds its CPU until the stop resolves
            self._push(self._lat.stop, "stopped", actor)

    def _unstage_trial_with_resources(self, trial: Trial) -> None:
        if trial in self._staged:
            del self._staged[trial]
            self._cache_max -= 1
            return
        if self._staged:  # any staged trial: they all need the same resources
            del self._staged[next(iter(self._staged))]
            self._cache_max -= 1
            return
        raise RuntimeError("a trial started on resources no staged trial requested (Ray Tune raises here too)")

    def _actor_started(self, actor: _Actor, reused: bool) -> None:
        actor.started = True
        run = actor.run
        assert run is not None
        trial = run.trial
        self._unstage_trial_with_resources(trial)
        self._set_trial_status(trial, _RUNNING)
        # a new (or reset) trainable starts at epoch 0 unless it restores a checkpoint
        if run.rec.last_epoch > 0 and run.ckpt is None:
            run.rec.scratch_restarts += 1
        run.epoch, run.iteration, run.time_total, run.last_report = 0, 0, 0.0, None
        run.rec.starts += 1
        self._log("reuse" if reused else "start", run.row, run.rec.last_epoch)
        if run.ckpt is not None:
            self._push(self._lat.restore, "restore", actor)
        else:
            self._schedule_trial_train(trial)

    def _schedule_trial_train(self, trial: Trial) -> None:
        run = self._runs[trial]
        actor = run.actor
        if actor is None or actor.state != "live":
            return
        if run.epoch >= self._T:  # the function returned: Ray's duplicate result with done=True
            self._push(self._lat.finish, "done", actor)
            return
        run.in_flight = float(self._durations[run.row, run.epoch])
        self._push(run.in_flight + self._lat.report, "result", actor)

    def _queue_decision(self, trial: Trial, decision: str) -> None:
        old = self._queued_decisions.setdefault(trial, decision)
        if old == _STOP:
            return
        if decision in (_STOP, _PAUSE):
            self._queued_decisions[trial] = decision

    def _execute_action(self, trial: Trial, decision: str, after_save: bool = False) -> None:
        if decision == _CONTINUE:
            self._schedule_trial_train(trial)
        elif decision == _PAUSE:
            self.pause_trial(trial, should_checkpoint=not after_save)
        elif decision == _STOP:
            self.stop_trial(trial)
        elif decision != _NOOP:
            raise ValueError(f"invalid scheduler decision {decision!r}")

    def _maybe_execute_queued_decision(self, trial: Trial, after_save: bool = False) -> None:
        decision = self._queued_decisions.pop(trial, None)
        if decision:
            self._execute_action(trial, decision, after_save=after_save)

    def _schedule_trial_stop(self, trial: Trial) -> None:
        if trial.status == _ERROR:
            return
        if trial.is_saving:
            self._cached_decisions[trial] = _STOP
        trial.temporary_state.saving_to = None
        trial.temporary_state.restoring_from = None
        self._set_trial_status(trial, _TERMINATED)
        run = self._runs[trial]
        actor = run.actor
        if actor is None:
            return
        actor.gen += 1  # clear_actor_task_futures
        if self._maybe_cache_trial_actor(trial):
            return
        run.actor = None
        actor.run = None
        self._remove_actor(actor)

    def _maybe_cache_trial_actor(self, trial: Trial) -> bool:
        if not self._reuse:
            return False
        if self._search_finished and not self._staged:
            return False
        run = self._runs[trial]
        actor = run.actor
        if actor is None or actor.state != "live" or not actor.started:
            return False
        # _ObjectCache(may_keep_one=True).cache_object
        if len(self._cache) >= self._cache_max and (self._cache or self._cache_max != 0):
            return False
        self._cache.append(actor)
        run.actor = None
        actor.run = None
        return True

    def _cleanup_cached_actors(self) -> None:
        force_all = self._search_finished and not self._staged and self._cache_max == 0
        max_cached = 0 if force_all else self._cache_max
        if len(self._cache) == 1 and not force_all and self._cache_max == 0:
            return  # may_keep_one
        while len(self._cache) > max_cached:
            self._remove_actor(self._cache.pop(0))

    def _schedule_trial_pause(self, trial: Trial, should_checkpoint: bool = True) -> None:
        run = self._runs[trial]
        if run.actor is None:
            return
        if should_checkpoint:
            self._cached_decisions[trial] = _PAUSE
            self._schedule_trial_save(trial)
        else:
            self._schedule_trial_stop(trial)
            self._set_trial_status(trial, _PAUSED)
            run.rec.pauses += 1
            self._log("pause", run.row, run.rec.last_epoch)

    def _process_trial_result(self, trial: Trial, result: dict[str, Any], duplicate: bool) -> str | None:
        flat = dict(result)  # = flatten_dict(result): the simulated results are flat
        if trial.should_stop(flat):
            decision = _STOP
        else:
            decision = self._scheduler_alg.on_trial_result(self, trial, flat)
        if decision == _STOP:
            result["done"] = True
        run = self._runs[trial]
        self._log("done" if duplicate else "result", run.row, run.rec.last_epoch, decision)
        force_checkpoint = False
        if not duplicate:
            force_checkpoint = bool(result.get("should_checkpoint", False))
            # Trial.update_last_result also feeds trial.metric_analysis (read by progress reporters, by no
            # scheduler); it costs half the simulation's time, so only the last result is kept
            trial.run_metadata.last_result = result
        if decision != _PAUSE and force_checkpoint and run.actor is not None and run.actor.state == "live":
            self._schedule_trial_save(trial)
        if trial.is_saving:
            if trial not in self._cached_decisions or decision in (_PAUSE, _STOP):
                self._cached_decisions[trial] = decision
            return None
        self._queue_decision(trial, decision)
        return decision

    # ------------------------------------------------------------------ events
    def _on_result(self, run: _Run) -> None:
        run.epoch += 1
        run.iteration += 1
        e = run.epoch
        dur = run.in_flight
        run.time_total += dur
        self.busy += dur
        value = float(self._curves[run.row, e - 1])
        rec = run.rec
        rec.epochs_trained += 1
        rec.last_epoch = e
        rec.max_epoch = max(rec.max_epoch, e)
        rec.last_value = value
        if e == self._T:
            rec.reached_top = True
            self.top_values[run.row] = value
        with_ckpt = bool(self._ckpt_epochs[e - 1])
        result = {
            self._metric: value, "epoch": e, "training_iteration": run.iteration, "time_this_iter_s": dur,
            "time_total_s": run.time_total, "done": False, "trial_id": run.trial.trial_id,
        }  # fmt: skip
        if with_ckpt:
            result["should_checkpoint"] = True
        run.last_report = (e, run.iteration, run.time_total, dict(result), with_ckpt)
        self._process_trial_result(run.trial, result, duplicate=False)
        self._maybe_execute_queued_decision(run.trial)

    def _on_done(self, run: _Run) -> None:
        result = run.trial.last_result
        result.update(done=True)
        self._process_trial_result(run.trial, result, duplicate=True)
        self._maybe_execute_queued_decision(run.trial)

    def _on_save(self, run: _Run) -> None:
        trial = run.trial
        saved = run.pending_save
        run.pending_save = None
        if saved is not None and saved[4]:  # the last report carried a checkpoint: register it
            run.ckpt = saved[:4]
        trial.temporary_state.saving_to = None
        decision = self._cached_decisions.pop(trial, None)
        self._log("save", run.row, run.rec.last_epoch, decision or "")
        if decision:
            self._queue_decision(trial, decision)
        self._maybe_execute_queued_decision(trial, after_save=True)

    def _on_restore(self, run: _Run) -> None:
        assert run.ckpt is not None
        e, it, tt, metrics = run.ckpt
        run.epoch, run.iteration, run.time_total = e, it, tt
        run.trial.run_metadata.last_result = dict(metrics)
        self._log("restore", run.row, e)
        self._set_trial_status(run.trial, _RUNNING)
        self._schedule_trial_train(run.trial)
        self._live_trials.add(run.trial)

    def _process_event(self, kind: str, actor: _Actor) -> None:
        if kind == "stopped":
            actor.state = "dead"
            self._free += 1
            if actor.run is not None and actor.run.actor is actor:
                actor.run.actor = None
            actor.run = None
            return
        if kind == "ready":
            actor.ready_pending = False
            self._actor_started(actor, reused=False)
            return
        run = actor.run
        assert run is not None
        if kind == "reset":
            self._resetting.discard(run.trial)
            self._actor_started(actor, reused=True)
        elif kind == "result":
            self._on_result(run)
        elif kind == "done":
            self._on_done(run)
        elif kind == "save":
            self._on_save(run)
        elif kind == "restore":
            self._on_restore(run)

    def _next_event(self) -> tuple[str, _Actor] | None:
        while self._heap:
            t, _, _, kind, actor, gen = heapq.heappop(self._heap)
            if kind == "stopped":
                pass  # a state future: not discarded by clearing task futures
            elif kind == "ready":
                if not actor.ready_pending or actor.state != "live" or actor.run is None:
                    continue
            elif gen != actor.gen or actor.run is None or actor.state != "live":
                continue  # a discarded task future
            self.now = max(self.now, t)
            return kind, actor
        return None

    def run(self, max_steps: int) -> tuple[bool, bool]:
        """Run the step loop; returns (hang, truncated)."""
        idle = False
        while True:
            if self._search_finished and self.is_finished():
                return False, False
            if self.steps >= max_steps:
                return False, True
            self._maybe_update_trial_queue()
            self._maybe_add_actors()
            self._try_start_actors()
            ev = self._next_event()
            if ev is None:
                if self.is_finished():  # choose_trial_to_run stopped the last trials
                    return False, False
                if idle:  # a second idle step with the same state: Ray would wait forever
                    for t in self._trials:
                        if t.status == _PAUSED:
                            self._log("hang", self._runs[t].row, self._runs[t].rec.last_epoch)
                    return True, False
                idle = True
                continue
            idle = False
            self.steps += 1
            self._process_event(*ev)
            self.now += self._lat.step
            self._try_start_actors()
            if self._reuse:
                self._cleanup_cached_actors()


def _as_durations(epoch_seconds: Any, K: int, T: int) -> np.ndarray:
    d = np.asarray(epoch_seconds, dtype=float)
    if d.ndim == 0:
        d = np.full((K, T), float(d))
    elif d.shape == (K,):
        d = np.repeat(d[:, None], T, axis=1)
    elif d.shape != (K, T):
        raise ValueError(f"epoch_seconds has shape {d.shape}; accepted: a number, ({K},) or ({K}, {T})")
    if not np.all(np.isfinite(d)) or np.any(d < 0):
        raise ValueError("epoch_seconds must be finite and ≥ 0")
    return d


def simulate(
    scheduler: TrialScheduler,
    curves: Any,
    *,
    workers: int = 2,
    epoch_seconds: float | Sequence[float] | np.ndarray = 1.0,
    checkpoint: bool | Collection[int] = True,
    metric: str = "acc",
    mode: str = "max",
    time_attr: str = "training_iteration",
    max_t: float | None = None,
    seed: int = 0,
    trial_order: Sequence[int] | None = None,
    reuse_actors: bool = False,
    latencies: Latencies | None = None,
    max_pending_trials: int | None = None,
    jitter: float = 0.0,
    record_events: bool = True,
    max_steps: int | None = None,
    quiet: bool = True,
) -> SimResult:
    """Simulate ``Tuner.fit`` of ``K`` trials replaying ``curves`` under ``scheduler`` on ``workers`` CPUs.

    Args:
        scheduler: a fresh Ray ``TrialScheduler`` (it is mutated; build one per call). Its metric and mode,
            if unset, are set from ``metric``/``mode`` as ``TuneConfig(metric=, mode=)`` would.
        curves: ``K × T`` array; ``curves[k, e - 1]`` is trial ``k``'s metric after epoch ``e`` (NaN allowed).
        workers: CPUs (one trial per CPU), ≥ 1.
        epoch_seconds: seconds per epoch: one number, one per trial (``K``) or per trial and epoch (``K × T``).
        checkpoint: True (every report carries a checkpoint), False (none: a paused trial restarts at epoch 1),
            or the epochs (1-based) whose reports carry one.
        metric, mode: the reported metric and its direction ("max" or "min").
        time_attr, max_t: a stopping criterion ``RunConfig(stop={time_attr: max_t})``; None: none (trials end
            after epoch ``T`` or when the scheduler stops them). ``time_attr`` is "training_iteration" (reset
            by a restart without checkpoint) or "epoch".
        seed: seeds NumPy's global generator during the run (ASHA draws brackets from it; restored after) and
            the ``jitter`` noise.
        trial_order: the row of ``curves`` that the i-th added trial replays (a permutation); default 0..K-1.
        reuse_actors: ``TuneConfig(reuse_actors=)`` (Ray's default False).
        latencies: :class:`Latencies` (default all 0; :data:`RAY_LOCAL` approximates local Ray).
        max_pending_trials: Ray's ``TUNE_MAX_PENDING_TRIALS_PG``; default ``max(200, int(1.1 × workers))``.
        jitter: relative noise on epoch durations, ``d × (1 + jitter × U(-1, 1))``, drawn from ``seed``.
        record_events: keep the event log in :attr:`SimResult.events`.
        max_steps: stop (``truncated=True``) after this many events; default ``100 × K × T + 1000``.
        quiet: silence the ``ray.tune`` loggers below WARNING during the run (HyperBand logs every resume
            from an older checkpoint at INFO).

    Returns:
        A :class:`SimResult`.

    Example:
        >>> import numpy as np
        >>> from ray.tune.schedulers import ASHAScheduler
        >>> curves = np.array([[0.1, 0.2, 0.3], [0.5, 0.6, 0.7], [0.3, 0.4, 0.5]])
        >>> res = simulate(ASHAScheduler(max_t=3, grace_period=1, reduction_factor=3), curves, workers=1)
        >>> res.epochs.tolist(), res.best()
        ([3, 3, 1], 1)
    """
    if mode not in ("min", "max"):
        raise ValueError(f"mode = {mode!r} is unknown; accepted: 'min', 'max'")
    c = np.asarray(curves, dtype=float)
    if c.ndim != 2 or c.shape[0] < 1 or c.shape[1] < 1:
        raise ValueError(f"curves must be a K × T array with K, T ≥ 1; got shape {c.shape}")
    K, T = c.shape
    if not isinstance(workers, (int, np.integer)) or workers < 1:
        raise ValueError(f"workers = {workers!r} must be an integer ≥ 1")
    if time_attr not in ("training_iteration", "epoch"):
        raise ValueError(f"time_attr = {time_attr!r} is unknown; accepted: 'training_iteration', 'epoch'")
    if max_t is not None and not (math.isfinite(max_t) and max_t > 0):
        raise ValueError(f"max_t = {max_t!r} must be a positive number or None")
    if not (math.isfinite(jitter) and 0 <= jitter < 1):
        raise ValueError(f"jitter = {jitter!r} must be in [0, 1)")
    order = list(range(K)) if trial_order is None else [int(i) for i in trial_order]
    if sorted(order) != list(range(K)):
        raise ValueError(f"trial_order must be a permutation of 0..{K - 1}")
    if isinstance(checkpoint, bool):
        ckpt = np.full(T, checkpoint)
    else:
        epochs = [int(e) for e in checkpoint]
        if any(e < 1 or e > T for e in epochs):
            raise ValueError(f"checkpoint epochs must lie in 1..{T}; got {sorted(epochs)}")
        ckpt = np.zeros(T, dtype=bool)
        ckpt[np.array(epochs, dtype=int) - 1] = True
    durations = _as_durations(epoch_seconds, K, T)
    rng = np.random.default_rng(seed)
    if jitter:
        durations = durations * (1.0 + jitter * rng.uniform(-1.0, 1.0, size=durations.shape))
    pending = max_pending_trials if max_pending_trials is not None else max(200, int(workers * 1.1))
    if pending < 1:
        raise ValueError(f"max_pending_trials = {pending} must be ≥ 1")
    stop = {} if max_t is None else {time_attr: max_t}
    own_metric = getattr(scheduler, "_metric", None)
    if own_metric:  # the scheduler was built with its metric: TuneConfig(metric=None, mode=None)
        ok = scheduler.set_search_properties(None, None, stop=stop, num_samples=1)
        if own_metric != metric:
            raise ValueError(f"the scheduler reads metric {own_metric!r} but simulate(metric={metric!r})")
    else:
        ok = scheduler.set_search_properties(metric, mode, stop=stop, num_samples=1)
    if not ok:
        raise ValueError("the scheduler refused metric/mode (set_search_properties returned False)")
    sim = _TuneSim(
        scheduler, c, durations, workers=int(workers), ckpt_epochs=ckpt, metric=metric, mode=mode, stop=stop,
        order=order, reuse_actors=reuse_actors, lat=latencies or Latencies(), max_pending_trials=pending,
        record_events=record_events, rng=rng,
    )  # fmt: skip
    # ASHA draws each trial's bracket from NumPy's global generator: seed it for the run, then restore it
    state = np.random.get_state()  # noqa: NPY002
    np.random.seed(int(rng.integers(2**32 - 1)))  # noqa: NPY002
    tune_logger = logging.getLogger("ray.tune")
    level = tune_logger.level
    if quiet:
        tune_logger.setLevel(max(level, logging.WARNING))
    try:
        hang, truncated = sim.run(max_steps if max_steps is not None else 100 * K * T + 1000)
    finally:
        np.random.set_state(state)  # noqa: NPY002
        tune_logger.setLevel(level)
    records = [r for r in sim.records if r is not None]
    total = sum(r.epochs_trained for r in records)
    makespan = sim.now
    util = sim.busy / (workers * makespan) if makespan > 0 else 0.0
    return SimResult(
        trials=records, T=T, workers=int(workers), mode=mode, total_epochs=total, makespan=makespan,
        busy_seconds=sim.busy, utilisation=util, choose_calls=sim.choose_calls, steps=sim.steps, hang=hang,
        truncated=truncated, events=sim.events, top_values=dict(sim.top_values),
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------- real Ray
def replay_trainable(config: dict[str, Any]) -> None:
    """Ray Tune function trainable replaying one learning curve: the trainable :func:`simulate` models.

    ``config``: ``values`` (the curve, one value per epoch), ``metric`` (its name), ``epoch_seconds`` (sleep
    per epoch: one number or one per epoch), ``ckpt`` (1-based epochs whose report carries a checkpoint).
    Resumes after the epoch stored in ``tune.get_checkpoint()``; reports ``{metric: values[e - 1], "epoch": e}``.
    """
    from ray import tune

    values = config["values"]
    seconds = config.get("epoch_seconds", 0.0)
    seconds = [float(seconds)] * len(values) if isinstance(seconds, (int, float)) else [float(x) for x in seconds]
    ckpt = set(config.get("ckpt", ()))
    start = 0
    restored = tune.get_checkpoint()
    if restored is not None:
        with restored.as_directory() as d:
            state = json.loads((Path(d) / "state.json").read_text())
        if not (isinstance(state, dict) and isinstance(state.get("epoch"), int)):
            raise ValueError("the checkpoint's state.json does not hold an integer epoch")
        start = state["epoch"]
    for epoch in range(start + 1, len(values) + 1):
        time.sleep(seconds[epoch - 1])
        metrics = {config["metric"]: float(values[epoch - 1]), "epoch": epoch}
        if epoch in ckpt:
            with tempfile.TemporaryDirectory() as d:
                (Path(d) / "state.json").write_text(json.dumps({"epoch": epoch}))
                tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(d))
        else:
            tune.report(metrics)


class _Recording(TrialScheduler):
    """Delegates every call to a scheduler and records its decisions and the ``choose_trial_to_run`` calls."""

    def __init__(self, inner: TrialScheduler, log: Callable[[str, Trial, str, dict[str, Any] | None], None]) -> None:
        super().__init__()
        self.inner = inner
        self._log = log
        self._supports_buffered_results = inner._supports_buffered_results
        self.choose_calls = 0

    @property
    def metric(self) -> str | None:
        return self.inner.metric

    def set_search_properties(self, metric: str | None, mode: str | None, **spec: Any) -> bool:
        return self.inner.set_search_properties(metric, mode, **spec)

    def on_trial_add(self, tune_controller: Any, trial: Trial) -> None:
        self.inner.on_trial_add(tune_controller, trial)

    def on_trial_error(self, tune_controller: Any, trial: Trial) -> None:
        self.inner.on_trial_error(tune_controller, trial)

    def on_trial_result(self, tune_controller: Any, trial: Trial, result: dict[str, Any]) -> str:
        decision = self.inner.on_trial_result(tune_controller, trial, result)
        self._log("result", trial, decision, result)
        return decision

    def on_trial_complete(self, tune_controller: Any, trial: Trial, result: dict[str, Any]) -> None:
        self._log("complete", trial, "", result)
        self.inner.on_trial_complete(tune_controller, trial, result)

    def on_trial_remove(self, tune_controller: Any, trial: Trial) -> None:
        self._log("remove", trial, "", None)
        self.inner.on_trial_remove(tune_controller, trial)

    def choose_trial_to_run(self, tune_controller: Any) -> Trial | None:
        self.choose_calls += 1
        return self.inner.choose_trial_to_run(tune_controller)

    def debug_string(self) -> str:
        return self.inner.debug_string()


def run_tuner(
    scheduler: TrialScheduler,
    curves: Any,
    *,
    epoch_seconds: float | Sequence[float] | np.ndarray = 0.0,
    checkpoint: bool | Collection[int] = True,
    metric: str = "acc",
    mode: str = "max",
    time_attr: str = "training_iteration",
    max_t: float | None = None,
    trial_order: Sequence[int] | None = None,
    reuse_actors: bool = False,
    storage_path: str | None = None,
) -> SimResult:
    """Run the experiment :func:`simulate` models with a real ``tune.Tuner``. Ray must be initialised by a
    process whose ``sys.path`` reaches the repository root (Ray hands the driver's ``sys.path`` to its workers,
    which import :func:`replay_trainable` from ``benchmarks.tune_sim``).

    Same arguments as :func:`simulate`; the number of workers is the cluster's CPUs. Returns a
    :class:`SimResult` with wall-clock times (``makespan`` = ``Tuner.fit`` seconds, ``busy_seconds`` = epochs ×
    ``epoch_seconds``) and the events seen by a callback and by a recording wrapper around the scheduler.
    """
    import ray
    from ray import tune

    if not ray.is_initialized():
        raise RuntimeError("run_tuner needs ray.init(num_cpus=...) first")
    c = np.asarray(curves, dtype=float)
    K, T = c.shape
    order = list(range(K)) if trial_order is None else [int(i) for i in trial_order]
    if sorted(order) != list(range(K)):
        raise ValueError(f"trial_order must be a permutation of 0..{K - 1}")
    ckpt = list(range(1, T + 1)) if checkpoint is True else [] if checkpoint is False else sorted(checkpoint)
    durations = _as_durations(epoch_seconds, K, T)
    workers = int(ray.cluster_resources().get("CPU", 1))
    t0 = time.perf_counter()
    events: list[tuple[float, str, int, int, str]] = []
    records = [TrialRecord(index=row, position=pos, trial_id="") for pos, row in enumerate(order)]
    by_row = {r.index: r for r in records}
    top: dict[int, float] = {}
    status: dict[int, str] = {}
    busy_parts: list[float] = []

    def log(kind: str, trial: Trial, detail: str, result: dict[str, Any] | None) -> None:
        row = int(trial.config["row"])
        epoch = (result or {}).get("epoch", by_row[row].last_epoch)
        events.append((time.perf_counter() - t0, kind, row, int(epoch or 0), detail))

    class _Callback(tune.Callback):
        def on_trial_start(self, iteration: int, trials: list, trial: Trial, **info: Any) -> None:
            rec = by_row[int(trial.config["row"])]
            rec.trial_id = trial.trial_id
            rec.starts += 1
            events.append((time.perf_counter() - t0, "start", rec.index, rec.last_epoch, ""))

        def on_trial_result(self, iteration: int, trials: list, trial: Trial, result: dict, **info: Any) -> None:
            rec = by_row[int(trial.config["row"])]
            e = int(result["epoch"])
            if e == 1 and rec.last_epoch > 0:
                rec.scratch_restarts += 1
            rec.epochs_trained += 1
            busy_parts.append(float(durations[rec.index, e - 1]))
            rec.last_epoch = e
            rec.max_epoch = max(rec.max_epoch, e)
            rec.last_value = float(result[metric])
            if e == T:
                rec.reached_top = True
                top[rec.index] = rec.last_value

        def on_step_end(self, iteration: int, trials: list, **info: Any) -> None:
            for trial in trials:  # count transitions to PAUSED
                rec = by_row[int(trial.config["row"])]
                if trial.status == Trial.PAUSED and status.get(rec.index) != Trial.PAUSED:
                    rec.pauses += 1
                status[rec.index] = trial.status

    rec_sched = _Recording(scheduler, log)
    space = {
        "row": tune.grid_search(order),
        "values": tune.sample_from(lambda config: c[config["row"]].tolist()),
        "epoch_seconds": tune.sample_from(lambda config: durations[config["row"]].tolist()),
        "metric": metric, "ckpt": ckpt,
    }  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        tuner = tune.Tuner(
            replay_trainable,
            param_space=space,
            tune_config=tune.TuneConfig(metric=metric, mode=mode, scheduler=rec_sched, reuse_actors=reuse_actors),
            run_config=tune.RunConfig(
                name="tune_sim", storage_path=storage_path or tmp, verbose=0,
                stop={time_attr: max_t} if max_t is not None else None,
                callbacks=[_Callback()],
            ),
        )  # fmt: skip
        grid = tuner.fit()
        wall = time.perf_counter() - t0
    for res in grid:
        by_row[int(res.config["row"])].status = Trial.ERROR if res.error else Trial.TERMINATED
    total = sum(r.epochs_trained for r in records)
    busy = float(sum(busy_parts))
    return SimResult(
        trials=sorted(records, key=lambda r: r.index), T=T, workers=workers, mode=mode, total_epochs=total,
        makespan=wall, busy_seconds=busy, utilisation=busy / (workers * wall), choose_calls=rec_sched.choose_calls,
        steps=len(events), events=events, top_values=top,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------- speed benchmark
def _schedulers(K: int, T: int, ladder: Any = None, sigma: float = 0.01) -> dict[str, Callable[[], TrialScheduler]]:
    """FIFO, ASHA, HyperBand and the two IISE schedulers with ``time_attr="epoch"`` and ``max_t = T``."""
    from mf_sched.integrations.ray import AsyncIISEScheduler, IISEScheduler
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, HyperBandScheduler

    from mf_sched import FidelityLadder

    if ladder is None:
        res = sorted({r for r in (1, 3, 9, 27, 81, 243) if r < T} | {T})
        ladder = FidelityLadder(costs=res, zeta=np.linspace(0.1, 0.0, len(res)).tolist(), resources=res)
    return {
        "FIFO": FIFOScheduler,
        "ASHA": lambda: ASHAScheduler(time_attr="epoch", max_t=T, grace_period=1, reduction_factor=3),
        "HyperBand": lambda: HyperBandScheduler(time_attr="epoch", max_t=T, reduction_factor=3),
        "IISEScheduler": lambda: IISEScheduler(ladder, time_attr="epoch", sigma=sigma, n_trials=K),
        "AsyncIISEScheduler": lambda: AsyncIISEScheduler(ladder, time_attr="epoch", sigma=sigma, n_trials=K),
    }


def _rung_eta(K: int, T: int) -> TrialScheduler:
    from mf_sched.integrations.ray import RungScheduler

    from mf_sched import FidelityLadder

    res = sorted({r for r in (1, 3, 9, 27, 81, 243) if r < T} | {T})
    ladder = FidelityLadder(costs=res, zeta=np.linspace(0.1, 0.0, len(res)).tolist(), resources=res)
    return RungScheduler(ladder, rule="iise", time_attr="epoch", sigma=0.01, n_trials=K, eta=3)


def _agreement_cases(n_synthetic: int, n_lcbench: int) -> list[dict[str, Any]]:
    """K = 9 × T = 9 synthetic cases (equal and unequal epoch durations, a checkpoint every epoch) and the
    LCBench replays (K = 24, T = 52, 10 ms epochs, checkpoints at the rungs 1, 3, 9, 27, 52)."""
    from mf_sched import FidelityLadder

    cases = []
    for seed in range(n_synthetic):
        rng = np.random.default_rng(100 + seed)
        q, a = rng.uniform(0.5, 0.9, 9), rng.uniform(0.1, 0.6, 9)
        curves = q[:, None] * (1 - a[:, None] / np.arange(1, 10))
        seconds: Any = 0.1 if seed % 2 == 0 else rng.uniform(0.08, 0.25, 9)
        ladder = FidelityLadder(costs=[1, 3, 9], zeta=[0.2, 0.05, 0.0], resources=[1, 3, 9])
        cases.append({"case": f"synthetic-{seed}", "curves": curves, "seconds": seconds, "checkpoint": True,
                      "ladder": ladder, "sigma": 0.01})  # fmt: skip
    if n_lcbench:
        from mf_sched.curves.datasets import LCBenchSurrogate
        from mf_sched.curves.replay import ReplayBenchmark

        rungs = [1, 3, 9, 27, 52]
        sur = LCBenchSurrogate()
        for ti, task in enumerate(list(sur.tasks)[:n_lcbench]):
            lc = sur.curves(task, n_configs=400, epochs=rungs, seed=ti)
            bench = ReplayBenchmark.from_curves(lc, rungs, n_arms=24, calibration="holdout", extra_noise=0.01, seed=ti)
            rng = np.random.default_rng(ti)
            runs = [bench.start_run(a, rng) for a in range(bench.K)]
            at_rungs = np.array([[runs[a].advance(m).score for m in range(len(rungs))] for a in range(bench.K)])
            last = [max(i for i, r in enumerate(rungs) if r <= e) for e in range(1, 53)]
            cases.append({"case": f"lcbench-{task}", "curves": at_rungs[:, last], "seconds": 0.01,
                          "checkpoint": rungs, "ladder": bench.ladder, "sigma": 0.01})  # fmt: skip
    return cases


def agreement(n_synthetic: int = 4, n_lcbench: int = 1, n_perturbed: int = 40) -> list[dict[str, Any]]:
    """Run each case with a real ``Tuner.fit`` (Ray initialised, 2 CPUs, ``reuse_actors=True``) and with
    :func:`simulate`, per scheduler; also ``n_perturbed`` simulations with :data:`RAY_LOCAL` timing and 30 %
    epoch jitter. Returns one row per case and scheduler."""
    from mf_sched._progress import Progress

    cases = _agreement_cases(n_synthetic, n_lcbench)
    rows = []
    with Progress(5 * len(cases), "agreement with Ray") as bar:
        for case in cases:
            curves = case["curves"]
            K, T = curves.shape
            for name, make in _schedulers(K, T, case["ladder"], case["sigma"]).items():
                kw: dict[str, Any] = dict(
                    epoch_seconds=case["seconds"], checkpoint=case["checkpoint"], reuse_actors=True
                )
                real = run_tuner(make(), curves, **kw)
                nominal = simulate(make(), curves, **kw)
                outcomes: dict[tuple[tuple[int, ...], tuple[int, ...]], int] = {}
                for s in range(n_perturbed):
                    o = simulate(make(), curves, latencies=RAY_LOCAL, jitter=0.3, seed=s, **kw)
                    key = (tuple(o.epochs.tolist()), tuple(o.reached_top))
                    outcomes[key] = outcomes.get(key, 0) + 1
                r_key = (tuple(real.epochs.tolist()), tuple(real.reached_top))
                n_key = (tuple(nominal.epochs.tolist()), tuple(nominal.reached_top))
                rows.append({
                    "case": case["case"], "scheduler": name, "exact": r_key == n_key,
                    "real_in_perturbed": r_key in outcomes, "perturbed_outcomes": len(outcomes),
                    "real_share_of_perturbed": outcomes.get(r_key, 0) / n_perturbed,
                    "epochs_real": real.total_epochs, "epochs_sim": nominal.total_epochs,
                    "trials_differing": int(np.sum(real.epochs != nominal.epochs)),
                    "best_real": real.best(), "best_sim": nominal.best(), "real_fit_s": real.makespan,
                    "real_epochs": real.epochs.tolist(), "sim_epochs": nominal.epochs.tolist(),
                    "real_top": real.reached_top, "sim_top": nominal.reached_top, "sim_hang": nominal.hang,
                })  # fmt: skip
                bar.update()
    return rows


def _init_ray() -> Any:
    import os

    import ray

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    root = str(Path(__file__).resolve().parents[1])  # workers import benchmarks.tune_sim.replay_trainable
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    return ray


def _plot(out: Path, draw: Callable[[Any], None]) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(7, 3.5))
    draw(ax)
    save_figure(fig, out.with_suffix(".png"))


def _main_agreement(args: argparse.Namespace) -> int:
    ray = _init_ray()
    try:
        rows = agreement(args.synthetic, args.lcbench, args.perturbed)
    finally:
        ray.shutdown()
    print("\nreal Tuner.fit (2 CPUs, reuse_actors=True) vs simulate(): per-trial epochs and the trials reaching T")
    print(f"{'case':22s} {'scheduler':20s} {'exact':>5s} {'in pert.':>8s} {'#pert.':>6s} {'epochs real/sim':>15s} "
          f"{'best real/sim':>13s}")  # fmt: skip
    for r in rows:
        print(f"{r['case']:22s} {r['scheduler']:20s} {'yes' if r['exact'] else 'NO':>5s} "
              f"{'yes' if r['real_in_perturbed'] else 'NO':>8s} {r['perturbed_outcomes']:6d} "
              f"{r['epochs_real']:7d}/{r['epochs_sim']:<7d} {r['best_real']!s:>6s}/{r['best_sim']!s:<6s}")  # fmt: skip
    names = list(dict.fromkeys(r["scheduler"] for r in rows))
    summary = {n: {"exact": sum(r["exact"] for r in rows if r["scheduler"] == n),
                   "in_perturbed": sum(r["real_in_perturbed"] for r in rows if r["scheduler"] == n),
                   "cases": sum(1 for r in rows if r["scheduler"] == n)} for n in names}  # fmt: skip
    for n, v in summary.items():
        c = v["cases"]
        print(f"{n:20s} exact {v['exact']}/{c}, real outcome among the perturbed simulations {v['in_perturbed']}/{c}")
    out = Path(args.out or "benchmarks/results/tune_sim_agreement.json")
    write_json(out, {"summary": summary, "rows": rows})

    def draw(ax: Any) -> None:
        ax.barh(names, [summary[n]["in_perturbed"] / summary[n]["cases"] for n in names], color="C1",
                label="real outcome among perturbed simulations")  # fmt: skip
        ax.barh(names, [summary[n]["exact"] / summary[n]["cases"] for n in names], color="C0",
                label="exact (per-trial epochs and trials reaching T)")  # fmt: skip
        ax.set_xlabel("share of cases")
        ax.legend(fontsize=7)

    _plot(out, draw)
    return 0


def main() -> int:
    """Speed of simulate() per scheduler (default), or its agreement with real Ray (``--agreement``)."""
    ap = argparse.ArgumentParser(description="benchmarks.tune_sim: speed, or agreement with real Ray Tune.")
    ap.add_argument("--arms", type=int, default=24, help="speed: trials K (default 24)")
    ap.add_argument("--epochs", type=int, default=52, help="speed: epochs T (default 52)")
    ap.add_argument("--seconds", type=float, default=3.0, help="speed: time per scheduler (default 3 s)")
    ap.add_argument("--vs-ray", action="store_true", help="speed: also one real Tuner.fit per scheduler")
    ap.add_argument("--agreement", action="store_true", help="compare with real Tuner.fit runs instead")
    ap.add_argument("--synthetic", type=int, default=4, help="agreement: synthetic 9 × 9 cases (default 4)")
    ap.add_argument("--lcbench", type=int, default=1, help="agreement: LCBench tasks, 24 × 52 (default 1)")
    ap.add_argument("--perturbed", type=int, default=40, help="agreement: perturbed simulations (default 40)")
    ap.add_argument("--out", default=None, help="JSON output (default benchmarks/results/tune_sim_*.json)")
    args = ap.parse_args()
    if args.agreement:
        return _main_agreement(args)
    from mf_sched._progress import Progress

    K, T = args.arms, args.epochs
    rng = np.random.default_rng(0)
    q, a = rng.uniform(0.5, 0.9, K), rng.uniform(0.1, 0.6, K)
    curves = q[:, None] * (1 - a[:, None] / np.arange(1, T + 1)) + rng.normal(0, 0.005, (K, T))
    makers = _schedulers(K, T)
    makers["RungScheduler(eta=3)"] = lambda: _rung_eta(K, T)
    rows: dict[str, dict[str, Any]] = {}
    with Progress(len(makers), "simulating") as bar:
        for name, make in makers.items():
            times: list[float] = []
            t_all = time.perf_counter()
            while time.perf_counter() - t_all < args.seconds or len(times) < 3:
                sched = make()
                t0 = time.perf_counter()
                res = simulate(sched, curves, record_events=False, seed=len(times))
                times.append(time.perf_counter() - t0)
            rows[name] = {"runs_per_s": len(times) / sum(times), "median_ms": 1e3 * float(np.median(times)),
                          "runs": len(times), "epochs": res.total_epochs, "steps": res.steps}  # fmt: skip
            bar.update()
    base = rows["FIFO"]["runs_per_s"]
    for r in rows.values():
        r["speed_vs_fifo"] = r["runs_per_s"] / base
    if args.vs_ray:
        ray = _init_ray()
        try:
            with Progress(len(makers), "real Tuner.fit") as bar:
                for name, make in makers.items():
                    real = run_tuner(make(), curves, epoch_seconds=0.0, reuse_actors=True)
                    rows[name]["ray_fit_s"] = real.makespan
                    rows[name]["speedup_vs_ray"] = real.makespan * rows[name]["runs_per_s"]
                    rows[name]["ray_epochs"] = real.total_epochs
                    bar.update()
        finally:
            ray.shutdown()
    print(f"\nsimulate(): K = {K} trials × T = {T} epochs, 2 workers, checkpoint every epoch")
    head = f"{'scheduler':22s} {'runs/s':>8s} {'ms/run':>8s} {'vs FIFO':>8s} {'epochs':>7s} {'steps':>6s}"
    print(head + (f" {'Ray fit s':>9s} {'speedup':>8s}" if args.vs_ray else ""))
    for name, r in rows.items():
        line = (f"{name:22s} {r['runs_per_s']:8.1f} {r['median_ms']:8.1f} {r['speed_vs_fifo']:8.2f} "
                f"{r['epochs']:7d} {r['steps']:6d}")  # fmt: skip
        if args.vs_ray:
            line += f" {r['ray_fit_s']:9.1f} {r['speedup_vs_ray']:8.0f}"
        print(line)
    out = Path(args.out or "benchmarks/results/tune_sim_speed.json")
    write_json(out, {"meta": meta(K=K, T=T, vs_ray=args.vs_ray), "rows": rows})

    def draw(ax: Any) -> None:
        ax.barh(list(rows), [r["runs_per_s"] for r in rows.values()], color="C0")
        ax.set_xlabel(f"simulated runs per second (K = {K}, T = {T})")

    _plot(out, draw)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
