"""The racing engine of an Optuna study, rebuilt from its storage (shared by MFSampler and MFPruner).

Storage is the only state shared by Optuna's worker processes, so every decision rebuilds the
:class:`~mf_sched.racing.engine.RungEliminator` from the study's trials — vectorised
(:meth:`RungEliminator.report_many`), so the cost is one pass over the trials. What is read from a trial:

* its **rung values**: at rung `m` (step `s_m`) the last intermediate value reported at a step `≤ s_m`,
  provided the trial reached `s_m` (steps off the rungs count: what a pruner sees), plus its
  `mf:result` at its fidelity (`finish`); values of FAIL trials count too below the top rung (nothing a
  crashed worker stored is lost), but a FAIL trial has no top-rung value even where it reported the last step:
  its final result failed (the objective returned NaN or raised, or the worker died before it returned), so it
  can neither be recommended nor stop others as the incumbent, and its configuration is evaluated again (up to
  `max_failures` times); non-finite values are no evidence;
* its **run**: with `by="arm"` (MFSampler) a configuration is one run across trials — a trial that resumes
  a configuration from its checkpoint continues its curve — and the lowest-numbered trial wins where two
  report the same rung; trials whose parameters are not a candidate (a discovery trial, a fallback trial)
  are runs of their own, keyed `"trial-<number>"`. With `by="trial"` (MFPruner with any sampler) every
  trial is a run;
* **busy**: a RUNNING trial holds its run (unless `stale_after` says its worker is dead), and so does a
  WAITING trial that already carries a pull — a retry that Optuna's `RetryHeartbeatStaleTrialCallback` enqueued
  with the failed trial's system attributes — so that the configuration is not handed out twice meanwhile;
* **steps**: when some trial reported step 0 the objective counts from 0, and resource `r` is step `r − 1`.
"""

from __future__ import annotations

import collections
import datetime
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from optuna.trial import FrozenTrial, TrialState

from mf_sched.ladder import FidelityLadder
from mf_sched.racing.bias import NAMED_FAMILIES, RaceBias, metric_transform
from mf_sched.racing.curve_bound import CurveBound
from mf_sched.racing.engine import RungEliminator

from ._common import RungArgs, auto_race_bias, default_sigma

ARM, FIDELITY, RESULT, PRUNED_RUNG, REPLICA = "mf:arm", "mf:fidelity", "mf:result", "mf:pruned_rung", "mf:replica"
PARAMS = "mf:params"  # MF-GP-UCB: the point chosen for the trial
DISCOVERY = "mf:discovery"  # the arm a trial started before the search space was known (proposed arms only)
DISCOVERING = "mf:discovering"  # a discovery trial's values so far, the one being suggested included (internal repr)
RESUMABLE = "mf:resumable"  # train_to() was called: the objective trains to the given resource, resuming
SURPLUS = "mf:surplus"  # nothing was left to evaluate when the trial started: it is pruned at once
PAUSED = "mf:paused"  # the anytime schedule pruned the trial to free the worker: its configuration may run again
BUDGET_SPENT = "mf:budget_spent"  # the study's epoch budget ran out during this trial (pruned, the study stopped)
PRUNED_PRIOR = "mf:pruned_prior"  # the family (a NAMED_FAMILIES key) whose shipped bound stopped the trial

__all__ = ["RaceView", "TrialCache", "race_view", "step_offset", "max_resource_of", "trial_rung_values", "PAUSED"]

_ENDED = (TrialState.COMPLETE, TrialState.PRUNED)


def step_offset(trials: Sequence[FrozenTrial], cache: TrialCache | None = None) -> int:
    """1 when some trial reported step 0 (steps count from 0: resource `r` is step `r − 1`), else 0."""
    if cache is not None and cache.zero_based:
        return 1
    start = 0 if cache is None else min(cache.offset_checked, len(trials))
    found = any(0 in t.intermediate_values for t in trials[start:])
    if cache is not None:
        cache.zero_based = found
        cache.offset_checked = _finished_prefix(trials, start)
    return int(found)


def _finished_prefix(trials: Sequence[FrozenTrial], start: int) -> int:
    """The length of the leading run of finished trials, from `start` on."""
    i = start
    while i < len(trials) and trials[i].state in _FINISHED:
        i += 1
    return i


