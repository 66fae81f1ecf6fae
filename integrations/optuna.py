"""Optuna adapters: :class:`MFSampler` (chooses configuration and fidelity) and :class:`MFPruner`.

Install with `pip install "mf-sched[optuna]"`. Both work with no arguments on an ordinary Optuna objective:

```python
study = optuna.create_study(direction="maximize", sampler=MFSampler(), pruner=MFPruner())

def objective(trial):
    lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
    for epoch in range(1, 28):
        acc = train_one_epoch(lr)
        trial.report(acc, epoch)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return acc
```

What happens (the default policy is `"race"`, :mod:`mf_sched.racing.engine` with `rule="race"`):

* **Candidates.** The search space is given (`search_space=`) or learnt from the first trial's distributions
  (the first that has ended or reported: one still suggesting may not have suggested everything). Workers that
  start together start their first trials before it is known; the proposer samples those, and re-draws a value
  that would give two of them the same configuration, so none is trained twice.
  A finite grid (`≤ max_grid` points) is raced whole, its configurations started in a *seeded random order*
  (`candidate_seed`), the same in every process. Any other space (continuous, or a large grid) gets
  `n_candidates` arms (K, default 64) whose configurations a model-based *proposer* gives one at a time —
  Optuna's `TPESampler(seed=seed)` by default, or any sampler passed as `proposer=`: when the schedule starts
  a new arm `k`, its trial is sampled by the proposer (which sees the whole study, pruned trials included, as
  TPE does with a pruner), and every later trial that resumes or re-runs arm `k` gets exactly those parameters.
  Every process rebuilds the arms from the storage (:meth:`MFSampler.arms`). `proposer="sobol"` races a fixed
  set of K scrambled-Sobol points instead (:func:`candidate_set`). Either way the outcome never depends on the
  order in which choices were written. The study ends (`study.stop()`, as GridSampler does) once all K
  arms are started and each is either stopped or trained to the top — so K is what bounds the search and what the
  certificate covers — unless `keep_sampling=True` (then the `fallback` sampler explores).
* **Ladder.** Given, calibrated, or inferred: the maximum resource `R` is `max_resource=` or the last step
  of the first trial that completes (as Optuna's HyperbandPruner infers it); rungs are `≈ 2% of R × 3^k`
  (:func:`mf_sched.integrations._common.auto_resources`). Steps counted from 0 are recognised.
* **The bound.** Given (`race_bias=`), or the curve-aware bound shipped for the metric's family
  (:mod:`mf_sched.racing.curve_bound`: how much a run with its value and slope at a rung can still improve;
  accuracies, error rates, percentages, losses and negated losses are recognised, `metric_family=` names
  one), raised by the study's own curves when they exceed it. With probability `≥ 1 − delta` (over tasks like
  the calibration tasks) the answer is within `tolerance` (0.5%) of a full search's. The certificate says
  which bound was used and where it came from.
* **The anytime schedule** (:mod:`mf_sched.racing.schedule`): stopped at any budget, the answer is at least as
  good as ASHA's; run to the end, it certifies. *Ordinary objectives* (no :func:`train_to`): each candidate gets
  a trial that trains until MFPruner stops it for good (its optimistic bound falls below the best completed
  trial) or *pauses* it (while candidates wait to start, a trial that is not among the best `1/η` at a rung,
  ASHA's rule: pruned with `mf:paused`) or it completes; once every candidate has started, the paused ones
  that can still win run again (from scratch) best-first. Without MFPruner nothing is stopped early (a warning
  says so). *Resumable objectives* call `train_to(trial)` (the epochs to train *to*, resuming the
  configuration's checkpoint) and end with `return finish(trial, value)`: every trial moves one
  configuration one rung — ASHA's promotions first, then a new candidate, then the survivors best-first; a
  configuration that can no longer win is never resumed. Below the top, `finish` ends the trial PRUNED with
  its value, so `study.best_trial` is always a full-fidelity trial. `budget=` stops the study once that many
  epochs are spent (exactly: the trial that reaches it is pruned).
* **Answer.** :meth:`MFSampler.recommendation`: the best full-fidelity configuration with its certificate once
  the race is over; before that, the best evidence — the configuration with the best latest value, a
  full-fidelity one unless a lower-rung one is already better where it stands (`rec.rung` says which rung it
  rests on). `study.best_trial` is the best *completed* trial: the two agree once the race is over; before,
  use the recommendation.
* **Storage is the only shared state**: every decision rebuilds the engine from the study's trials, so many
  processes (SQLite, PostgreSQL, journal) share one race; a RUNNING trial's configuration is "busy"; a FAIL trial
  is never a full-fidelity result (it keeps its lower-rung values); a configuration that failed `max_failures`
  times is dropped (and reported), and when every one has, the study stops (a warning; `reason="failed"`). An
  objective without parameters is one configuration.
* **Evidence.** A trial stopped by the race records why in its user attributes (`race:value`, `race:bound`,
  `race:incumbent_value`, `race:incumbent_lower_bound`, `race:rung`, `race:reason`, ...), which
  optuna-dashboard shows; the study records its certificate (`race:certificate`, `race:summary`) and the race's
  configuration (`race:config`), from which :func:`mf_sched.visualization.plot_race` rebuilds the race of a study
  loaded from its storage (:mod:`mf_sched.integrations._optuna_evidence`).
* Other registered policies (`policy="iise-rungs"`, `"iise"`, `"sh"`, `"hyperband"`, `"mf-grad"`,
  `"mf-gp-ucb"` ...) need an explicit ladder with ζ: see :mod:`mf_sched.integrations._optuna_policy`.

:class:`MFPruner` with any other sampler races every trial against the best completed trial (or, with
`rule="iise"` and a ladder, applies IISE's symmetric rule). Paired with MFSampler it carries out the
sampler's decisions (one engine).

Private Optuna APIs used (Optuna 5 has no public way for a sampler to annotate a trial or to read the trials of
a study without copying them): `study._storage.get_all_trials`, `study._storage.set_trial_system_attr`,
`study._storage.get_trial_system_attrs`, `study._storage.get_trial`, and (the evidence: a pruner gets a
`FrozenTrial`) `study._storage.set_trial_user_attr` / `set_study_user_attr`.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import optuna
from optuna.study import StudyDirection
from optuna.trial import TrialState

from mf_sched.ladder import FidelityLadder

from ._common import check_count
from ._optuna_evidence import note_decision
from ._optuna_pruner import MFPruner
from ._optuna_race import FIDELITY, RESULT, RESUMABLE, SURPLUS
from ._optuna_recommendation import MFRecommendation
from ._optuna_sampler import MFSampler
from ._optuna_space import candidate_set

__all__ = [
    "MFSampler",
    "MFPruner",
    "MFRecommendation",
    "train_to",
    "finish",
    "fidelity",
    "budget",
    "heartbeat_storage",
    "curves_from_study",
    "candidate_set",
]


# ----------------------------------------------------------------------------------------- resumable objectives
def _storage_attrs(trial: optuna.trial.Trial) -> dict[str, Any]:
    return trial.study._storage.get_trial_system_attrs(trial._trial_id)


def _parts(study: optuna.Study) -> tuple[MFSampler | None, MFPruner | None]:
    s, p = study.sampler, study.pruner
    return (s if isinstance(s, MFSampler) else None), (p if isinstance(p, MFPruner) else None)


def _need_ladder(study: optuna.Study) -> tuple[FidelityLadder, int]:
    s, p = _parts(study)
    if s is None and p is None:
        raise ValueError(
            "train_to()/fidelity()/finish() need a study whose sampler is an MFSampler or pruner an MFPruner"
        )
    trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
    src = s if s is not None else p
    lad, off = src.study_ladder(study, trials)  # type: ignore[union-attr]
    if lad is None:
        raise ValueError(
            "the maximum resource is not known yet (no trial has completed): pass max_resource= (e.g. the number "
            "of epochs) or ladder= to MFSampler / MFPruner to use train_to()"
        )
    return lad, off


def fidelity(trial: optuna.trial.Trial) -> int:
    """The fidelity (0-based rung index) this trial runs at: the MFSampler's choice, else the top one.

    Args:
        trial: the running trial (inside the objective), of a study whose sampler is an MFSampler or whose pruner
            is an MFPruner.

    Returns:
        The rung index, `0 ≤ m ≤ top`.

    Raises:
        ValueError: the study has neither adapter, or its maximum resource is not known yet.
    """
    lad, _ = _need_ladder(trial.study)
    m = _storage_attrs(trial).get(FIDELITY)
    return lad.top if not isinstance(m, int) or m < 0 or m > lad.top else m


def train_to(trial: optuna.trial.Trial) -> int:
    """The resource (e.g. the epoch) this trial should train *to*, resuming its configuration's checkpoint.

    Calling it tells MFSampler that the objective resumes: configurations are then promoted one rung per
    trial. A trial started when nothing was left to evaluate is pruned here at once (no cost). (Named
    `budget` before; "budget" in mf-sched is the cost cap Λ of a policy.)

    Args:
        trial: the running trial (inside the objective), of a study whose sampler is an MFSampler or whose pruner
            is an MFPruner.

    Returns:
        The resource of the trial's rung (:func:`fidelity`), as an integer.

    Raises:
        optuna.TrialPruned: nothing was left to evaluate when the trial started (a surplus trial).
        ValueError: the study has neither adapter, or its maximum resource is not known yet.
    """
    study = trial.study
    s, _ = _parts(study)
    if _storage_attrs(trial).get(SURPLUS):
        raise optuna.TrialPruned("MFSampler: nothing was left to evaluate when this trial started")
    if s is not None:
        study._storage.set_trial_system_attr(trial._trial_id, RESUMABLE, True)
    lad, _ = _need_ladder(study)
    return int(lad.resources[fidelity(trial)])


def budget(trial: optuna.trial.Trial) -> int:
    """Deprecated name of :func:`train_to` (it returns a resource to train to, not a budget).

    Args:
        trial: as :func:`train_to`.

    Returns:
        :func:`train_to`'s value (with a `DeprecationWarning`).
    """
    warnings.warn("budget(trial) is now called train_to(trial)", DeprecationWarning, stacklevel=2)
    return train_to(trial)


def finish(trial: optuna.trial.Trial, value: float) -> float:
    """End a resumable objective: `return finish(trial, value)`.

    Records `value` as the trial's result at its fidelity. Below the top fidelity the trial then ends
    PRUNED (raises :class:`optuna.TrialPruned`; Optuna stores `value` as its final value), so that a
    low-fidelity evaluation never becomes `study.best_trial`; at the top fidelity `value` is returned
    and the trial completes normally.

    Args:
        trial: the running trial, whose objective called :func:`train_to`.
        value: its metric after training to `train_to(trial)` (a non-finite value is recorded as no result).

    Returns:
        `value` as a float, at the top fidelity.

    Raises:
        optuna.TrialPruned: below the top fidelity, once `value` is recorded.
    """
    v = float(value)
    lad, off = _need_ladder(trial.study)
    m = fidelity(trial)
    step = int(lad.resources[m]) - off
    trial.study._storage.set_trial_system_attr(trial._trial_id, RESULT, v if math.isfinite(v) else None)
    if m < lad.top:
        if step not in trial.study._storage.get_trial(trial._trial_id).intermediate_values:
            trial.report(v, step)
        _note_if_stopped(trial)
        raise optuna.TrialPruned(f"fidelity {m} of {lad.top}: recorded for the policy, not a final result")
    return v


def _note_if_stopped(trial: optuna.trial.Trial) -> None:
    """A resumable objective's result below the top: if it stopped its configuration, say why on the trial."""
    study = trial.study
    s, _ = _parts(study)
    if s is None or not s.race:
        return
    frozen = study._storage.get_trial(trial._trial_id)
    eng = s.engine(study)
    key = s.arm_of(frozen)
    if eng is not None and key is not None and key in eng and eng.status(key) == "stopped":
        lad, off = _need_ladder(study)
        steps = [r - off for r in lad.resources]
        note_decision(study, frozen, eng, key, steps=steps, adapter=s)


