"""The racing engine of an Optuna study, rebuilt from its storage (shared by MFSampler and MFPruner).

Storage is the only state shared by Optuna's worker processes, so every decision rebuilds the
:class:`~mf_sched.rungs.RungEliminator` from the study's trials — vectorised (:meth:`RungEliminator.report_many`),
so the cost is one pass over the trials. What is read from a trial:

* its **rung values**: at rung ``m`` (step ``s_m``) the last intermediate value reported at a step ``≤ s_m``,
  provided the trial reached ``s_m`` (steps off the rungs count: what a pruner sees), plus its
  ``mf:result`` at its fidelity (``finish``); values of FAIL trials count too (nothing a crashed worker stored
  is lost); non-finite values are no evidence;
* its **run**: with ``by="arm"`` (MFSampler) a configuration is one run across trials — a trial that resumes
  a configuration from its checkpoint continues its curve — and the lowest-numbered trial wins where two
  report the same rung; trials whose parameters are not a candidate (a discovery trial, a fallback trial)
  are runs of their own, keyed ``"trial-<number>"``. With ``by="trial"`` (MFPruner with any sampler) every
  trial is a run;
* **steps**: when some trial reported step 0 the objective counts from 0, and resource ``r`` is step ``r − 1``.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from optuna.trial import FrozenTrial, TrialState

from mf_sched.ladder import FidelityLadder
from mf_sched.race import RaceBias
from mf_sched.rungs import RungEliminator

from ._common import auto_race_bias, auto_resources, default_sigma, inferred_ladder

ARM, FIDELITY, RESULT, PRUNED_RUNG, REPLICA = "mf:arm", "mf:fidelity", "mf:result", "mf:pruned_rung", "mf:replica"
PARAMS = "mf:params"  # MF-GP-UCB: the point chosen for the trial
RESUMABLE = "mf:resumable"  # budget() was called: the objective trains to the given budget, resuming
SURPLUS = "mf:surplus"  # nothing was left to evaluate when the trial started: it is pruned at once

__all__ = ["RaceView", "race_view", "step_offset", "max_resource_of", "trial_rung_values"]

_ENDED = (TrialState.COMPLETE, TrialState.PRUNED)


def step_offset(trials: Sequence[FrozenTrial]) -> int:
    """1 when some trial reported step 0 (steps count from 0: resource ``r`` is step ``r − 1``), else 0."""
    return int(any(0 in t.intermediate_values for t in trials))


def max_resource_of(trials: Sequence[FrozenTrial], offset: int) -> float | None:
    """The maximum resource seen by the study: the last step (+ offset) of its lowest-numbered COMPLETE trial
    (the same in every process, as Optuna's HyperbandPruner infers ``max_resource``), or None."""
    done = [t for t in trials if t.state == TrialState.COMPLETE and t.last_step is not None]
    if not done:
        return None
    t = min(done, key=lambda x: x.number)
    return float(t.last_step + offset)  # type: ignore[operator]


def ladder_of(
    trials: Sequence[FrozenTrial], ladder: FidelityLadder | None, max_resource: float | None,
    min_resource: float | None, reduction_factor: float,
) -> tuple[FidelityLadder | None, int]:  # fmt: skip
    """The study's ladder (given, or inferred) and its step offset; None while the maximum is unknown."""
    off = step_offset(trials)
    if ladder is not None:
        return ladder, off
    R = max_resource if max_resource is not None else max_resource_of(trials, off)
    if R is None:
        return None, off
    return inferred_ladder(auto_resources(R, min_resource=min_resource, reduction_factor=reduction_factor)), off


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
    return out


@dataclass
class RaceView:
    """The engine and what the adapters need besides it (see :func:`race_view`)."""

    ladder: FidelityLadder
    engine: RungEliminator
    offset: int
    keys: list[Any]
    busy: set[Any] = field(default_factory=set)
    ended: collections.Counter = field(default_factory=collections.Counter)
    failures: collections.Counter = field(default_factory=collections.Counter)
    resumable: bool = False
    foreign: dict[str, int] = field(default_factory=dict)  # "trial-<n>" -> trial number
    n_trials: int = 0

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


def race_view(
    trials: Sequence[FrozenTrial],
    *,
    ladder: FidelityLadder,
    offset: int,
    sign: float,
    delta: float,
    sigma: Any,
    race_bias: RaceBias | None,
    n_arms: int | None,
    arm_of: Callable[[FrozenTrial], int | None] | None,
    exclude: int | None = None,
    max_failures: int = 3,
    refine: bool = True,
    order: str = "estimate",
) -> RaceView:
    """Rebuild the racing engine of a study (see the module docstring).

    ``arm_of`` maps a trial to its candidate arm (``by="arm"``; arms ``0 .. n_arms − 1`` are registered first,
    in order) or is None (``by="trial"``: keyed by trial number, open-ended δ split). ``exclude`` is a trial
    that is deciding right now (it is not "busy"). ``race_bias`` None: the shipped prior for the metric family
    of the values reported (refined by the study's finished runs).
    """
    steps = np.asarray(ladder.resources, dtype=float) - offset
    M = ladder.M
    rows: dict[Any, int] = {}
    keys: list[Any] = []
    if arm_of is not None and n_arms:
        for a in range(n_arms):
            rows[a] = a
            keys.append(a)
    vals: list[np.ndarray] = [np.full(M, np.nan) for _ in keys]
    index: list[int] = list(range(len(keys)))
    raw: list[float] = []
    view = RaceView(ladder=ladder, engine=None, offset=offset, keys=keys)  # type: ignore[arg-type]
    running_keys = []
    for t in sorted(trials, key=lambda x: x.number):
        if t.state == TrialState.WAITING:
            continue
        k = _key(t, arm_of)
        if isinstance(k, str) and not (t.intermediate_values or t.state == TrialState.COMPLETE):
            continue  # a trial outside the candidates with nothing reported yet is no run
        attrs = t.system_attrs
        if attrs.get(RESUMABLE):
            view.resumable = True
        if attrs.get(SURPLUS):
            continue
        if k not in rows:
            rows[k] = len(keys)
            keys.append(k)
            vals.append(np.full(M, np.nan))
            index.append(t.number if arm_of is None else len(index))
            if isinstance(k, str):
                view.foreign[k] = t.number
        v = trial_rung_values(t, steps)
        raw.extend(x for x in v.tolist() if not math.isnan(x))
        row = vals[rows[k]]
        fill = np.isnan(row) & ~np.isnan(v)
        row[fill] = sign * v[fill]
        if t.state == TrialState.RUNNING:
            if t.number != exclude:
                view.busy.add(k)
                running_keys.append(k)
        elif t.state in _ENDED:
            view.ended[k] += 1
        elif t.state == TrialState.FAIL:
            view.failures[k] += 1
    view.n_trials = len(trials)
    s = sigma if sigma is not None else default_sigma(raw)
    mode = "max" if sign > 0 else "min"
    bias = race_bias if race_bias is not None else auto_race_bias(ladder, raw, mode)
    eng = RungEliminator(
        ladder, delta=delta, sigma=s, n_arms=None if arm_of is None else max(1, len(keys)), rule="race",
        race_bias=bias, fixed_arms=arm_of is not None, refine=refine, order=order,
    )  # fmt: skip
    if keys:
        eng.report_many(keys, np.array(vals), index=index)
    top = M - 1
    eng.eliminate()  # first: a run the rule stops is "stopped" (covered), whoever ended its trial
    for k in keys:
        st = eng.status(k)
        if st != "running":
            continue
        if view.failures[k] >= max_failures and k not in view.busy:
            eng.mark_lost(k)  # a configuration that keeps failing is dropped (reported as uncovered)
        elif (
            (not view.resumable or isinstance(k, str)) and view.ended[k] and eng.reached(k) < top and k not in view.busy
        ):
            eng.mark_lost(k)  # a run that ended below the top without the rule stopping it: abandoned
    view.engine = eng
    return view
