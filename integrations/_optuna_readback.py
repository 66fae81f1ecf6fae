"""A study's race read back from its storage, for :mod:`mf_sched.visualization` (`plot_race(study)`,
`mf-sched report`): :func:`study_race_data` rebuilds the race with the sampler or pruner the study was raced with —
the live objects, else the ones its `race:config` study attribute describes
(:mod:`mf_sched.integrations._optuna_evidence` writes it), else the defaults — and adds each run's curve, its trials,
their times and the evidence stored on them.
"""

from __future__ import annotations

import datetime
import json
import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import optuna
from optuna.distributions import json_to_distribution
from optuna.trial import FrozenTrial, TrialState

from mf_sched.ladder import FidelityLadder
from mf_sched.racing.bias import RaceBias
from mf_sched.racing.curve_bound import CurveBound
from mf_sched.visualization._data import RaceData

from ._optuna_evidence import CONFIG, CONFIG_VERSION, key_name, metric_name
from ._optuna_pruner import MFPruner
from ._optuna_race import ARM, PAUSED, trial_rung_values
from ._optuna_sampler import MFSampler
from ._optuna_study import sign_of

__all__ = ["study_race_data"]


def _rebuild_adapter(study: optuna.Study, cfg: Mapping[str, Any]) -> Any:
    """The MFSampler or MFPruner a study was raced with, from its `race:config` (validated by the constructors)."""
    if not isinstance(cfg, Mapping) or cfg.get("version") != CONFIG_VERSION:
        raise ValueError(f"study {study.study_name!r}: {CONFIG} is not a race configuration of version 1")
    try:
        lad = FidelityLadder.from_dict(cfg["ladder"])
        bias = cfg.get("race_bias")
        if bias is not None:
            bias = CurveBound.from_dict(bias) if "hi" in bias else RaceBias.from_dict(bias)
        sigma = [float(s) for s in cfg["sigma"]]
        delta = float(cfg["delta"])
        if cfg.get("adapter") == "MFSampler":
            space = cfg.get("search_space")
            if space is not None:
                if not isinstance(space, Mapping):
                    raise ValueError("search_space must be a mapping")
                space = {str(k): json_to_distribution(str(v)) for k, v in space.items()}
            return MFSampler(
                ladder=lad, race_bias=bias, sigma=sigma, delta=delta, search_space=space,
                n_candidates=int(cfg["n_candidates"]), candidate_seed=int(cfg["candidate_seed"]),
                max_grid=int(cfg["max_grid"]), max_failures=int(cfg["max_failures"]), order=str(cfg["order"]),
                stale_after=None,
            )  # fmt: skip
        if cfg.get("adapter") == "MFPruner":
            rule = str(cfg["rule"])
            n = cfg.get("n_trials")
            kw: dict[str, Any] = (
                {"race_bias": bias} if rule == "race" else {"bias": cfg.get("bias"), "eta": cfg.get("eta")}
            )
            return MFPruner(lad, rule=rule, sigma=sigma, delta=delta, n_trials=None if n is None else int(n), **kw)
    except (KeyError, TypeError, ValueError, json.JSONDecodeError) as e:
        raise ValueError(f"study {study.study_name!r}: {CONFIG} is malformed: {e}") from None
    raise ValueError(f"study {study.study_name!r}: {CONFIG} names an unknown adapter {cfg.get('adapter')!r}")


def _adapter_of(study: optuna.Study, trials: Sequence[FrozenTrial]) -> tuple[Any, bool]:
    """The adapter whose engine is the study's race and whether mf-sched raced the study: the live one, else the one
    stored with the study, else the defaults (MFSampler when the trials carry its candidates, else MFPruner) — the
    defaults of a study with no trace of a race (no `race:config`, no race evidence on a trial) only read its
    curves: `False`."""
    s, p = study.sampler, study.pruner
    if isinstance(s, MFSampler) and s.race and not s.dynamic_space and not s.continuous:
        return s, True
    if isinstance(p, MFPruner):
        return p, True
    cfg = study._storage.get_study_user_attrs(study._study_id).get(CONFIG)
    if cfg is not None:
        return _rebuild_adapter(study, cfg), True
    if any(isinstance(t.system_attrs.get(ARM), int) for t in trials):
        return MFSampler(stale_after=None), True
    raced = any(str(k).startswith("race:") for t in trials for k in t.user_attrs)
    return MFPruner(), raced


def _evidence_of(t: FrozenTrial) -> dict[str, Any]:
    a = t.user_attrs
    if "race:bound" not in a and "race:rung" not in a:
        return {}
    inc_bound = a.get("race:incumbent_lower_bound", a.get("race:incumbent_upper_bound"))
    out = {
        "rung": a.get("race:rung"),
        "value": a.get("race:value"),
        "bound": a.get("race:bound"),
        "incumbent": a.get("race:incumbent"),
        "incumbent_value": a.get("race:incumbent_value"),
        "incumbent_bound": inc_bound,
        "reason": a.get("race:reason"),
        "trial": t.number,
    }
    return {k: v for k, v in out.items() if v is not None}