# ----------------------------------------------------------------------------------------- storage
def heartbeat_storage(
    url: str, *, heartbeat_interval: int = 60, grace_period: int | None = None, max_retry: int | None = 3
) -> optuna.storages.RDBStorage:
    """An Optuna database storage (`sqlite:///...`, `postgresql://...`, `mysql://...`) for many worker
    processes: with Optuna's heartbeat, so that a trial whose worker died (killed, out of memory, a preempted
    machine) becomes FAIL instead of staying RUNNING — and holding its configuration — forever, and with
    :class:`optuna.storages.RetryHeartbeatStaleTrialCallback`, which enqueues it again (MFSampler gives the retry
    the same configuration and fidelity).

    Each running trial records a heartbeat every `heartbeat_interval` seconds; a RUNNING trial whose last
    heartbeat is older than `grace_period` is failed by the next worker that starts a trial. Without a heartbeat
    (a journal file) MFSampler's `stale_after` frees such a configuration instead.

    Args:
        url: the database URL (SQLAlchemy's form: `"sqlite:///study.db"`, `"postgresql://user@host/db"`, ...).
        heartbeat_interval: seconds between two heartbeats of a running trial (an integer ≥ 1).
        grace_period: seconds without a heartbeat after which a RUNNING trial is failed (an integer ≥ 1;
            default `2 × heartbeat_interval`).
        max_retry: retries per failed trial, each enqueued with its pull (an integer ≥ 0; None: no limit; 0: none).

    Returns:
        The storage, to pass to `optuna.create_study(storage=...)` / `optuna.load_study`.

    Raises:
        ValueError: `url` is not a database URL, or a count is out of range.

    Example:
        >>> from mf_sched.integrations.optuna import heartbeat_storage
        >>> storage = heartbeat_storage("sqlite:///:memory:", heartbeat_interval=30)
        >>> type(storage).__name__, storage.get_heartbeat_interval(), storage.grace_period
        ('RDBStorage', 30, 60)
    """
    if not isinstance(url, str) or "://" not in url:
        raise ValueError(
            f"url = {url!r} is not a database URL; accepted: e.g. 'sqlite:///study.db', 'postgresql://...'"
        )
    check_count("heartbeat_interval", heartbeat_interval, 1, unit="seconds")
    check_count("grace_period", grace_period, 1, allow_none=True, unit="seconds")
    check_count("max_retry", max_retry, 0, allow_none=True)
    grace = 2 * heartbeat_interval if grace_period is None else grace_period
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # heartbeat: experimental in Optuna
        retry = optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=max_retry)
        return optuna.storages.RDBStorage(
            url, heartbeat_interval=heartbeat_interval, grace_period=grace, heartbeat_stale_trial_callback=retry
        )


