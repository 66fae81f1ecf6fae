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

* **Candidates.** The search space is given (`search_space=`) or learnt from the first trial's distributions.
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

import copy
import datetime
import math
import random
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler, RandomSampler, TPESampler
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from mf_sched._validate import check_choice
from mf_sched.ladder import FidelityLadder
from mf_sched.policy import check_delta
from mf_sched.racing.engine import ORDERS, RULES, RUNNING, RungEliminator
from mf_sched.racing.schedule import SCHEDULES, next_job
from mf_sched.registry import get_policy

from ._common import (
    DEFAULT_TOLERANCE,
    RungArgs,
    bound_kwargs,
    check_budget,
    check_count,
    default_sigma,
    resolve_rungs,
    warn_no_family,
)
from ._optuna_evidence import note_certificate, note_decision, note_pause
from ._optuna_policy import arms_for
from ._optuna_race import (
    ARM,
    BUDGET_SPENT,
    DISCOVERY,
    FIDELITY,
    PAUSED,
    PRUNED_PRIOR,
    PRUNED_RUNG,
    REPLICA,
    RESULT,
    RESUMABLE,
    SURPLUS,
    RaceView,
    TrialCache,
    ladder_of,
    race_view,
    step_offset,
    trial_rung_values,
)
from ._optuna_space import ProposedArms, SearchState, as_distributions, candidate_set

__all__ = [
    "MFSampler",
    "MFPruner",
    "MFRecommendation",
    "train_to",
    "budget",
    "fidelity",
    "finish",
    "curves_from_study",
    "candidate_set",
    "heartbeat_storage",
]

_SURPLUS_BACKOFF_S = 0.05  # the pause after a second surplus trial in a row; it doubles with each further one
_SURPLUS_BACKOFF_MAX_S = 2.0


def _storage_attrs(trial: optuna.trial.Trial) -> dict[str, Any]:
    return trial.study._storage.get_trial_system_attrs(trial._trial_id)


def _parts(study: optuna.Study) -> tuple[MFSampler | None, MFPruner | None]:
    s, p = study.sampler, study.pruner
    return (s if isinstance(s, MFSampler) else None), (p if isinstance(p, MFPruner) else None)


def _study_ladder(study: optuna.Study) -> tuple[FidelityLadder | None, int]:
    s, p = _parts(study)
    if s is None and p is None:
        raise ValueError(
            "train_to()/fidelity()/finish() need a study whose sampler is an MFSampler or pruner an MFPruner"
        )
    trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
    src = s if s is not None else p
    return src.study_ladder(study, trials)  # type: ignore[union-attr]


def _need_ladder(study: optuna.Study) -> tuple[FidelityLadder, int]:
    lad, off = _study_ladder(study)
    if lad is None:
        raise ValueError(
            "the maximum resource is not known yet (no trial has completed): pass max_resource= (e.g. the number "
            "of epochs) or ladder= to MFSampler / MFPruner to use train_to()"
        )
    return lad, off


def fidelity(trial: optuna.trial.Trial) -> int:
    """The fidelity (0-based rung index) this trial runs at: the MFSampler's choice, else the top one."""
    lad, _ = _need_ladder(trial.study)
    m = _storage_attrs(trial).get(FIDELITY)
    return lad.top if not isinstance(m, int) or m < 0 or m > lad.top else m


def train_to(trial: optuna.trial.Trial) -> int:
    """The resource (e.g. the epoch) this trial should train *to*, resuming its configuration's checkpoint.

    Calling it tells MFSampler that the objective resumes: configurations are then promoted one rung per
    trial. A trial started when nothing was left to evaluate is pruned here at once (no cost). (Named
    `budget` before; "budget" in mf-sched is the cost cap Λ of a policy.)"""
    study = trial.study
    s, _ = _parts(study)
    if _storage_attrs(trial).get(SURPLUS):
        raise optuna.TrialPruned("MFSampler: nothing was left to evaluate when this trial started")
    if s is not None:
        study._storage.set_trial_system_attr(trial._trial_id, RESUMABLE, True)
    lad, _ = _need_ladder(study)
    return int(lad.resources[fidelity(trial)])


def budget(trial: optuna.trial.Trial) -> int:
    """Deprecated name of :func:`train_to` (it returns a resource to train to, not a budget)."""
    warnings.warn("budget(trial) is now called train_to(trial)", DeprecationWarning, stacklevel=2)
    return train_to(trial)


def finish(trial: optuna.trial.Trial, value: float) -> float:
    """End a resumable objective: `return finish(trial, value)`.

    Records `value` as the trial's result at its fidelity. Below the top fidelity the trial then ends
    PRUNED (raises :class:`optuna.TrialPruned`; Optuna stores `value` as its final value), so that a
    low-fidelity evaluation never becomes `study.best_trial`; at the top fidelity `value` is returned
    and the trial completes normally.
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


def _mark(study: optuna.Study, trial: FrozenTrial, key: str, value: Any) -> None:
    """Annotate a running trial (a finished one cannot be: Optuna refuses, and nothing is lost)."""
    try:
        study._storage.set_trial_system_attr(trial._trial_id, key, value)
    except Exception:  # pragma: no cover - a finished trial cannot be annotated
        pass


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


def _study_key(study: optuna.Study) -> tuple[int, int]:
    return id(study._storage), study._study_id


_LIVE = (TrialState.RUNNING, TrialState.WAITING)
_CLAIMED = (TrialState.RUNNING, TrialState.WAITING, TrialState.COMPLETE, TrialState.PRUNED)


def _decision_heartbeat(storage: Any, trial_id: int) -> threading.Event | None:
    """Record the trial's heartbeat now and every heartbeat interval until the returned event is set (None, and
    nothing done, when the storage has no heartbeat). `record_heartbeat` / `get_heartbeat_interval` are the
    storage's public heartbeat methods; Optuna's own heartbeat thread is private (`optuna.storages._heartbeat`)."""
    interval = getattr(storage, "get_heartbeat_interval", lambda: None)()
    if interval is None:
        return None
    storage.record_heartbeat(trial_id)
    done = threading.Event()

    def beat() -> None:
        while not done.wait(interval):
            try:
                storage.record_heartbeat(trial_id)
            except Exception:  # pragma: no cover - the storage is failing: the trial will be taken as dead
                return

    threading.Thread(target=beat, name=f"mf-sched decision heartbeat {trial_id}", daemon=True).start()
    return done


def _claims_seen(trials: Sequence[FrozenTrial], number: int, states: Sequence[TrialState] = _LIVE) -> set[Any]:
    """The claims — `(trial number, arm, fidelity)` — of the other trials in `states` that a decision taken on
    `trials` sees: by default RUNNING ones and WAITING retries that carry the failed trial's pull. A RUNNING trial
    whose worker is still deciding (or deciding again, after a clash) has no claim yet, or another one, and is not
    covered by it."""
    return {
        (t.number, t.system_attrs.get(ARM), t.system_attrs.get(FIDELITY))
        for t in trials
        if t.number != number and t.state in states and t.system_attrs.get(ARM) is not None
    }


def _crossed_rung(t: FrozenTrial, steps: np.ndarray) -> bool:
    """The trial's latest report moved it past a rung step (decisions are taken there only)."""
    iv = t.intermediate_values
    if not iv:
        return False
    reported = sorted(iv)
    last = reported[-1]
    prev = reported[-2] if len(reported) > 1 else -math.inf
    return bool(np.any((steps > prev) & (steps <= last)))


# ----------------------------------------------------------------------------------------- recommendation
@dataclass(frozen=True)
class MFRecommendation:
    """The sampler's answer for a study, with its certificate.

    Attributes:
        params: the recommended configuration (None while there is no answer).
        arm: its index in :meth:`MFSampler.arms` (None for a configuration outside them).
        certified: True when the stopping rule identified it (best with probability ≥ 1 − δ − α).
        reason: `"identified"`, `"finished"` (ε-certified), `"in-progress"`, `"budget"`, `"failed"`
            (every configuration failed `max_failures` times: no answer, the study stopped).
        delta: the confidence parameter.
        cost: Σ λ over the rungs reached (resumable accounting).
        full_fidelity_cost: every candidate once at the top fidelity.
        resources_spent: epochs (steps) actually trained, over all trials.
        full_fidelity_resources: candidates × the top resource.
        done: whether the race (policy) has finished.
        n_trials: the number of trials of the study when the answer was built.
        rung: the rung the answer rests on (the top once a configuration finished, else the rung of its
            estimate).
        details: ε, ζ⁺ source, counts, ...
    """

    params: dict[str, Any] | None
    arm: int | None
    certified: bool
    reason: str
    delta: float | None
    cost: float
    full_fidelity_cost: float
    resources_spent: float
    full_fidelity_resources: float
    done: bool
    n_trials: int
    rung: int | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


