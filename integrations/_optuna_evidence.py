"""The race of an Optuna study, made visible: the numbers behind each stop on the pruned trial and the certificate on
the study (the study's race is read back for :mod:`mf_sched.visualization` by
:mod:`mf_sched.integrations._optuna_readback`).

**On the trial** (user attributes, which optuna-dashboard shows on the trial page; written when MFPruner or
MFSampler stops the trial, by :func:`note_decision`):

| attribute | what it holds |
|---|---|
| `race:rule` | `"race"` (racing against the incumbent) or `"iise"` (IISE's rule, Eq. 3) |
| `race:rung`, `race:step` | the rung at which it was stopped, and that rung's step (`trial.report`) |
| `race:value` | its value there |
| `race:bound` | the best final value it could still reach (for `"iise"`: value + radius + 2ζ at the rung) |
| `race:incumbent` | the run it lost to (`"trial 7"`, or MFSampler's `"config 3"`) |
| `race:incumbent_trial` | the incumbent's trial number |
| `race:incumbent_value` | the incumbent's value (at the top rung; for `"iise"` at the rung) |
| `race:incumbent_lower_bound` | the incumbent's pessimistic bound: `race:bound` is below it, hence the stop |
| `race:incumbent_upper_bound` | the same for a minimised objective (the trial's bound is above it) |
| `race:bias_source`, `race:delta` | where the bias bound came from; the confidence parameter |
| `race:reason` | the same in one sentence |

**On the study** (study user attributes, written by :func:`note_certificate` whenever they change): the
certificate (`race:certificate`: the best run and trial, its value, ε, δ, identified, the bias bound's source,
runs per status, the uncovered runs), the same in one sentence (`race:summary`) and the race's configuration
(`race:config`: ladder, δ, σ, ζ⁺, the candidates' settings) from which
:func:`~mf_sched.integrations._optuna_readback.study_race_data` rebuilds the
race of a study loaded from its storage without the sampler or pruner objects (`mf-sched report`).

Private Optuna API used (as in :mod:`mf_sched.integrations.optuna`): a pruner or sampler gets a
`FrozenTrial`, so attributes are written through `study._storage.set_trial_user_attr` /
`set_study_user_attr`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import optuna
from optuna.distributions import distribution_to_json
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState

from mf_sched.racing.engine import RungEliminator, promotion_quota
from mf_sched.visualization._data import RaceData, certificate_fields, stop_reason

from ._optuna_study import sign_of

__all__ = [
    "CERTIFICATE",
    "SUMMARY",
    "CONFIG",
    "decision_attrs",
    "note_decision",
    "note_certificate",
    "note_pause",
    "key_name",
    "metric_name",
    "CONFIG_VERSION",
]

CERTIFICATE, SUMMARY, CONFIG = "race:certificate", "race:summary", "race:config"
CONFIG_VERSION = 1
_MAX_LISTED = 20  # uncovered runs listed by name in the certificate (optuna-dashboard cuts attributes at 1 KB)
_written: dict[tuple[int, int, str], Any] = {}  # (storage, study, key) -> the value last written by this process
_written_lock = threading.Lock()


def _by_arm(adapter: Any) -> bool:
    """Whether the adapter's runs are configurations (MFSampler: the only adapter that is a sampler) rather than
    trials (MFPruner)."""
    return isinstance(adapter, BaseSampler)


def key_name(key: Hashable, by_arm: bool) -> str:
    """How a run is named: `"config 3"` (MFSampler's candidate 3), `"trial 7"`.

    Args:
        key: the run's key in the engine: an arm index, a trial number, or `"trial-<n>"`.
        by_arm: whether the runs are MFSampler's configurations (else trials, as MFPruner's).
    """
    if isinstance(key, str) and key.startswith("trial-"):
        return "trial " + key[len("trial-") :]
    return f"config {key}" if by_arm else f"trial {key}"


def _finite(x: Any) -> float | None:
    if x is None:
        return None
    f = float(x)
    return f if math.isfinite(f) else None


def _top_trial(key: Hashable, by_arm: bool, trials: Sequence[FrozenTrial] | None, arm_of: Any) -> int | None:
    """The trial number that carries run `key`'s top-rung result."""
    if not by_arm:
        return int(key) if isinstance(key, int) else None
    if isinstance(key, str) and key.startswith("trial-"):
        return int(key[len("trial-") :])
    for t in sorted(trials or (), key=lambda x: x.number):
        if t.state == TrialState.COMPLETE and arm_of(t) == key:
            return t.number
    return None