# ----------------------------------------------------------------------------------------- curves
def curves_from_study(study: optuna.Study, *, metric_name: str = "value", merge_trials: bool = False) -> Any:
    """The study's learning curves (each trial's intermediate values) as :class:`mf_sched.curves.LearningCurves`,
    for :func:`mf_sched.curves.calibration.calibrate`: configuration = the trial's parameters, fidelity = step.

    Args:
        study: the study (its COMPLETE and PRUNED trials are read; non-finite values are skipped).
        metric_name: the metric's name in the curves (plots and reports show it).
        merge_trials: False (default): each trial is one run (a seed) of its configuration; True: the trials of a
            configuration are one run continued across trials (an objective that resumes the model of the
            previous rung), the later trial winning where two report the same step.

    Returns:
        The curves, in the study's direction (`mode="max"` for a study that maximizes, else `"min"`).

    Raises:
        ValueError: the study has no finite intermediate value (`trial.report(value, step)`).
    """
    from mf_sched.curves import LearningCurves

    records = []
    merged: dict[tuple[str, int], float] = {}
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)):
        cfg = repr(sorted(t.params.items()))
        for step, v in t.intermediate_values.items():
            if v is not None and math.isfinite(v):
                if merge_trials:
                    merged[(cfg, int(step))] = float(v)
                else:
                    records.append({"config": cfg, "fidelity": float(step), "metric": float(v), "seed": t.number})
    records += [{"config": c, "fidelity": float(st), "metric": v, "seed": 0} for (c, st), v in merged.items()]
    if not records:
        raise ValueError("the study has no finite intermediate values (trial.report(value, step)) to build curves from")
    mode = "max" if study.direction == StudyDirection.MAXIMIZE else "min"
    return LearningCurves.from_records(
        records, metric="metric", mode=mode, config="config", fidelity="fidelity", seed="seed", metric_name=metric_name
    )