def max_resource_of(trials: Sequence[FrozenTrial], offset: int) -> float | None:
    """The maximum resource seen by the study: the last step (+ offset) of its first trial to complete (by
    completion time, then number: the same in every process and never changed by later trials; as Optuna's
    HyperbandPruner infers `max_resource`), or None."""
    done = [t for t in trials if t.state == TrialState.COMPLETE and t.last_step is not None]
    if not done:
        return None
    t = min(done, key=lambda x: (x.datetime_complete is None, x.datetime_complete or 0, x.number))
    return float(t.last_step + offset)  # type: ignore[operator]


def ladder_of(
    trials: Sequence[FrozenTrial], rungs: RungArgs, cache: TrialCache | None = None
) -> tuple[FidelityLadder | None, int]:
    """The study's ladder (given, or inferred by `rungs`) and its step offset; None while the maximum is
    unknown (no `max_resource` and no finished trial)."""
    off = step_offset(trials, cache)
    if rungs.ladder is not None:
        return rungs.ladder, off
    R = rungs.max_resource
    if R is None:
        R = cache.max_resource if cache is not None else None
        if R is None:
            R = max_resource_of(trials, off)
            if cache is not None:
                cache.max_resource = R
    if R is None:
        return None, off
    key = (R, rungs.min_resource, rungs.reduction_factor)
    if cache is not None and cache.ladder_key == key:
        return cache.ladder, off  # type: ignore[return-value]
    lad = rungs.inferred(R)
    if cache is not None:
        cache.ladder_key, cache.ladder = key, lad
    return lad, off


def trial_rung_values(t: FrozenTrial, steps: np.ndarray) -> np.ndarray:
    """The trial's value at every rung (NaN where none), read as the module docstring says; raw orientation."""
    out = np.full(steps.size, np.nan)
    iv = {s: v for s, v in t.intermediate_values.items() if v is not None and math.isfinite(v)}
    if iv:
        st = np.array(sorted(iv), dtype=float)
        vals = np.array([iv[s] for s in sorted(iv)])
        last = max(t.intermediate_values)
        pos = np.searchsorted(st, steps, side="right") - 1
        ok = (pos >= 0) & (steps <= last)
        out[ok] = vals[pos[ok]]
    r = t.system_attrs.get(RESULT)
    fid = t.system_attrs.get(FIDELITY)
    if r is not None and isinstance(fid, int) and 0 <= fid < steps.size and math.isfinite(float(r)):
        if np.isnan(out[fid]) or t.state == TrialState.COMPLETE:
            out[fid] = float(r)
    if t.state == TrialState.COMPLETE and t.value is not None and math.isfinite(t.value):
        top = steps.size - 1
        if not isinstance(fid, int) or fid < 0 or fid == top:
            out[top] = float(t.value)  # a trial that completed ran to the top
    elif t.state == TrialState.FAIL:
        out[-1] = np.nan  # it reported the top step but its result failed (NaN, an exception): no full-fidelity value
    return out


@dataclass
class RaceView:
    """The engine and what the adapters need besides it (see :func:`race_view`)."""

    ladder: FidelityLadder
    engine: RungEliminator
    offset: int
    keys: list[Any]
    busy: set[Any] = field(default_factory=set)
    resumable: bool = False
    foreign: dict[str, int] = field(default_factory=dict)  # "trial-<n>" -> trial number
    n_trials: int = 0
    no_family: bool = False  # the shipped bound was asked for, but the metric fits no family (nothing is stopped)
    stale: list[int] = field(default_factory=list)  # RUNNING trials taken as failed (their worker looks dead)
    busy_mask: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # per key, in order
    ended_count: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # COMPLETE/PRUNED trials
    paused_count: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # paused by the schedule
    failed_count: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # FAIL trials
    #: the metric family of the shipped bound in use (a key of NAMED_FAMILIES, or "none"); None when race_bias was given
    family: str | None = None
    #: runs with a trial stopped under a family that no longer fits the values: evaluated again
    revoked: list[Any] = field(default_factory=list)

    @property
    def ended(self) -> collections.Counter:
        """Trials per run that ended COMPLETE or PRUNED."""
        return collections.Counter({self.keys[i]: int(c) for i, c in enumerate(self.ended_count.tolist()) if c})

    @property
    def failures(self) -> collections.Counter:
        """Trials per run that FAILed."""
        return collections.Counter({self.keys[i]: int(c) for i, c in enumerate(self.failed_count.tolist()) if c})

    @property
    def steps(self) -> np.ndarray:
        return np.asarray(self.ladder.resources, dtype=float) - self.offset

    def key_of_trial(self, t: FrozenTrial, arm_of: Callable[[FrozenTrial], int | None] | None) -> Any:
        return _key(t, arm_of)