def decision_attrs(
    engine: RungEliminator,
    key: Hashable,
    *,
    sign: float,
    steps: Sequence[float],
    by_arm: bool = False,
    incumbent_trial: int | None = None,
) -> dict[str, Any]:
    """The `race:*` attributes of a stopped run (see the module docstring); empty when `key` is not stopped. Uses
    the engine's public methods only.

    Args:
        engine: the race (maximisation convention).
        key: the stopped run.
        sign: `1.0` for a study that maximizes, `-1.0` for one that minimizes (values are shown as reported).
        steps: the rungs' steps as the objective reports them.
        by_arm: whether the runs are MFSampler's configurations (else trials).
        incumbent_trial: the trial that carries the incumbent's result, if known (`race:incumbent_trial`).
    """
    rung = engine.stop_rung(key)
    if rung is None:
        return {}
    top = engine.M - 1
    v = engine.value(key, rung)
    ev: dict[str, Any] = {"rung": rung, "value": None if v is None else sign * v}
    out: dict[str, Any] = {
        "race:rule": engine.rule,
        "race:rung": int(rung),
        "race:step": float(steps[rung]) if not float(steps[rung]).is_integer() else int(steps[rung]),
        "race:value": _finite(ev["value"]),
    }
    inc_name = inc_value = inc_bound = bound = None
    if engine.rule == "race":
        bound = sign * engine.upper_bound(key)
        inc, lcb = engine.incumbent()
        if inc is not None:
            inc_name, inc_value, inc_bound = key_name(inc, by_arm), sign * engine.value(inc, top), sign * lcb  # type: ignore[operator]
    else:  # IISE's rule at the rung: v + B + margin against the best lower bound there (Eq. 3)
        margin = engine.rung_table()[rung]["margin"]
        bound = None if v is None else sign * (v + engine.radius(key, rung) + margin)
        best, who = -math.inf, None
        for k in engine.keys:
            w = engine.value(k, rung)
            if w is not None and w - engine.radius(k, rung) > best:
                best, who = w - engine.radius(k, rung), k
        if who is not None:
            inc_name, inc_value, inc_bound = key_name(who, by_arm), sign * engine.value(who, rung), sign * best  # type: ignore[operator]
    word = "race:incumbent_lower_bound" if sign > 0 else "race:incumbent_upper_bound"
    out.update({"race:bound": _finite(bound), "race:incumbent": inc_name, "race:incumbent_value": _finite(inc_value)})
    out[word] = _finite(inc_bound)
    if incumbent_trial is not None:
        out["race:incumbent_trial"] = int(incumbent_trial)
    out["race:bias_source"] = engine.bias_source
    out["race:delta"] = engine.delta
    ev.update(bound=bound, incumbent=inc_name, incumbent_value=inc_value, incumbent_bound=inc_bound)
    out["race:reason"] = stop_reason(ev, sign, engine.rule)
    return {k: x for k, x in out.items() if x is not None}