class _StudyCaches:
    """Per-study caches of an adapter instance (storage stays the source of truth; see TrialCache)."""

    _rungs: RungArgs
    _caches: dict[tuple[int, int], TrialCache]

    def _cache(self, study: optuna.Study) -> TrialCache:
        return self._caches.setdefault(_study_key(study), TrialCache())

    @property
    def max_resource(self) -> float | None:
        """The `max_resource=` argument (None: inferred from the largest step a trial reported)."""
        return self._rungs.max_resource

    @property
    def min_resource(self) -> float | None:
        """The `min_resource=` argument of the inferred ladder (None: its default)."""
        return self._rungs.min_resource

    @property
    def reduction_factor(self) -> float:
        """The `reduction_factor=` of the inferred ladder."""
        return self._rungs.reduction_factor

    def study_ladder(self, study: optuna.Study, trials: Sequence[FrozenTrial]) -> tuple[FidelityLadder | None, int]:
        """`(ladder, step offset)` of `study` given its `trials`: the ladder given to the constructor, or
        the one inferred from the steps the trials reported (None while nothing can be inferred yet); the
        offset is 1 when the study counts steps from 1 (see the module docstring), else 0."""
        return ladder_of(trials, self._rungs, cache=self._cache(study))


# ----------------------------------------------------------------------------------------- the sampler
class MFSampler(_StudyCaches, BaseSampler):
    """Multi-fidelity racing (or any registered policy) as an Optuna sampler; see the module docstring.

    Args:
        ladder: the rungs (resources) and, for policies other than `race`, ζ (a
            :class:`~mf_sched.ladder.FidelityLadder`); default: inferred.
        calibration: a :class:`~mf_sched.curves.calibration.Calibration` whose ladder is used (instead of `ladder`).
        resources: the rungs alone (e.g. epochs `[1, 3, 9, 27]`: racing with the ζ⁺ prior); default: inferred.
        policy: `"race"` (default) or a registered finite-armed best-arm policy (needs `ladder`).
        policy_kwargs: extra constructor arguments of the policy.
        search_space: `{name: list of values or distribution}`; default: the first trial's distributions.
        delta: confidence δ.
        sigma: seed-to-seed σ of the objective (one, or one per rung; default: see the module docstring, or the
            calibration's).
        race_bias: ζ⁺ for `race` (:class:`~mf_sched.racing.bias.RaceBias`, a list, a
            :class:`~mf_sched.curves.calibration.RaceCalibration`); default the shipped prior, refined by the study.
        max_resource: the top resource `R` of the inferred ladder (default: the last step of the first trial that
            completes; see the module docstring).
        min_resource: the first rung of the inferred ladder (default `≈ 2%` of `R`).
        reduction_factor: `η`, the ratio of consecutive rungs of the inferred ladder and ASHA's cut (default 3).
        max_failures: failed trials per configuration before it is dropped.
        stale_after: seconds after which a RUNNING trial counts as failed (its worker presumed dead: without
            Optuna's heartbeat, `RDBStorage(heartbeat_interval=..., grace_period=...)`, nothing else ends it);
            `"auto"` (default): 10 × the longest finished trial, at least 10 minutes; None: never. With many
            workers, use :func:`heartbeat_storage` on a database instead where you can. A worker that finds every
            open configuration held by others starts a *surplus* trial (pruned at once, flagged `mf:surplus`);
            from the second in a row it waits first (50 ms, doubling up to 2 s) rather than flood the storage.
        order: the resumption order once ASHA's work is done: `"depth"` (default: the run at the highest rung
            first, then the best value — the runs nearest to an answer finish first), `"estimate"` (the best
            estimated final value) or `"bound"` (the most optimistic; see
            :class:`~mf_sched.racing.engine.RungEliminator`).
        schedule: `"anytime"` (default: ASHA's breadth-first promotions while configurations wait to start,
            then the survivors best-first to a certificate; :mod:`mf_sched.racing.schedule`) or `"best-first"`.
        tolerance: the shipped curve-aware bound keeps, with probability `≥ 1 − delta`, an answer within this
            relative tolerance of a full search's (default 0.005: 0.5%).
        metric_family: how to read the metric when its values do not tell (one of
            :data:`mf_sched.racing.bias.NAMED_FAMILIES`: `"accuracy"`, `"error"`, `"percent"`, `"percent_error"`,
            `"loss"`, `"negated_loss"`); a metric that fits none warns once per study and stops nothing.
        bound: `"curve"` (default: the curve-aware bound) or `"zeta+"` (the unconditional ζ⁺ prior).
        budget: stop the study once this many epochs (steps, summed over trials) are spent — exactly: MFPruner
            prunes the trial that reaches it. The schedule is anytime, so the answer then is the best evidence
            (:meth:`recommendation`); None (default): run until the race is over.
        keep_sampling: once the race is over, go on with `fallback` instead of stopping the study.
        proposer: where the race's new configurations come from when the search space is not a grid of
            `≤ max_grid` points: any Optuna sampler (default `TPESampler(seed=seed)`). The trial that starts
            arm `k` is sampled by it — it sees the whole study, pruned trials included — and the trials that
            resume or re-run arm `k` get exactly those parameters (every process rebuilds the arms from the
            storage: :meth:`arms`). It also samples the first trial, before the space is known. `"sobol"`: a
            fixed set of `n_candidates` scrambled-Sobol points instead (:func:`candidate_set`; the same in every
            process and run, e.g. to compare methods on one candidate set). `policy="race"` only.
        max_grid: a finite space with up to this many points is raced as a grid, started in a seeded random
            order (`candidate_seed`).
        n_candidates: how many configurations the race starts on a space that is not such a grid (K, default
            64: proposed one at a time, or Sobol points): the race ends — and certifies — once all K are stopped
            or trained to the top.
        candidate_seed: seeds the grid's start order and the Sobol points (see :func:`candidate_set`).
        fallback: sampler for trials outside the race (default `RandomSampler(seed)`).
        seed: seeds the policy, the default proposer and the default fallback.

    Example:
        >>> import optuna
        >>> from mf_sched.integrations.optuna import MFPruner, MFSampler
        >>> optuna.logging.set_verbosity(optuna.logging.WARNING)
        >>> def objective(trial):
        ...     q = trial.suggest_categorical("q", [0.2, 0.5, 0.8, 0.75])
        ...     for epoch in range(1, 10):
        ...         trial.report(q * (1 - 0.4 / epoch), epoch)     # an accuracy-like metric in [0, 1]
        ...         if trial.should_prune():
        ...             raise optuna.TrialPruned()
        ...     return q * (1 - 0.4 / 9)
        >>> sampler = MFSampler(seed=0)
        >>> study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
        >>> study.optimize(objective, n_trials=20)     # the study stops by itself once the race is over
        >>> rec = sampler.recommendation(study)
        >>> rec.params, rec.done, len(study.trials) < 20
        ({'q': 0.8}, True, True)
    """

    def __init__(
        self,
        ladder: FidelityLadder | None = None,
        *,
        calibration: Any = None,
        resources: Sequence[float] | None = None,
        policy: str = "race",
        policy_kwargs: Mapping[str, Any] | None = None,
        search_space: Mapping[str, Any] | None = None,
        delta: float = 0.05,
        sigma: float | Sequence[float] | None = None,
        race_bias: Any = None,
        max_resource: float | None = None,
        min_resource: float | None = None,
        reduction_factor: float = 3,
        max_failures: int = 3,
        stale_after: float | str | None = "auto",
        order: str = "depth",
        schedule: str = "anytime",
        tolerance: float = DEFAULT_TOLERANCE,
        metric_family: str | None = None,
        bound: str = "curve",
        budget: float | None = None,
        keep_sampling: bool = False,
        max_grid: int = 1000,
        n_candidates: int = 64,
        candidate_seed: int = 0,
        proposer: BaseSampler | str | None = None,
        fallback: BaseSampler | None = None,
        seed: int | None = None,
    ) -> None:
        self.policy_name = policy
        self.race = policy == "race"
        if not self.race and proposer is not None and proposer != "sobol":
            raise ValueError(
                f"proposer = {proposer!r} applies to policy = 'race' only; policy = {policy!r} works on fixed "
                "candidates (a grid, or scrambled-Sobol points)"
            )
        self._proposer = self._check_proposer(proposer, seed) if self.race else None
        cls = get_policy(policy)
        self._rungs = resolve_rungs(
            "MFSampler", ladder=ladder, calibration=calibration, resources=resources, sigma=sigma,
            race_bias=race_bias, max_resource=max_resource, min_resource=min_resource,
            reduction_factor=reduction_factor, integer_steps=True,
            zeta_needed_by=None if self.race else f"policy = {policy!r}",
        )  # fmt: skip
        self.ladder, self.sigma = self._rungs.ladder, self._rungs.sigma
        self._arms = arms_for(self, policy)  # finite arms or a continuous space: chosen once, here
        if not self.race:
            self._arms.check_policy(policy, cls, policy_kwargs)
        self.policy_kwargs = dict(policy_kwargs or {})
        self.delta = check_delta(delta)
        self._policy_sigma = 0.05 if self.sigma is None else float(np.max(self.sigma))
        for name, v, low in (
            ("max_grid", max_grid, 1),
            ("n_candidates", n_candidates, 1),
            ("max_failures", max_failures, 1),
        ):
            check_count(name, v, low)
        self.max_grid, self.n_candidates, self.candidate_seed = max_grid, n_candidates, int(candidate_seed)
        self.max_failures = max_failures
        if not (stale_after is None or stale_after == "auto" or (
            isinstance(stale_after, (int, float)) and not isinstance(stale_after, bool) and stale_after > 0
        )):  # fmt: skip
            raise ValueError(f"stale_after = {stale_after!r} is out of range; accepted: seconds > 0, 'auto' or None")
        self.stale_after = stale_after
        self._warned_stale: set[int] = set()
        if order not in ORDERS:
            raise ValueError(f"order = {order!r} is unknown; accepted: {', '.join(map(repr, ORDERS))}")
        self.order = order
        self.schedule = check_choice("schedule", schedule, SCHEDULES)
        self._bound_kw = bound_kwargs(tolerance, metric_family, bound)
        self.budget = check_budget(budget)
        self._order_cache: list[int] | None = None
        self._warned_family: set[tuple[int, int]] = set()
        self.keep_sampling = bool(keep_sampling)
        self._search = SearchState(
            max_grid, n_candidates, self.candidate_seed,
            space=as_distributions(search_space) if search_space is not None else None,
            explicit=search_space is not None, propose=self._proposer is not None,
        )  # fmt: skip
        self._books: dict[tuple[int, int], ProposedArms] = {}  # per study: its proposed arms (lazy arms only)
        self._book: ProposedArms | None = None  # the one rebuilt last (what arm_of reads)
        self._trial_arm: dict[tuple[Any, int], tuple[dict[str, Any], bool]] = {}  # proposed_arm, per running trial
        self._arms.use_given_space()
        self.seed = seed
        self._fallback = fallback if fallback is not None else RandomSampler(seed=seed)
        self._lock = threading.RLock()
        self._caches: dict[tuple[int, int], TrialCache] = {}  # per study: its parsed finished trials
        self._over: set[tuple[int, int]] = set()  # studies whose race is over (decided once, never replayed again)
        self._warned_failed: set[tuple[int, int]] = set()  # studies in which every configuration failed (warned)
        self._warned_revoked: set[tuple[tuple[int, int], Any]] = set()  # (study, run) pruned under a prior now gone
        self._surplus_streak = 0  # surplus trials in a row in this process (their back-off grows)
        self._claim_rng = random.Random()  # the pause before deciding again after a clash with another worker
        self._probe = self._arms.probe()  # finite-armed policies: fails early on bad policy_kwargs

    @property
    def continuous(self) -> bool:
        """Whether the policy is a continuous-space GP policy (`"mf-gp-ucb"`, ...; it proposes parameters
        itself) rather than a finite-armed policy over :attr:`candidates`."""
        return self._arms.continuous

    @property
    def search_state(self) -> SearchState:
        """The search space, its candidates and whether it turned out dynamic (shared with the strategy)."""
        return self._search

    @property
    def fallback(self) -> BaseSampler:
        """The sampler that samples what the policy does not decide (`fallback=`; default RandomSampler)."""
        return self._fallback

    @property
    def proposer(self) -> BaseSampler | None:
        """The sampler that proposes the race's new configurations on a space that is not a small grid
        (`proposer=`; default TPESampler); None with `proposer="sobol"` or a policy other than `race`."""
        return self._proposer

    @property
    def proposes(self) -> bool:
        """Whether the arms are proposed one at a time by :attr:`proposer` (the search space is known and is not
        a grid of `≤ max_grid` points); False for a grid or fixed candidates, and while the space is unknown."""
        return self._search.lazy

    @staticmethod
    def _check_proposer(proposer: Any, seed: int | None) -> BaseSampler | None:
        if isinstance(proposer, str) and proposer == "sobol":
            return None
        if proposer is None:
            return TPESampler(seed=seed)
        if isinstance(proposer, MFSampler) or not isinstance(proposer, BaseSampler):
            raise ValueError(
                f"proposer = {proposer!r} is not accepted; accepted: an Optuna sampler other than MFSampler "
                "(e.g. optuna.samplers.TPESampler()), 'sobol', or None (TPESampler)"
            )
        return proposer

    @property
    def policy_sigma(self) -> float:
        """The sub-Gaussian scale σ the policy is built with (the largest of `sigma`; 0.05 when unknown)."""
        return self._policy_sigma

    @property
    def dynamic_space(self) -> bool:
        """Whether the inferred search space turned out conditional or dynamic, so that the sampler has
        handed the study over to its fallback (the policy no longer decides)."""
        return self._search.dynamic

    # ------------------------------------------------------------------ arms
    @property
    def candidates(self) -> list[dict[str, Any]] | None:
        """The fixed arms (configurations: a grid or Sobol points), once the search space is known; None when the
        arms are proposed one at a time (:attr:`proposes`; see :meth:`arms`)."""
        return None if self._search.candidates is None else [dict(c) for c in self._search.candidates]

    def arms(self, study: optuna.Study) -> list[dict[str, Any] | None] | None:
        """Every arm's configuration in `study`, by arm index (:attr:`MFRecommendation.arm`, the `mf:arm`
        system attribute): the fixed candidates, or — arms proposed one at a time — the configuration the proposer
        gave the trial that started each arm (None for an arm not started yet), rebuilt from the storage as every
        process sees it. None while the search space is unknown.

        Example:
            >>> import math, optuna
            >>> from mf_sched.integrations.optuna import MFPruner, MFSampler
            >>> optuna.logging.set_verbosity(optuna.logging.WARNING)
            >>> def objective(trial):
            ...     lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
            ...     for epoch in range(1, 10):
            ...         trial.report(1 - abs(math.log10(lr) + 2) / 3 - 0.3 / epoch, epoch)
            ...         if trial.should_prune():
            ...             raise optuna.TrialPruned()
            ...     return 1 - abs(math.log10(lr) + 2) / 3 - 0.3 / 9
            >>> sampler = MFSampler(n_candidates=12, seed=0)    # TPESampler(seed=0) proposes the 12 configurations
            >>> study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
            >>> study.optimize(objective, n_trials=100)        # stops by itself once the 12 are raced
            >>> arms, rec = sampler.arms(study), sampler.recommendation(study)
            >>> sampler.proposes, len(arms), rec.done, rec.params == arms[rec.arm]
            (True, 12, True, True)
        """
        trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
        with self._lock:
            if not self._arms.ensure_space(trials) or not self._search.known:
                return None
            book = self._arm_book(study, trials)
        if book is None:
            return [dict(c) for c in self._search.candidates or ()]
        return [book.params(k) or None for k in range(book.n_arms)]

    def _arm_book(self, study: optuna.Study, trials: Sequence[FrozenTrial]) -> ProposedArms | None:
        """The study's proposed arms rebuilt from `trials` (None unless the arms are proposed one at a time)."""
        if not self._search.lazy:
            return None
        K = self._search.n_candidates
        book = self._books.get(_study_key(study))
        if book is None or book.n_arms != K:
            book = self._books[_study_key(study)] = ProposedArms(K)
        book.rebuild(trials)
        self._book = book
        return book

    def proposed_arm(self, study: optuna.Study, trial: FrozenTrial) -> tuple[dict[str, Any], bool] | None:
        """For a trial whose configuration is (partly) the proposer's — it starts, resumes or re-runs an arm that
        is proposed one at a time, or it started before the search space was known — `(the arm's values known
        so far, discovery)`; None for any other trial (a fixed candidate, the fallback's)."""
        if self._proposer is None:
            return None
        memo = (_study_key(study), trial.number)  # read once per trial (its first suggest), not once per parameter
        out = self._trial_arm.get(memo)
        if out is not None:
            return out
        attrs = trial.system_attrs
        if FIDELITY not in attrs and (self._search.lazy or not self._search.known):
            # Optuna hands infer_relative_search_space the trial as it was *before* before_trial placed it
            attrs = study._storage.get_trial_system_attrs(trial._trial_id)
        if DISCOVERY in attrs and attrs.get(ARM) is None:
            k = attrs.get(DISCOVERY)
            if not self._search.lazy:
                return {}, True  # the first trial(s): the proposer samples them whatever the space turns out to be
        elif self._search.lazy and not self._search.dynamic:
            k = attrs.get(ARM)
        else:
            return None
        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k < self._search.n_candidates:
            return None
        with self._lock:
            book = self._arm_book(study, study._storage.get_all_trials(study._study_id, deepcopy=False))
            assert book is not None
            out = book.params(k), DISCOVERY in attrs and attrs.get(ARM) is None
            if len(self._trial_arm) >= 1024:  # trials asked but never told: forget the oldest
                self._trial_arm.pop(next(iter(self._trial_arm)))
            self._trial_arm[memo] = out
        return out

    def arm_of(self, t: FrozenTrial) -> int | None:
        """The candidate (arm index into the finite search space) that trial `t` evaluates: the one this sampler
        assigned it, else the one its parameters match; None for a trial outside the candidates (or while the
        space is not known yet). Arms proposed one at a time: as :meth:`arms` rebuilt them last."""
        if self._search.lazy:
            book = self._book
            if book is None:
                a = t.system_attrs.get(ARM)
                return a if isinstance(a, int) and 0 <= a < self._search.n_candidates else None
            return book.arm_of(t)
        a = t.system_attrs.get(ARM)
        if isinstance(a, int) and self._search.candidates is not None and 0 <= a < len(self._search.candidates):
            return a
        return self._search.arm_of_params(t.params)

    def _sign(self, study: optuna.Study) -> float:
        return 1.0 if study.direction == StudyDirection.MAXIMIZE else -1.0

    def engine(self, study: optuna.Study) -> RungEliminator | None:
        """The race of `study` rebuilt from its storage (runs keyed by candidate index, `"trial-<n>"` for a trial
        outside the candidates; maximisation convention); None while the space or the ladder is unknown, or when
        the policy is not `"race"`."""
        if not self.race:
            return None
        with self._lock:
            trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
            view = self._view(study, trials, exclude=None)
        return None if view is None else view.engine

    # ------------------------------------------------------------------ the race
    def _view(self, study: optuna.Study, trials: Sequence[FrozenTrial], exclude: int | None) -> RaceView | None:
        """The race rebuilt from `trials`; None while the space or the ladder is unknown."""
        if not self._arms.ensure_space(trials) or not self._search.known:
            return None
        self._arm_book(study, trials)  # arms proposed one at a time: arm_of reads them
        lad, off = self.study_ladder(study, trials)
        if lad is None:
            return None
        bias = self._rungs.given_bias(lad.M)
        cache = self._cache(study)
        view = race_view(
            trials, ladder=lad, offset=off, sign=self._sign(study), delta=self.delta, sigma=self.sigma,
            race_bias=bias, n_arms=self._search.n_arms, arm_of=self.arm_of, exclude=exclude,
            max_failures=self.max_failures, refine=bias is None, order=self.order, cache=cache,
            stale_after=self._stale_seconds(cache), now=datetime.datetime.now(),
            bound_args={**self._bound_kw, "fit": self._rungs.fit},
        )  # fmt: skip
        warn_no_family(view, study, self._warned_family, "MFSampler")
        for key in view.revoked:
            if (_study_key(study), key) not in self._warned_revoked:
                self._warned_revoked.add((_study_key(study), key))
                warnings.warn(
                    f"configuration {self._params_of(key, trials)} was pruned under the shipped bound of another "
                    f"metric family, which no longer fits the values reported (now: {view.family!r}; e.g. a loss that "
                    "went below 0): that decision no longer holds, so MFSampler evaluates it again. Name the metric "
                    "with metric_family= (or pass race_bias=, mf_sched.racing.fit.fit_curve_bound) to fix the bound",
                    stacklevel=3,
                )
        for number in view.stale:
            if number not in self._warned_stale:
                self._warned_stale.add(number)
                warnings.warn(
                    f"trial {number} has been RUNNING for longer than {self._stale_seconds(cache):.0f} s: MFSampler "
                    "counts it as failed and evaluates its configuration again. If its worker died, turn on Optuna's "
                    "heartbeat (RDBStorage(url, heartbeat_interval=60, grace_period=120)) or call "
                    "optuna.storages.fail_stale_trials(study); pass stale_after= to change the delay",
                    stacklevel=3,
                )
        return view

    def _stale_seconds(self, cache: TrialCache) -> float | None:
        if self.stale_after is None:
            return None
        if self.stale_after == "auto":
            return max(600.0, 10.0 * cache.max_duration) if cache.max_duration > 0 else None
        return float(self.stale_after)

    def _race_decide(self, study: optuna.Study, trial: FrozenTrial) -> tuple[int | None, int, set[Any], str]:
        """(arm, fidelity, claims seen (:func:`_claims_seen`), kind): kind `"pull"`, `"surplus"` (nothing to hand
        out while others run), `"done"` (the race is over), `"explore"` (a black-box objective evaluated every
        candidate: the fallback goes on) or `"discovery"` (the space is unknown: the fallback samples the first
        one)."""
        if _study_key(study) in self._over:  # the race is over: no replay (the study is being stopped)
            return None, -1, set(), "done"
        trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
        seen = _claims_seen(trials, trial.number, _CLAIMED)
        if not self._arms.ensure_space(trials) or not self._search.known:
            lad, _ = self.study_ladder(study, trials)
            return self._discovery_arm(trial, trials), -1 if lad is None else lad.top, seen, "discovery"
        view = self._view(study, trials, exclude=trial.number)
        K = self._search.n_arms
        assert K is not None
        if view is None:  # the maximum resource is unknown: start candidates in the seeded order, at the top
            avail, busy, all_failed = self._unraced(trials, K, exclude=trial.number)
            if avail:
                return avail[0], -1, seen, "pull"
            if busy:
                return None, -1, seen, "surplus"
            if not all_failed and not any(t.intermediate_values for t in trials):
                return None, -1, seen, "explore"  # a black-box objective evaluated every candidate (see below)
            # nothing completed, nothing left to start or running: the race cannot start (issue 24: every
            # configuration failed, and the study used to go on with surplus trials for ever)
            self._over.add(_study_key(study))
            if all_failed:
                self._warn_all_failed(study)
            return None, -1, seen, "done"
        eng, top = view.engine, view.ladder.top
        job = next_job(
            eng, eta=self._rungs.reduction_factor, fresh=self._fresh(view, K), busy=self._unschedulable(view, K),
            schedule=self.schedule, promote=view.resumable,
        )  # fmt: skip
        if job is not None:
            _, a, rung = job
            return int(a), (rung if view.resumable else top), seen, "pull"  # type: ignore[arg-type]
        codes, reached = eng.statuses(), eng.reached_all()  # arms are the engine's first K runs, in order
        live = (codes[:K] == RUNNING) & (reached[:K] < top)
        if not live.any() and not view.busy:
            # a black-box objective (no trial.report) has no race: once every candidate is evaluated the fallback
            # explores, as keep_sampling=True; a multi-fidelity study is over and stops, and so does one in which
            # every configuration failed max_failures times (nothing ended)
            all_failed = self._all_failed(view, K)
            multi = any(t.intermediate_values for t in trials) or all_failed
            if multi:
                self._over.add(_study_key(study))
            if all_failed:
                self._warn_all_failed(study)
            return None, top, seen, "done" if multi else "explore"
        return None, top, seen, "surplus"

    def _discovery_arm(self, trial: FrozenTrial, trials: Sequence[FrozenTrial]) -> int | None:
        """The arm a trial started before the search space is known takes should the arms turn out to be proposed
        one at a time: the lowest one no other trial holds (None without a proposer: the fallback samples it)."""
        if self._proposer is None:
            return None
        book = ProposedArms(self.n_candidates)
        held = {k for t in trials if t.number != trial.number and (k := book.index_of(t)) is not None}
        return next((k for k in range(self.n_candidates) if k not in held), None)

    def _start_order(self, K: int) -> list[int]:
        """The order in which candidates are started: a permutation seeded by `candidate_seed` (the same in
        every process), never the order in which the choices were written; arms proposed one at a time are
        started in their own order (arm `k` is the `k`-th configuration proposed)."""
        if self._search.lazy:
            return list(range(K))
        if self._order_cache is None or len(self._order_cache) != K:
            self._order_cache = np.random.default_rng([self.candidate_seed, K]).permutation(K).tolist()
        return self._order_cache

    def _fresh(self, view: RaceView, K: int) -> list[int]:
        """Candidates with no trial yet that produced a value, ended or paused, in the start order."""
        reached = view.engine.reached_all()[:K]
        untouched = (reached < 0) & (view.ended_count[:K] == 0) & (view.paused_count[:K] == 0)
        codes = view.engine.statuses()[:K]
        return [a for a in self._start_order(K) if untouched[a] and codes[a] == RUNNING]

    @staticmethod
    def _unschedulable(view: RaceView, K: int) -> set[Any]:
        """Runs the sampler does not hand out: busy ones, and runs outside the candidates (an enqueued or fallback
        trial's parameters: evidence for the race, never resumed)."""
        return set(view.busy) | set(view.keys[K:])

    def _unraced(self, trials: Sequence[FrozenTrial], K: int, exclude: int | None) -> tuple[list[int], bool, bool]:
        """Before the maximum resource is known (no trial has completed): `(candidates to start, any busy, all
        failed)` — the candidates neither running (nor queued as a retry), ended nor failed `max_failures` times,
        never-failed ones first (in order), then by their failures; whether a candidate is busy; and whether every
        candidate has failed `max_failures` times."""
        busy, ended, failed = np.zeros(K, dtype=bool), np.zeros(K, dtype=bool), np.zeros(K, dtype=np.int64)
        for t in trials:
            if t.number == exclude or t.system_attrs.get(SURPLUS):
                continue
            a = self.arm_of(t)
            if a is None:
                continue
            if t.state == TrialState.RUNNING or (t.state == TrialState.WAITING and t.system_attrs.get(ARM) is not None):
                busy[a] = True
            elif t.state == TrialState.FAIL:
                failed[a] += 1
            elif t.state != TrialState.WAITING:
                ended[a] = True
        ok = ~busy & ~ended & (failed < self.max_failures)
        avail = sorted((a for a in self._start_order(K) if ok[a]), key=lambda a: failed[a])
        return avail, bool(busy.any()), bool(K and (failed >= self.max_failures).all())

    def _all_failed(self, view: RaceView, K: int) -> bool:
        """Every candidate failed `max_failures` times and none ended otherwise (completed, paused or stopped)."""
        ended = view.ended_count[:K] + view.paused_count[:K]
        return bool(K) and not ended.any() and bool((view.failed_count[:K] >= self.max_failures).all())

    def _warn_all_failed(self, study: optuna.Study) -> None:
        key = _study_key(study)
        if key in self._warned_failed:
            return
        self._warned_failed.add(key)
        warnings.warn(
            f"MFSampler: every configuration failed {self.max_failures} times (max_failures): the race cannot go on "
            "and the study stops with no answer; see why in the FAIL trials (study.trials, Optuna's log)",
            stacklevel=4,
        )

    def should_prune(self, study: optuna.Study, trial: FrozenTrial) -> bool:
        """The decision MFPruner carries out when paired with this sampler (see the module docstring)."""
        if trial.system_attrs.get(SURPLUS):
            return True
        with self._lock:
            trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
            if self.race:
                view = self._view(study, trials, exclude=None)
                if view is None or not _crossed_rung(trial, view.steps):
                    return False
                key = self.arm_of(trial)
                key = key if key is not None else f"trial-{trial.number}"
                if key not in view.engine:
                    return False
                if view.engine.status(key) != "stopped":
                    if not self._pause_now(view, trial, key):
                        return False
                    _mark(study, trial, PAUSED, True)
                    note_pause(study, trial, view.engine, key, steps=view.steps, eta=self._rungs.reduction_factor)
                rung = view.engine.stop_rung(key)
                if rung is None:  # paused by the anytime schedule, not stopped: there is no stop to explain
                    rung = view.engine.reached(key)
                else:
                    note_decision(study, trial, view.engine, key, steps=view.steps, adapter=self, trials=trials)
                    if view.family is not None:  # stopped under the shipped bound of this metric family
                        try:
                            study._storage.set_trial_system_attr(trial._trial_id, PRUNED_PRIOR, view.family)
                        except Exception:  # pragma: no cover - a finished trial cannot be annotated
                            pass
                note_certificate(study, self, view.engine, trials)
            else:
                fid = trial.system_attrs.get(FIDELITY)
                lad = self.ladder
                assert lad is not None
                if not isinstance(fid, int) or not 0 <= fid < lad.top or trial.last_step is None:
                    return False
                _, off = self.study_ladder(study, trials)
                if trial.last_step + off < lad.resources[fid]:
                    return False
                rung = fid  # an ordinary objective reached the policy's fidelity: its value there counts
        _mark(study, trial, PRUNED_RUNG, rung)
        return True

    def _pause_now(self, view: RaceView, trial: FrozenTrial, key: Any) -> bool:
        """The anytime schedule for an ordinary objective (each trial trains from scratch): while configurations
        wait to be started, a trial that has just brought its configuration to a new rung goes on only if it is
        among the best `max(1, ⌊n/η⌋)` there (ASHA), else it is pruned to free the worker — *paused*: the race
        may run its configuration again later. Once every configuration has started nothing is paused (a re-run
        would train from scratch again). Resumable objectives end each trial at its rung anyway."""
        if self.schedule != "anytime" or view.resumable or not isinstance(key, int):
            return False
        K = self._search.n_arms or 0
        if not self._fresh(view, K):
            return False
        eng = view.engine
        rung = eng.reached(key)
        own = trial_rung_values(trial, view.steps)
        earlier = [m for m in range(rung + 1) if not np.isnan(own[m])]
        if not earlier or max(earlier) < rung or rung >= view.ladder.top:
            return False  # this trial has not brought the configuration to its highest rung (a re-run below it)
        return key not in eng.promotable(self._rungs.reduction_factor)

    def recommendation(self, study: optuna.Study) -> MFRecommendation:
        """The sampler's recommended configuration for `study`, with its certificate."""
        with self._lock:
            trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
            if not self.race:
                return self._policy_recommendation(study, trials)
            view = self._view(study, trials, exclude=None)
        spent = self._resources_spent(trials, view, step_offset(trials))
        if view is None:
            failed = self._search.known and self._unraced(trials, self._search.n_arms or 0, exclude=None)[2]
            if failed:
                return MFRecommendation(
                    None, None, False, "failed", self.delta, 0.0, 0.0, spent, 0.0, True, len(trials)
                )  # fmt: skip
            # the rungs are not known yet (no trial completed): the best evidence is the best latest value reported
            sign = self._sign(study)
            latest = [(sign * t.intermediate_values[t.last_step], t) for t in trials
                      if t.last_step is not None and math.isfinite(t.intermediate_values[t.last_step])]  # fmt: skip
            best = max(latest, key=lambda x: (x[0], -x[1].number))[1] if latest else None
            return MFRecommendation(
                None if best is None else dict(best.params), None if best is None else self.arm_of(best), False,
                "in-progress", self.delta, 0.0, 0.0, spent, 0.0, False, len(trials),
                details={} if best is None else {"step": best.last_step, "trial": best.number},
            )  # fmt: skip
        eng = view.engine
        K = self._search.n_arms or 0
        live = bool(((eng.statuses() == RUNNING) & (eng.reached_all() < view.ladder.top)).any())
        done = not live and not view.busy
        cert = eng.certificate()
        details: dict[str, Any] = {
            "rule": "race",
            "bias_source": cert.bias_source,
            "counts": dict(cert.counts),
            "uncovered": list(cert.uncovered),
            "zeta_plus": list(eng.race_bias.upper) if eng.race_bias is not None else None,
            "sigma": eng.sigma.tolist(),
            "epsilon": cert.epsilon,
        }
        if done and cert.key is not None:
            key, rung, est = cert.key, view.ladder.top, cert.value
            reason = "identified" if cert.identified else "finished"
        elif done:  # over, and no configuration reached the top: every one failed (or was abandoned) below it
            key, rung, est, reason = None, None, None, "failed"
        else:
            key, rung, est = eng.answer()
            reason = "in-progress"
        details["estimate"] = None if est is None else self._sign(study) * est
        R = float(view.ladder.resources[-1])
        return MFRecommendation(
            params=None if key is None else self._params_of(key, trials),
            arm=key if isinstance(key, int) else None,
            certified=bool(done and cert.identified),
            reason=reason,
            delta=self.delta,
            cost=eng.cost,
            full_fidelity_cost=K * float(view.ladder.costs[-1]),
            resources_spent=spent,
            full_fidelity_resources=K * R,
            done=done,
            n_trials=len(trials),
            rung=None if rung is None or rung < 0 else int(rung),
            details=details,
        )

    def _params_of(self, key: Any, trials: Sequence[FrozenTrial]) -> dict[str, Any] | None:
        if isinstance(key, int) and self._search.lazy and self._book is not None:
            return self._book.params(key) or None
        if isinstance(key, int) and self._search.candidates is not None:
            return dict(self._search.candidates[key])
        number = int(str(key).split("-")[-1])
        for t in trials:
            if t.number == number:
                return dict(t.params)
        return None  # pragma: no cover

    def resources_spent(self, study: optuna.Study, trials: Sequence[FrozenTrial] | None = None) -> float:
        """Epochs (steps) trained so far in `study`, as :attr:`MFRecommendation.resources_spent` counts them
        (a resumable objective's trial continues its configuration; others train from scratch)."""
        if trials is None:
            trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
        with self._lock:
            self._arm_book(study, trials)
            return self._resources_spent(trials, None, step_offset(trials))

    def _resources_spent(self, trials: Sequence[FrozenTrial], view: RaceView | None, offset: int = 0) -> float:
        """Epochs (steps) trained over all trials: a trial of a resumable objective continues its configuration
        from the furthest step an earlier trial of it reached; other trials train from scratch."""
        off = offset if view is None else view.offset
        reached: dict[Any, float] = {}
        total = 0.0
        for t in sorted(trials, key=lambda x: x.number):
            if t.last_step is None:
                continue
            end = float(t.last_step + off)
            key = self.arm_of(t)
            start = reached.get(key, 0.0) if t.system_attrs.get(RESUMABLE) and key is not None else 0.0
            total += max(0.0, end - start)
            if key is not None:
                reached[key] = max(reached.get(key, 0.0), end)
        return total

    def _policy_recommendation(self, study: optuna.Study, trials: Sequence[FrozenTrial]) -> MFRecommendation:
        policy, trials, _ = self._arms.replay_study(study, self._sign(study))
        lad = self.ladder
        assert lad is not None
        spent = self._resources_spent(trials, None)
        if policy is None:
            return MFRecommendation(None, None, False, "in-progress", self.delta, 0.0, 0.0, spent, 0.0, False,
                                    len(trials))  # fmt: skip
        rec = policy.recommendation()
        params = self._arms.recommended_params(rec)
        n_cand = len(self._search.candidates) if self._search.candidates is not None else 0
        return MFRecommendation(
            params=params,
            arm=rec.arm,
            certified=rec.certified,
            reason=rec.reason,
            delta=rec.delta,
            cost=policy.cost,
            full_fidelity_cost=n_cand * lad.costs[-1],
            resources_spent=spent,
            full_fidelity_resources=n_cand * float(lad.resources[-1]),
            done=policy.done,
            n_trials=len(trials),
            rung=rec.details.get("rung"),
            details=dict(rec.details),
        )

    # ------------------------------------------------------------------ Optuna hooks
    def _helpers(self) -> list[BaseSampler]:
        """The fallback and the proposer, each once."""
        out = [self._fallback]
        if self._proposer is not None and self._proposer is not self._fallback:
            out.append(self._proposer)
        return out

    def reseed_rng(self) -> None:
        for s in self._helpers():
            s.reseed_rng()

    def infer_relative_search_space(self, study: optuna.Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        # a trial the proposer samples gets its relative (joint) proposal, e.g. multivariate TPE's
        proposed = self.proposed_arm(study, trial) if len(study.directions) == 1 else None
        if proposed is None or self._proposer is None:
            return {}
        known = proposed[0]
        if known and self._search.space is not None and set(self._search.space) <= set(known):
            return {}  # a resumed or re-run arm: every value is known
        space = self._proposer.infer_relative_search_space(study, trial)
        return {k: d for k, d in space.items() if k not in known}

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        self._raise_error_if_multi_objective(study)
        if not search_space or self._proposer is None:
            return {}
        return self._proposer.sample_relative(study, trial, search_space)

    def _set(self, study: optuna.Study, trial: FrozenTrial, arm: int | None, fid: int) -> None:
        study._storage.set_trial_system_attr(trial._trial_id, ARM, None if arm is None else int(arm))
        study._storage.set_trial_system_attr(trial._trial_id, FIDELITY, int(fid))

    @staticmethod
    def _stop(study: optuna.Study) -> None:
        try:
            study.stop()
        except RuntimeError:  # ask/tell use: there is no optimize loop to stop
            pass

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        # Optuna starts a trial's heartbeat only after the sampler has decided (study.ask() returns): a worker
        # killed while MFSampler decides left a RUNNING trial with no heartbeat that nothing ever failed (issue 24).
        # Beat from the start of the decision, so that the heartbeat fails such a trial after its grace period like
        # any other, and keep beating while the decision lasts (a slow one, or the back-off's pause, must not be
        # taken for a dead worker).
        storage = study._storage
        beating = _decision_heartbeat(storage, trial._trial_id)
        try:
            self._before_trial(study, trial)
        except BaseException:
            # an error or Ctrl-C while deciding: Optuna never gets the trial back to end it (study.ask() raised),
            # so fail it here, as Optuna fails a trial whose objective is interrupted, and let the error go on
            try:
                storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
            except Exception:  # pragma: no cover - the storage itself is failing: the heartbeat will end it
                pass
            raise
        finally:
            if beating is not None:
                beating.set()

    def _before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        for s in self._helpers():
            s.before_trial(study, trial)
        if len(study.directions) > 1:
            return  # sample_* raise the error: MFSampler is single-objective
        attrs = trial.system_attrs
        if FIDELITY in attrs:
            return
        if "failed_trial" in attrs:  # RetryFailedTrialCallback: same arm and fidelity as the failed trial
            old = study._storage.get_trial(
                study._storage.get_trial_id_from_study_id_trial_number(study._study_id, attrs["failed_trial"])
            )
            if FIDELITY in old.system_attrs:
                self._set(study, trial, old.system_attrs.get(ARM), old.system_attrs[FIDELITY])
                return
        if "fixed_params" in attrs:  # an enqueued trial: its own parameters, at the top fidelity
            with self._lock:
                trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
                self._arms.ensure_space(trials)
                book = self._arm_book(study, trials)
                arm = (book or self._search).arm_of_params(attrs["fixed_params"])
            self._set(study, trial, arm, -1 if self.race else self.ladder.top)  # type: ignore[union-attr]
            return
        if self._search.dynamic:
            self._set(study, trial, None, -1 if self.race else self.ladder.top)  # type: ignore[union-attr]
            return
        if self.race and not isinstance(study.pruner, MFPruner):
            other = type(study.pruner).__name__
            what = (
                "nothing is stopped early"
                if isinstance(study.pruner, optuna.pruners.NopPruner)
                else f"only {other} stops trials early (no guarantee; the configurations it prunes leave the race)"
            )
            warnings.warn(
                f"MFSampler without MFPruner: on an ordinary objective (no train_to()) {what}; use "
                "optuna.create_study(sampler=MFSampler(), pruner=MFPruner())",
                stacklevel=2,
            )
        if self.budget is not None and self.resources_spent(study) >= self.budget:
            self._set(study, trial, None, -1 if self.race else self.ladder.top)  # type: ignore[union-attr]
            study._storage.set_trial_system_attr(trial._trial_id, SURPLUS, True)
            self._stop(study)  # the epoch budget is spent: the answer is the recommendation now
            return
        with self._lock:
            for _ in range(4):  # claim, then verify against decisions other processes made meanwhile
                if self.race:
                    arm, fid, seen, kind = self._race_decide(study, trial)
                    replica = False
                    if kind == "explore":
                        self._set(study, trial, None, fid)  # the fallback samples it
                        return
                    if kind == "discovery":  # the proposer samples it (the fallback without one)
                        self._set(study, trial, None, fid)
                        if arm is None:
                            return
                        study._storage.set_trial_system_attr(trial._trial_id, DISCOVERY, int(arm))
                        if not self._lost_discovery(study, trial, arm, seen):
                            return
                        continue
                    self._surplus_streak = self._surplus_streak + 1 if kind == "surplus" else 0
                    if kind in ("surplus", "done"):
                        if kind == "done" and self.keep_sampling:
                            self._set(study, trial, None, fid)  # the fallback explores at the top
                            return
                        self._set(study, trial, None, fid)
                        study._storage.set_trial_system_attr(trial._trial_id, SURPLUS, True)
                        if kind == "done":
                            self._stop(study)
                        break
                else:
                    arm, fid, seen, replica = self._arms.decide(study, trial, self._sign(study))
                self._set(study, trial, arm, fid)
                if replica:
                    study._storage.set_trial_system_attr(trial._trial_id, REPLICA, True)
                    return
                if arm is None or not self._lost_race(study, trial, arm, fid, seen):
                    return
                self._set(study, trial, None, fid)  # withdraw the claim, then decide again (after a short pause)
                time.sleep(self._claim_rng.uniform(0.0, 0.01))
            else:  # four decisions in a row taken at the same time as another worker's: take nothing this time
                study._storage.set_trial_system_attr(trial._trial_id, SURPLUS, True)
                self._surplus_streak += 1
        if self._surplus_streak > 1:
            # nothing to hand out again: another worker holds every open configuration (a slow trial, or a dead
            # one that stale_after or the heartbeat has not yet freed). Back off (50 ms doubling to 2 s) instead
            # of filling the storage with surplus trials; outside the lock, so other threads go on.
            time.sleep(min(_SURPLUS_BACKOFF_MAX_S, _SURPLUS_BACKOFF_S * 2.0 ** (self._surplus_streak - 2)))

    def _lost_discovery(self, study: optuna.Study, trial: FrozenTrial, arm: int, seen: set[Any]) -> bool:
        """True when a lower-numbered trial that our decision did not see took the same discovery arm."""
        seen_numbers = {c[0] for c in seen}
        for t in study._storage.get_all_trials(study._study_id, deepcopy=False, states=(TrialState.RUNNING,)):
            if t.number < trial.number and t.number not in seen_numbers and t.system_attrs.get(DISCOVERY) == arm:
                return True
        return False

    def _lost_race(self, study: optuna.Study, trial: FrozenTrial, arm: int, fid: int, seen: set[Any]) -> bool:
        """True when another trial — lower- or higher-numbered — claimed the same pull without our decision having
        seen that claim (`seen`: the claims visible when we decided, :func:`_claims_seen`), so that both may have
        decided at once. Every worker writes its claim before it checks, so of two such trials at least one sees the
        other's claim and withdraws: a pull is never kept by both (issue 24: the check used to look at lower-numbered
        trials only and skip any trial that was RUNNING when we decided, even one still deciding, with no claim yet —
        then two journal-file workers each trained the same configuration to the top). Both may withdraw (each then
        decides again, after a short random pause). Racing hands a pull out once, so a trial that took it and has
        already ended (COMPLETE or PRUNED: a fast one, while our claim was being written) counts as well; the other
        policies may repeat a pull, and only trials that hold theirs (RUNNING, WAITING) count. Racing runs one trial
        per configuration at a time, so there a claim on the same configuration at another fidelity clashes too (a
        journal-file run had trained a configuration to the top twice, claimed once as "the top, not known yet" and
        once as the top rung)."""
        states = _CLAIMED if self.race else _LIVE
        for t in study._storage.get_all_trials(study._study_id, deepcopy=False, states=states):
            if t.number == trial.number or t.system_attrs.get(ARM) != arm:
                continue
            other = t.system_attrs.get(FIDELITY)
            # racing: one trial at a time per configuration, whatever the fidelity (-1: "the top, not known yet")
            if (self.race or other == fid) and (t.number, arm, other) not in seen:
                return True
        return False

    def sample_independent(
        self, study: optuna.Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution
    ) -> Any:
        self._raise_error_if_multi_objective(study)
        return self._arms.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(
        self, study: optuna.Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None
    ) -> None:
        for s in self._helpers():
            s.after_trial(study, trial, state, values)
        self._trial_arm.pop((_study_key(study), trial.number), None)
        attrs = trial.system_attrs
        fid = attrs.get(FIDELITY)
        if state == TrialState.COMPLETE and attrs.get(RESUMABLE) and isinstance(fid, int) and fid >= 0:
            lad, _ = _study_ladder(study)
            if lad is not None and fid < lad.top:
                warnings.warn(
                    f"trial {trial.number} trained to fidelity {fid} of {lad.top} (train_to(trial) = "
                    f"{lad.resources[fid]:g}) and completed: end the objective with `return finish(trial, value)`, "
                    "otherwise a low-fidelity result can become study.best_trial",
                    stacklevel=2,
                )
        if not self.race or self.keep_sampling or self._search.dynamic:
            return
        with self._lock:
            trials = []
            for t in study._storage.get_all_trials(study._study_id, deepcopy=False):
                if t.number == trial.number:  # after_trial runs before Optuna stores the state: use the one given
                    t = copy.copy(t)
                    t.state = state
                trials.append(t)
            view = self._view(study, trials, exclude=trial.number)
        if view is not None:
            note_certificate(study, self, view.engine, trials)
        if view is None or view.busy:
            return
        eng = view.engine
        if not any(t.intermediate_values for t in trials):
            return  # a black-box objective: no race to end (see _race_decide)
        if not ((eng.statuses() == RUNNING) & (eng.reached_all() < view.ladder.top)).any():
            if self._all_failed(view, self._search.n_arms or 0):
                self._warn_all_failed(study)
            self._stop(study)  # every candidate is stopped or at the top: the race is over (as GridSampler)


# ----------------------------------------------------------------------------------------- the pruner
class MFPruner(_StudyCaches, optuna.pruners.BasePruner):
    """Racing (or IISE's rule) at the rungs of a ladder, for the `report` / `should_prune` loop.

    With `rule="race"` (default) a trial is pruned at a rung when even the optimistic bound on its final value
    (the curve-aware bound: what a run with its value and slope there can still gain) is below the best
    completed trial: on the event of :mod:`mf_sched.racing.engine` the answer stays within the tolerance of a full
    search's. With a sampler that proposes configurations (TPE, random ...), a trial is also pruned at a rung
    where it is not among the best `max(1, ⌊n/η⌋)` values — ASHA's rule, as Optuna's
    `SuccessiveHalvingPruner` — so that the study is anytime (`schedule="best-first"`: the racing cut
    alone). With `rule="iise"` (needs a ladder with ζ) a trial
    is pruned when some trial's value at the rung beats it by `2ζ(m)` plus both radii. Works with any sampler,
    across processes (decisions are recomputed from the storage), tolerates NaN reports, returns a builtin
    `bool`; paired with :class:`MFSampler` it carries out the sampler's decisions.

    Args:
        ladder: the rungs and ζ (default: inferred, see :class:`MFSampler`).
        calibration: a :class:`~mf_sched.curves.calibration.Calibration` whose ladder is used.
        resources: the rungs alone (racing with the ζ⁺ prior).
        rule: `"race"` or `"iise"`.
        race_bias: ζ⁺ (default: the shipped prior, refined by the study).
        max_resource: the top resource of the inferred ladder (as :class:`MFSampler`).
        min_resource: the first rung of the inferred ladder (as :class:`MFSampler`).
        reduction_factor: `η` of the inferred ladder and of ASHA's cut (as :class:`MFSampler`).
        delta: confidence δ.
        sigma: seed-to-seed σ (default: see the module docstring).
        n_trials: the number of trials if known (δ split δ/(KM)); default open-ended (6δ/(π²k²) for trial k).
        bias: `"zeta"` or `"gamma"` (`rule="iise"`).
        eta: optional halving cut (`rule="iise"`; heuristic).
        schedule: as :class:`MFSampler` (`rule="race"`).
        tolerance: as :class:`MFSampler` (`rule="race"`).
        metric_family: as :class:`MFSampler` (`rule="race"`).
        bound: as :class:`MFSampler` (`rule="race"`).
        budget: as :class:`MFSampler` (`rule="race"`); enforced here (the trial that spends the last epoch is
            pruned and the study stopped), and MFSampler's `budget` too when this pruner has none.

    Example:
        >>> import optuna
        >>> from mf_sched.integrations.optuna import MFPruner
        >>> optuna.logging.set_verbosity(optuna.logging.WARNING)
        >>> def objective(trial):
        ...     q = trial.suggest_float("q", 0.0, 1.0)
        ...     for epoch in range(1, 28):
        ...         trial.report(q * (1 - 0.2 / epoch), epoch)
        ...         if trial.should_prune():
        ...             raise optuna.TrialPruned()
        ...     return q * (1 - 0.2 / 27)
        >>> study = optuna.create_study(direction="maximize", pruner=MFPruner(),
        ...                             sampler=optuna.samplers.RandomSampler(seed=0))
        >>> study.optimize(objective, n_trials=30)
        >>> pruned = [t for t in study.trials if t.state == optuna.trial.TrialState.PRUNED]
        >>> len(pruned) > 10, study.best_value > 0.9
        (True, True)
    """

    def __init__(
        self,
        ladder: FidelityLadder | None = None,
        *,
        calibration: Any = None,
        resources: Sequence[float] | None = None,
        rule: str = "race",
        race_bias: Any = None,
        max_resource: float | None = None,
        min_resource: float | None = None,
        reduction_factor: float = 3,
        delta: float = 0.05,
        sigma: float | Sequence[float] | None = None,
        n_trials: int | None = None,
        bias: str = "zeta",
        eta: float | None = None,
        schedule: str = "anytime",
        tolerance: float = DEFAULT_TOLERANCE,
        metric_family: str | None = None,
        bound: str = "curve",
        budget: float | None = None,
    ) -> None:
        if rule not in RULES:
            raise ValueError(f"rule = {rule!r} is unknown; accepted: {', '.join(map(repr, RULES))}")
        self.rule = rule
        self.schedule = check_choice("schedule", schedule, SCHEDULES)
        self._bound_kw = bound_kwargs(tolerance, metric_family, bound)
        self.budget = check_budget(budget)
        self._warned_family: set[tuple[int, int]] = set()
        self._rungs = resolve_rungs(
            "MFPruner", ladder=ladder, calibration=calibration, resources=resources, sigma=sigma,
            race_bias=race_bias, max_resource=max_resource, min_resource=min_resource,
            reduction_factor=reduction_factor, integer_steps=True,
            zeta_needed_by="rule = 'iise'" if rule == "iise" else None,
        )  # fmt: skip
        self.ladder, self.sigma = self._rungs.ladder, self._rungs.sigma
        self.delta = check_delta(delta)
        check_count("n_trials", n_trials, 1, allow_none=True)
        self.n_trials = n_trials
        self._caches: dict[tuple[int, int], TrialCache] = {}  # per study: its parsed finished trials
        self._steps_seen: dict[tuple[tuple[int, int], int], tuple[int, Any]] = {}  # (study, trial) -> (n, last step)
        self._warned_order: set[tuple[int, int]] = set()  # studies warned about decreasing steps
        self._kw = dict(delta=self.delta, n_arms=n_trials, bias=bias, eta=eta)
        if rule == "iise":
            RungEliminator(self.ladder, sigma=0.05 if self.sigma is None else self.sigma, **self._kw)  # validate
        elif eta is not None or bias != "zeta":
            raise ValueError("bias= and eta= apply to rule = 'iise' only")

    def engine(self, study: optuna.Study) -> RungEliminator | None:
        """The engine with every trial's rung values (maximisation convention), one run per trial; None while
        the ladder is unknown."""
        trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
        lad, off = self.study_ladder(study, trials)
        if lad is None:
            return None
        sign = 1.0 if study.direction == StudyDirection.MAXIMIZE else -1.0
        if self.rule == "race":
            bias = self._rungs.given_bias(lad.M)
            cache = self._cache(study)
            view = race_view(
                trials, ladder=lad, offset=off, sign=sign, delta=self.delta, sigma=self.sigma, race_bias=bias,
                n_arms=None, arm_of=None, refine=bias is None, cache=cache,
                bound_args={**self._bound_kw, "n_arms": self.n_trials, "fit": self._rungs.fit},
            )  # fmt: skip
            warn_no_family(view, study, self._warned_family, "MFPruner")
            return view.engine
        steps = np.asarray(lad.resources, dtype=float) - off
        rows, keys, index, raw = [], [], [], []
        for t in sorted(trials, key=lambda x: x.number):
            v = trial_rung_values(t, steps)
            if np.isnan(v).all():
                continue
            raw.extend(v[~np.isnan(v)].tolist())
            rows.append(sign * v)
            keys.append(t.number)
            index.append(t.number)
        s = self.sigma if self.sigma is not None else default_sigma(raw)
        eng = RungEliminator(lad, sigma=s, **self._kw)
        if keys:
            eng.report_many(keys, np.array(rows), index=index)
        return eng

    def _check_step_order(self, study: optuna.Study, trial: FrozenTrial) -> None:
        """Warn (once per study) when a trial reports a step below one it reported before (issue 24: steps in
        decreasing order were read as a trial at the top from its first report, and nothing said so). Tracked per
        process — the pruner runs in the worker that reports — since storages may return the steps sorted."""
        iv = trial.intermediate_values
        if not iv:
            return
        key = (_study_key(study), trial.number)
        n, top = len(iv), trial.last_step
        before = self._steps_seen.get(key)
        if len(self._steps_seen) > 10_000:
            self._steps_seen.clear()
        self._steps_seen[key] = (n, top)
        if before is None or n <= before[0] or top != before[1] or _study_key(study) in self._warned_order:
            return
        self._warned_order.add(_study_key(study))
        low = min(s for s in iv if s < top)  # type: ignore[operator]
        warnings.warn(
            f"trial {trial.number} reported step {low} after step {top}: MFPruner reads the step as the resource "
            "trained so far (e.g. the epoch), which must increase; it takes a trial to be at its largest step and "
            "cannot prune one that counts down. Report trial.report(value, epoch) with epoch = 1, 2, 3, ...",
            stacklevel=4,  # the objective's trial.should_prune()
        )

    def prune(self, study: optuna.Study, trial: FrozenTrial) -> bool:
        self._check_step_order(study, trial)
        sampler = study.sampler
        if self._over_budget(study, trial):
            return True
        if isinstance(sampler, MFSampler) and not sampler.dynamic_space and not sampler.continuous:
            return sampler.should_prune(study, trial)
        if trial.last_step is None:
            return False
        trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
        lad, off = self.study_ladder(study, trials)
        if lad is None or not _crossed_rung(trial, np.asarray(lad.resources, dtype=float) - off):
            return False
        eng = self.engine(study)
        if eng is None or trial.number not in eng:
            return False
        if self.rule == "race":
            stop = eng.status(trial.number) == "stopped"
            if not stop and self._pause_now(eng, trial.number):
                _mark(study, trial, PAUSED, True)
                _mark(study, trial, PRUNED_RUNG, eng.reached(trial.number))
                steps = np.asarray(lad.resources) - off
                note_pause(study, trial, eng, trial.number, steps=steps, eta=self._rungs.reduction_factor)
                note_certificate(study, self, eng, trials)
                return True
        else:
            stop = bool(eng.should_stop(trial.number))
        if stop:
            _mark(study, trial, PRUNED_RUNG, eng.stop_rung(trial.number))
            note_decision(study, trial, eng, trial.number, steps=np.asarray(lad.resources) - off, adapter=self)
        note_certificate(study, self, eng, trials)
        return bool(stop)

    def _pause_now(self, eng: RungEliminator, key: int) -> bool:
        """With a sampler that proposes new configurations (every sampler but MFSampler), a trial at a rung below
        the top goes on only if it is among the best `max(1, ⌊n/η⌋)` values there — ASHA's rule, as Optuna's
        `SuccessiveHalvingPruner` applies it — on top of the racing cut (`schedule="best-first"`: the cut
        alone). Such a trial is pruned *paused*: not stopped by the rule, so the study is not certified."""
        if self.schedule != "anytime" or eng.reached(key) >= eng.M - 1:
            return False
        return key not in eng.promotable(self._rungs.reduction_factor)

    def _over_budget(self, study: optuna.Study, trial: FrozenTrial) -> bool:
        """`budget`: prune the trial that spends the last epoch of it, and stop the study."""
        sampler = study.sampler
        budget = self.budget if self.budget is not None else getattr(sampler, "budget", None)
        if budget is None or trial.last_step is None:
            return False
        trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
        if isinstance(sampler, MFSampler):
            spent = sampler.resources_spent(study, trials)
        else:
            off = step_offset(trials)
            spent = sum(float(t.last_step + off) for t in trials if t.last_step is not None)
        if spent < budget:
            return False
        _mark(study, trial, BUDGET_SPENT, True)
        MFSampler._stop(study)
        return True


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
    heartbeat is older than `grace_period` (default `2 × heartbeat_interval`) is failed by the next worker that
    starts a trial. `max_retry`: retries per failed trial (None: no limit; 0: none). Without a heartbeat
    (a journal file) MFSampler's `stale_after` frees such a configuration instead.

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

    Each trial is one run (a seed) of its configuration; with `merge_trials=True` the trials of a
    configuration are one run continued across trials (an objective that resumes the model of the previous
    rung), the later trial winning where two report the same step."""
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