def _key(t: FrozenTrial, arm_of: Callable[[FrozenTrial], int | None] | None) -> Any:
    if arm_of is None:
        return t.number
    a = arm_of(t)
    return a if a is not None else f"trial-{t.number}"


@dataclass(frozen=True)
class _Parsed:
    """What race_view reads from one trial (kept for finished trials, which never change)."""

    key: Any
    state: TrialState
    values: np.ndarray  # raw rung values (the metric's own orientation), NaN where none
    resumable: bool
    surplus: bool
    skip: bool  # a trial outside the candidates with nothing reported: no run
    duration: float  # seconds from start to completion (0 while running)
    paused: bool = False  # pruned by the anytime schedule (its configuration may run again)
    stopped: bool = False  # pruned by the racing rule (the rule, rebuilt, decides again whether it stays stopped)
    prior: str | None = None  # PRUNED trials: the prior family it was pruned under (PRUNED_PRIOR), if recorded


_FINISHED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)


def _parse(t: FrozenTrial, steps: np.ndarray, arm_of: Callable[[FrozenTrial], int | None] | None) -> _Parsed:
    k = _key(t, arm_of)
    attrs = t.system_attrs
    skip = isinstance(k, str) and not (t.intermediate_values or t.state == TrialState.COMPLETE)
    dur = (t.datetime_complete - t.datetime_start).total_seconds() if t.datetime_complete and t.datetime_start else 0.0
    prior = attrs.get(PRUNED_PRIOR) if t.state == TrialState.PRUNED else None
    return _Parsed(
        k,
        t.state,
        trial_rung_values(t, steps),
        bool(attrs.get(RESUMABLE)),
        bool(attrs.get(SURPLUS)),
        skip,
        dur,
        bool(attrs.get(PAUSED)),
        t.state == TrialState.PRUNED and PRUNED_RUNG in attrs and not attrs.get(BUDGET_SPENT),
        prior if isinstance(prior, str) else None,
    )


class TrialCache:
    """What a study's finished trials say, kept between decisions: finished trials never change in Optuna's
    storage, so the leading run of finished trials (in number order) is folded once into arrays and only the
    trials after it are read again. Per study and per adapter instance; invalidated when the rungs change."""

    def __init__(self) -> None:
        self.steps: tuple[float, ...] | None = None
        self.parsed: dict[int, _Parsed] = {}
        self.max_duration = 0.0  # the longest finished trial seen (the yardstick of a stale RUNNING trial)
        self.zero_based = False
        self.offset_checked = 0
        self.max_resource: float | None = None
        self.ladder_key: tuple[Any, ...] | None = None
        self.ladder: FidelityLadder | None = None
        self._reset_prefix()

    def start_over(self, layout: tuple[Any, ...]) -> None:
        """Forget every parsed and folded trial (the rungs or the arms changed) and keep `layout`, the
        `(steps, n_arms, keyed by trial)` the cache now serves."""
        self.steps, self.parsed = layout[0], {}
        self._reset_prefix()
        self.layout = layout

    def _reset_prefix(self) -> None:
        self.prefix = 0  # trials[:prefix] are finished and folded below
        self.keys: list[Any] = []
        self.rows: dict[Any, int] = {}
        self.index: list[int] = []
        self.foreign: dict[str, int] = {}
        self.values = np.zeros((0, 0))
        self.row_ids = np.zeros(0, dtype=np.int64)
        self.states = np.zeros(0, dtype=np.int64)
        self.priors: list[str | None] = []  # per row of `values`: the prior family a pruned trial was stopped under
        self.resumable = False
        self.layout: tuple[Any, ...] | None = None

    def get(self, t: FrozenTrial, steps: np.ndarray, arm_of: Callable[[FrozenTrial], int | None] | None) -> _Parsed:
        key = tuple(steps.tolist())
        if key != self.steps:
            self.steps, self.parsed = key, {}
            self._reset_prefix()
        p = self.parsed.get(t.number)
        if p is not None:
            return p
        p = _parse(t, steps, arm_of)
        if t.state in _FINISHED:
            self.parsed[t.number] = p
            self.max_duration = max(self.max_duration, p.duration)
        return p