def note_decision(
    study: optuna.Study,
    trial: FrozenTrial,
    engine: RungEliminator,
    key: Hashable,
    *,
    steps: Sequence[float],
    adapter: Any,
    trials: Sequence[FrozenTrial] | None = None,
) -> None:
    """Record on `trial` (user attributes) why run `key` was stopped; nothing when it is not stopped. A trial
    that already finished cannot be annotated: then nothing is written.

    Args:
        study: the study.
        trial: the trial to annotate.
        engine: the race.
        key: the trial's run.
        steps: the rungs' steps as the objective reports them.
        adapter: the MFSampler or MFPruner that decided (how runs are named, and the arm of a trial).
        trials: the study's trials (to name the incumbent's trial), if read already.
    """
    by_arm = _by_arm(adapter)
    arm_of = getattr(adapter, "arm_of", None)
    inc, _ = engine.incumbent() if engine.rule == "race" else (None, None)
    inc_trial = None if inc is None else _top_trial(inc, by_arm, trials, arm_of)
    attrs = decision_attrs(engine, key, sign=sign_of(study), steps=steps, by_arm=by_arm, incumbent_trial=inc_trial)
    for k, v in attrs.items():
        try:
            study._storage.set_trial_user_attr(trial._trial_id, k, v)
        except Exception:  # a finished trial cannot be annotated (UpdateFinishedTrialError); never fail the study
            return


def note_pause(
    study: optuna.Study, trial: FrozenTrial, engine: RungEliminator, key: Hashable, *, steps: Sequence[float],
    eta: float, again: bool,
) -> None:  # fmt: skip
    """Record on `trial` why the anytime schedule paused it (pruned, not stopped: with MFSampler its configuration may
    run again; with any other sampler the trial never runs again, so it is uncovered): its value at the rung against
    ASHA's cut there (the `max(1, ⌊n/η⌋)`-th best value recorded).

    Args:
        study: the study.
        trial: the paused trial.
        engine: the race.
        key: the trial's run.
        steps: the rungs' steps as the objective reports them.
        eta: ASHA's reduction factor η.
        again: whether the paused configuration may run again (MFSampler's race over a fixed set of arms: the
            caller knows; a pruned trial of any other sampler never runs again).
    """
    rung = engine.reached(key)
    v = engine.value(key, rung)
    if v is None:
        return
    col = engine.values_all()[:, rung]  # every run's value there (NaN: none), in one array read
    vals = np.sort(col[~np.isnan(col)])[::-1].tolist()
    keep = promotion_quota(len(vals), eta)  # the cut the pause was decided by (eng.promotable, keep_one)
    sign = sign_of(study)
    attrs = {
        "race:rule": engine.rule,
        "race:rung": int(rung),
        "race:step": float(steps[rung]) if not float(steps[rung]).is_integer() else int(steps[rung]),
        "race:value": _finite(sign * v),
        "race:cut": _finite(sign * vals[keep - 1]),
        "race:bound": _finite(sign * engine.upper_bound(key)),
        "race:bias_source": engine.bias_source,
        "race:delta": engine.delta,
        "race:reason": (
            f"paused at rung {rung} (step {steps[rung]:g}): {sign * v:.4g} is not among the best {keep} of the "
            f"{len(vals)} values there (ASHA's cut {sign * vals[keep - 1]:.4g}) while configurations wait to start; "
            "not stopped — it may run again"
            if again
            else f"pruned at rung {rung} (step {steps[rung]:g}) by ASHA's cut: {sign * v:.4g} is not among the best "
            f"{keep} of the {len(vals)} values there (cut {sign * vals[keep - 1]:.4g}); not stopped by the rule, and a "
            "pruned trial never runs again (its sampler proposes new configurations): uncovered by the certificate"
        ),
    }
    for k, x in attrs.items():
        if x is None:
            continue
        try:
            study._storage.set_trial_user_attr(trial._trial_id, k, x)
        except Exception:  # a finished trial cannot be annotated; never fail the study
            return


def _certificate_attrs(
    study: optuna.Study, engine: RungEliminator, by_arm: bool, trials: Sequence[FrozenTrial] | None, arm_of: Any
) -> dict[str, Any]:
    cert = engine.certificate()
    d = certificate_fields(cert, sign_of(study), lambda k: key_name(k, by_arm))
    # the sentence is the study's race:summary; kept out of this attribute, which optuna-dashboard cuts at 1,024
    # characters (a cut JSON cannot be read)
    d.pop("statement", None)
    best_trial = None if cert.key is None else _top_trial(cert.key, by_arm, trials, arm_of)
    unc = d["uncovered"]
    d["uncovered"] = unc[:_MAX_LISTED] + ([f"... {len(unc) - _MAX_LISTED} more"] if len(unc) > _MAX_LISTED else [])
    # no cost: it changes at every rung, and so would the stored certificate (one write per rung crossed)
    return {"best": d.pop("best"), "best_trial": best_trial, **d}