def study_race_data(study: optuna.Study) -> RaceData:
    """The race of an Optuna study (see :mod:`mf_sched.visualization`): rebuilt from its storage with the sampler
    or pruner it was raced with (the live objects, else the `race:config` stored with it, else the defaults).

    Args:
        study: an Optuna study (live, or loaded from its storage).

    Returns:
        The race's data for the plots and the report.

    Raises:
        ValueError: the study has no trial with a reported value at a rung (nothing was raced yet), or its
            `race:config` is malformed.
    """
    trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
    adapter, raced = _adapter_of(study, trials)
    engine = adapter.engine(study)
    if engine is None or len(engine) == 0:
        raise ValueError(
            f"study {study.study_name!r} has nothing to plot yet: no trial reported a value at a rung "
            "(trial.report(value, step)), or the maximum resource is still unknown"
        )
    lad, off = adapter.study_ladder(study, trials)
    by_arm = isinstance(adapter, MFSampler)
    sign = sign_of(study)
    steps = np.asarray(lad.resources, dtype=float) - off
    starts = [t.datetime_start for t in trials if t.datetime_start is not None]
    t0 = min(starts) if starts else None
    now = datetime.datetime.now()
    of_key: dict[Hashable, list[FrozenTrial]] = {}
    for t in sorted(trials, key=lambda x: x.number):
        if by_arm:
            a = adapter.arm_of(t)
            k: Hashable = a if a is not None else f"trial-{t.number}"
        else:
            k = t.number
        if k in engine:
            of_key.setdefault(k, []).append(t)
    live = (TrialState.RUNNING, TrialState.WAITING)
    running = {k for k, ts in of_key.items() if any(t.state in live for t in ts)}
    if engine.rule != "race":  # IISE's rule decides when a trial reports (MFPruner.prune): replay the decisions
        for k in engine.keys:
            ts = of_key.get(k, [])
            if ts and ts[-1].state == TrialState.PRUNED:
                engine.should_stop(k)
            elif ts and ts[-1].state != TrialState.RUNNING and engine.reached(k) < engine.M - 1:
                engine.mark_lost(k)
    abandoned: list[Hashable] = []
    if not by_arm:
        # one run per trial: a trial that ended below the top rung without the rule stopping it — pruned by ASHA's
        # cut (the pruner's anytime schedule), failed — never runs again (Optuna resumes no pruned trial, and a
        # sampler such as TPE proposes a new configuration instead): not paused but uncovered
        top = engine.M - 1
        abandoned = [k for k in engine.keys if of_key.get(k) and k not in running and engine.reached(k) < top]
        engine.mark_lost_many(abandoned)  # (the pruner's race marks them so too; a run stopped keeps its status)
    names, params, curves, times, evidence, numbers = {}, {}, {}, {}, {}, {}
    cands = adapter.candidates if by_arm else None
    for k in engine.keys:
        ts = of_key.get(k, [])
        names[k] = key_name(k, by_arm)
        if by_arm and isinstance(k, int) and cands is not None:
            params[k] = dict(cands[k])
        elif ts:
            params[k] = dict(ts[0].params)
        pts: dict[float, float] = {}
        when = np.full(lad.M, np.nan)
        for t in ts:  # the lowest-numbered trial wins where two report the same step (as the race does)
            for s, v in t.intermediate_values.items():
                if v is not None and math.isfinite(v):
                    pts.setdefault(float(s) + off, float(v))
            if t0 is not None and t.datetime_start is not None:
                end = t.datetime_complete or now
                sec = (end - t0).total_seconds()
                have = ~np.isnan(trial_rung_values(t, steps))
                when = np.where(have & np.isnan(when), sec, when)
            ev = _evidence_of(t)
            if ev:
                evidence[k] = ev
        if pts:
            xs = sorted(pts)
            curves[k] = (xs, [pts[x] for x in xs])
        times[k] = when
        numbers[k] = [t.number for t in ts]
    race = RaceData.from_engine(
        engine, sign=sign, metric=metric_name(study), names=names, params=params, curves=curves,
        times=times if t0 is not None else None, evidence=evidence, trials=numbers,
        time_label="seconds since the study's first trial started", source=f"Optuna study {study.study_name!r}",
        raced=raced, running=running,
    )  # fmt: skip
    if abandoned:
        gone = set(abandoned)
        for r in race.runs:
            if r.key in gone and r.fate == "lost":
                r.reason = _abandoned_reason(of_key[r.key][-1], sign)
    return race


def _abandoned_reason(t: FrozenTrial, sign: float) -> str:
    """Why a trial of a by-trial race ended below the top rung without being stopped (see study_race_data)."""
    a = t.user_attrs
    if t.system_attrs.get(PAUSED) and isinstance(a.get("race:rung"), int):
        value, cut = a.get("race:value"), a.get("race:cut")
        how = ""
        if isinstance(value, (int, float)) and isinstance(cut, (int, float)):
            how = f" ({value:.4g} is {'below' if sign > 0 else 'above'} the cut {cut:.4g})"
        return (
            f"pruned at rung {a['race:rung']} by ASHA's cut{how}, not stopped by the rule; a pruned trial never runs "
            "again (its sampler proposes new configurations instead): uncovered by the certificate"
        )
    word = {TrialState.PRUNED: "pruned", TrialState.FAIL: "failed"}.get(t.state, "ended")
    return (
        f"{word} below the top rung without being stopped by the rule; "
        "it never runs again: uncovered by the certificate"
    )