def race_view(
    trials: Sequence[FrozenTrial],
    *,
    ladder: FidelityLadder,
    offset: int,
    sign: float,
    delta: float,
    sigma: Any,
    race_bias: RaceBias | CurveBound | None,
    n_arms: int | None,
    arm_of: Callable[[FrozenTrial], int | None] | None,
    exclude: int | None = None,
    max_failures: int = 3,
    refine: bool = True,
    order: str = "depth",
    cache: TrialCache | None = None,
    stale_after: float | None = None,
    now: datetime.datetime | None = None,
    bound_args: Mapping[str, Any] | None = None,
) -> RaceView:
    """Rebuild the racing engine of a study (see the module docstring).

    `arm_of` maps a trial to its candidate arm (`by="arm"`; arms `0 .. n_arms − 1` are registered first,
    in order) or is None (`by="trial"`: keyed by trial number, open-ended δ split). `exclude` is a trial
    that is deciding right now (it is not "busy"). `race_bias` None: the bound shipped for the metric family
    of the values reported (:func:`~mf_sched.integrations._common.auto_race_bias` with `bound_args`: the study
    size, δ, tolerance, family, kind of bound, user's fit; `view.no_family` says when no family fits).
    `refine`: raise the bound where the study's own finished runs improved more. `cache`: reuse the parsed
    finished trials of earlier calls (the result is the same). `stale_after`: a RUNNING trial started more
    than that many seconds before `now` counts as a failure (its worker is presumed dead; without Optuna's
    heartbeat nothing else marks it): its configuration is free again and the trial is listed in `stale`.
    """
    steps = np.asarray(ladder.resources, dtype=float) - offset
    M = ladder.M
    view = RaceView(ladder=ladder, engine=None, offset=offset, keys=[])  # type: ignore[arg-type]
    ordered = list(trials)
    if any(t.number != i for i, t in ((0, ordered[0]), (len(ordered) - 1, ordered[-1]))) if ordered else False:
        ordered.sort(key=lambda x: x.number)
    contiguous = not ordered or (ordered[0].number == 0 and ordered[-1].number == len(ordered) - 1)
    c = cache if cache is not None and contiguous else None
    layout = (tuple(steps.tolist()), n_arms, arm_of is None)
    if c is not None and (c.layout != layout or c.steps != layout[0]):
        c.start_over(layout)
    if c is not None and c.prefix:
        keys, rows, index, view.foreign = list(c.keys), dict(c.rows), list(c.index), dict(c.foreign)
        view.resumable = c.resumable
        start = c.prefix
    else:
        keys = list(range(n_arms)) if arm_of is not None and n_arms else []
        rows = dict(zip(keys, keys))
        index = list(range(len(keys)))
        start = 0
    # one pass in Python over the trials not yet folded (cached parses), the rest vectorised
    values: list[np.ndarray] = []
    row_ids: list[int] = []
    states: list[int] = []  # 0 running (and not `exclude`), 1 ended (COMPLETE/PRUNED), 2 failed, 3 deciding now,
    # 4 paused by the anytime schedule (ended, its configuration may run again)
    priors: list[str | None] = []  # the bound's family each PRUNED trial was stopped under (None: not recorded)
    snapshot = None  # the state after the leading run of finished trials, to fold into the cache

    def take_snapshot(pos: int) -> tuple[Any, ...]:
        return pos, list(keys), dict(rows), list(index), dict(view.foreign), len(values), view.resumable

    for pos in range(start, len(ordered)):
        t = ordered[pos]
        st = t.state
        if c is not None and snapshot is None and st not in _FINISHED:
            snapshot = take_snapshot(pos)
        if st == TrialState.WAITING and (arm_of is None or t.system_attrs.get(ARM) is None):
            continue  # an enqueued trial without a pull yet; a queued retry (below) holds its configuration
        p = cache.get(t, steps, arm_of) if cache is not None else _parse(t, steps, arm_of)
        if p.resumable:
            view.resumable = True
        if p.skip or p.surplus:
            continue
        k = p.key
        r = rows.get(k)
        if r is None:
            r = rows[k] = len(keys)
            keys.append(k)
            index.append(t.number if arm_of is None else len(index))
            if isinstance(k, str):
                view.foreign[k] = t.number
        values.append(p.values)
        row_ids.append(r)
        priors.append(p.prior)
        if st == TrialState.WAITING:
            states.append(0)  # a retry of a failed trial (RetryHeartbeatStaleTrialCallback copies its pull), queued
        elif st == TrialState.RUNNING:
            if t.number == exclude:
                states.append(3)
            elif (
                stale_after is not None
                and now is not None
                and t.datetime_start is not None
                and ((now - t.datetime_start).total_seconds() > stale_after)
            ):
                states.append(2)
                view.stale.append(t.number)
            else:
                states.append(0)
        else:
            # a trial our rule stopped (mf:pruned_rung, neither paused, surplus nor out of budget) ended like a
            # paused one: if the rule, rebuilt now, no longer stops its configuration (the study's curves raised
            # the bound), the configuration runs again rather than being lost
            states.append((4 if p.paused or p.stopped else 1) if st in _ENDED else 2)
    if c is not None and snapshot is None:
        snapshot = take_snapshot(len(ordered))
    view.keys = keys
    V = np.array(values, dtype=float).reshape(len(values), M)
    R = np.asarray(row_ids, dtype=np.int64)
    S = np.asarray(states, dtype=np.int64)
    if c is not None:
        if c.prefix:
            V = np.concatenate([c.values, V])
            R = np.concatenate([c.row_ids, R])
            S = np.concatenate([c.states, S])
            priors = c.priors + priors
        pos, c.keys, c.rows, c.index, c.foreign, n_new, c.resumable = snapshot  # type: ignore[misc]
        upto = len(c.row_ids) + n_new
        c.values, c.row_ids, c.states, c.prefix = V[:upto], R[:upto], S[:upto], pos
        c.priors = priors[:upto]
    view.n_trials = len(trials)
    n = len(keys)
    raw_all = V[~np.isnan(V)]
    mode = "max" if sign > 0 else "min"
    ba = dict(bound_args or {})
    if race_bias is None:
        fam = metric_transform(raw_all, mode, ba.get("family"))
        view.family = "none" if fam is None else next(k for k, v in NAMED_FAMILIES.items() if v is fam)
        # a trial MFPruner stopped under the bound of another metric family (the values have since left that
        # family's range, e.g. a loss that went below 0): that decision no longer holds, so the trial counts as
        # failed and its configuration is evaluated again (issue 24)
        gone = np.array([p is not None and p != view.family for p in priors], dtype=bool)
        if gone.any():
            S = np.where(gone & ((S == 1) | (S == 4)), 2, S)
            view.revoked = [keys[i] for i in np.unique(R[gone]).tolist()]
    merged = np.full((n, M), np.nan)
    for m in range(M):  # the lowest-numbered trial's value wins where two report the same run and rung
        ok = ~np.isnan(V[:, m])
        uniq, first = np.unique(R[ok], return_index=True)
        merged[uniq, m] = V[ok, m][first]
    busy = np.bincount(R[S == 0], minlength=n) > 0
    ended = np.bincount(R[S == 1], minlength=n)
    failed = np.bincount(R[S == 2], minlength=n)
    view.busy = {keys[i] for i in np.flatnonzero(busy).tolist()}
    view.busy_mask, view.ended_count, view.failed_count = busy, ended, failed
    view.paused_count = np.bincount(R[S == 4], minlength=n)
    s = sigma if sigma is not None else default_sigma(raw_all)
    if race_bias is None:
        ba.setdefault("n_arms", n_arms if n_arms else (n or None))
        ba.setdefault("alpha", delta)
        bias = auto_race_bias(ladder, raw_all, mode, **ba)
        view.no_family = bool(raw_all.size) and metric_transform(raw_all, mode, ba.get("family")) is None
    else:
        bias = race_bias
    eng = RungEliminator(
        ladder, delta=delta, sigma=s, n_arms=None if arm_of is None else max(1, n), rule="race",
        race_bias=bias, fixed_arms=arm_of is not None, refine=refine, order=order,
    )  # fmt: skip
    if keys:
        eng.report_many(keys, sign * merged, index=index, trusted=True)
    eng.eliminate()  # first: a run the rule stops is "stopped" (covered), whoever ended its trial
    have = ~np.isnan(merged)
    reached = np.where(have.any(axis=1), M - 1 - np.argmax(have[:, ::-1], axis=1), -1)
    foreign = np.arange(n) >= (n_arms or 0) if arm_of is not None else np.zeros(n, dtype=bool)  # appended after
    below = (reached < M - 1) & ~busy
    lost = (below & (failed >= max_failures)) | (below & (ended > 0) & (foreign | (not view.resumable)))
    if arm_of is None:  # one run per trial (MFPruner with TPE, random ...): a paused trial never runs again
        lost |= below & (view.paused_count > 0)
    # a configuration that keeps failing is dropped; a run that ended below the top without the rule stopping it
    # was abandoned (by another pruner, an ordinary objective that ended, ASHA's cut on a trial that no later trial
    # continues): all are reported as uncovered
    eng.mark_lost_many([keys[i] for i in np.flatnonzero(lost).tolist()])
    view.engine = eng
    return view