def _lean_bias(bias: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The bound without its provenance tables (ζ⁺'s held-out coverage per task: kilobytes the bounds do not use)."""
    if bias is None:
        return None
    if "hi" in bias:  # a curve-aware bound: coefficients and λ only, nothing to trim
        return dict(bias)
    details = bias.get("details") or {}
    keep = {k: details[k] for k in ("family", "raised_at", "quantile", "confidence", "fractions") if k in details}
    return {**bias, "details": keep}


def _config_attr(study: optuna.Study, adapter: Any, engine: RungEliminator) -> dict[str, Any]:
    """What :func:`~mf_sched.integrations._optuna_readback.study_race_data` needs to rebuild the race from the storage
    alone."""
    cfg = engine.config()
    out: dict[str, Any] = {
        "version": CONFIG_VERSION,
        "adapter": "MFSampler" if _by_arm(adapter) else "MFPruner",
        "rule": engine.rule,
        "ladder": cfg["ladder"],
        "delta": engine.delta,
        "sigma": [float(s) for s in cfg["sigma"]],
        "race_bias": _lean_bias(cfg.get("race_bias")),
    }
    if _by_arm(adapter):
        st = adapter.search_state
        out.update(
            n_candidates=adapter.n_candidates,
            candidate_seed=adapter.candidate_seed,
            max_grid=adapter.max_grid,
            max_failures=adapter.max_failures,
            order=adapter.order,
            search_space=None if st.space is None else {k: distribution_to_json(d) for k, d in st.space.items()},
        )
    else:
        out.update(n_trials=adapter.n_trials, bias=cfg.get("bias", "zeta"), eta=cfg.get("eta"))
    return out


def _put_study_attr(study: optuna.Study, key: str, value: Any) -> bool:
    """Write a study user attribute unless this process already wrote the same value; True when written."""
    k = (id(study._storage), study._study_id, key)
    with _written_lock:
        if _written.get(k) == value:
            return False
        _written[k] = value
    try:
        study._storage.set_study_user_attr(study._study_id, key, value)
    except Exception:  # never fail the study for its dashboard (e.g. two workers inserting the key at once)
        with _written_lock:
            _written.pop(k, None)
        return False
    return True


def note_certificate(
    study: optuna.Study, adapter: Any, engine: RungEliminator, trials: Sequence[FrozenTrial] | None = None
) -> None:
    """Store the certificate, its summary and the race's configuration with the study (study user attributes);
    each is written only when this process has not written the same value before.

    Args:
        study: the study.
        adapter: the MFSampler or MFPruner whose race it is.
        engine: the race.
        trials: the study's trials (to name the best run's trial), if read already.
    """
    by_arm = _by_arm(adapter)
    arm_of = getattr(adapter, "arm_of", None)
    cert = _certificate_attrs(study, engine, by_arm, trials, arm_of)
    _put_study_attr(study, CONFIG, _config_attr(study, adapter, engine))
    if not _put_study_attr(study, CERTIFICATE, cert):
        return
    race = RaceData(
        runs=[], resources=(), direction="maximize" if sign_of(study) > 0 else "minimize",
        metric=metric_name(study), rule=engine.rule, certificate=cert, incumbent=[],
    )  # fmt: skip
    summary = race.summary()
    if cert.get("best_trial") is not None:
        summary = summary.replace(f"{cert['best']} is", f"{cert['best']} (trial {cert['best_trial']}) is", 1)
    _put_study_attr(study, SUMMARY, summary)


def metric_name(study: optuna.Study) -> str:
    """The study's metric name as plots and summaries show it.

    Args:
        study: the study.

    Returns:
        Its first `metric_names` entry (`study.set_metric_names`), else `"objective value"`.
    """
    names = getattr(study, "metric_names", None)
    return names[0] if names else "objective value"
