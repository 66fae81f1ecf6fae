"""MFSampler's answer for a study: :class:`MFRecommendation` and how it is built from the study's race (or, for
the other registered policies, from the policy replayed from the storage), and the epochs a study has spent.

The answer rule is the engine's (:meth:`~mf_sched.racing.engine.RungEliminator.answer`, as ASHA's): once the race
is over, the best full-fidelity configuration with its certificate (:func:`race_recommendation`); before that, the
best evidence — the configuration with the best latest value, a full-fidelity one unless a lower-rung one is
already better where it stands (`rung` says which rung it rests on); before the maximum resource is known, the
trial with the best latest report (:func:`early_recommendation`). The other registered policies answer through
:meth:`mf_sched.integrations._optuna_policy._Arms.recommendation`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from optuna.trial import FrozenTrial

from ._optuna_decide import race_over
from ._optuna_race import RESUMABLE, RaceView

__all__ = ["MFRecommendation", "early_recommendation", "race_recommendation", "resources_spent"]


@dataclass(frozen=True)
class MFRecommendation:
    """The sampler's answer for a study, with its certificate (:meth:`MFSampler.recommendation`).

    Attributes:
        params: the recommended configuration (None while there is no answer).
        arm: its index in :meth:`MFSampler.arms` (None for a configuration outside them).
        certified: the certificate's word (:func:`mf_sched.racing.certificate.certification`): the race is over and
            the bound its stops relied on was earned from the study's own curves (or given by you);
            `details["certificate"]` says it, or why not, in one sentence.
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


def resources_spent(trials: Sequence[FrozenTrial], arm_of: Callable[[FrozenTrial], Any], offset: int) -> float:
    """Epochs (steps) trained over all trials: a trial of a resumable objective continues its configuration from the
    furthest step an earlier trial of it reached; other trials train from scratch.

    Args:
        trials: the study's trials.
        arm_of: the configuration a trial evaluates (None: a configuration of its own).
        offset: the step offset (1 when the study counts steps from 0).

    Returns:
        The epochs spent, in the objective's resource units.
    """
    reached: dict[Any, float] = {}
    total = 0.0
    for t in sorted(trials, key=lambda x: x.number):
        if t.last_step is None:
            continue
        end = float(t.last_step + offset)
        key = arm_of(t)
        start = reached.get(key, 0.0) if t.system_attrs.get(RESUMABLE) and key is not None else 0.0
        total += max(0.0, end - start)
        if key is not None:
            reached[key] = max(reached.get(key, 0.0), end)
    return total


def early_recommendation(
    trials: Sequence[FrozenTrial], *, sign: float, delta: float, spent: float, failed: bool,
    arm_of: Callable[[FrozenTrial], int | None],
) -> MFRecommendation:  # fmt: skip
    """The answer while the rungs are not known yet (no trial completed, no `max_resource=`).

    Args:
        trials: the study's trials.
        sign: `1.0` for a study that maximizes, `-1.0` for one that minimizes.
        delta: the confidence parameter δ.
        spent: the epochs spent (:func:`resources_spent`).
        failed: every configuration failed `max_failures` times (the study stopped with no answer).
        arm_of: the arm a trial evaluates.

    Returns:
        `reason="failed"` with no answer when `failed`, else the trial with the best latest value reported
            (`"in-progress"`; `details` names its trial and step).
    """
    if failed:
        return MFRecommendation(None, None, False, "failed", delta, 0.0, 0.0, spent, 0.0, True, len(trials))
    latest = [(sign * t.intermediate_values[t.last_step], t) for t in trials
              if t.last_step is not None and math.isfinite(t.intermediate_values[t.last_step])]  # fmt: skip
    best = max(latest, key=lambda x: (x[0], -x[1].number))[1] if latest else None
    return MFRecommendation(
        None if best is None else dict(best.params), None if best is None else arm_of(best), False,
        "in-progress", delta, 0.0, 0.0, spent, 0.0, False, len(trials),
        details={} if best is None else {"step": best.last_step, "trial": best.number},
    )  # fmt: skip


def race_recommendation(
    view: RaceView, trials: Sequence[FrozenTrial], *, sign: float, delta: float, n_arms: int, spent: float,
    params_of: Callable[[Any, Sequence[FrozenTrial]], dict[str, Any] | None],
) -> MFRecommendation:  # fmt: skip
    """The race's answer (see the module docstring), with its certificate once the race is over.

    Args:
        view: the study's race.
        trials: the study's trials.
        sign: `1.0` for a study that maximizes, `-1.0` for one that minimizes.
        delta: the confidence parameter δ.
        n_arms: the number of candidates K (for the full-fidelity cost and resources).
        spent: the epochs spent (:func:`resources_spent`).
        params_of: the parameters of a run of the race, given its key and the trials.

    Returns:
        `"identified"` or `"finished"` (ε-certified) once the race is over, `"failed"` when it is over and no
            configuration reached the top, else `"in-progress"` with the best evidence.
    """
    eng = view.engine
    K = n_arms
    done = race_over(view)
    cert = eng.certificate()
    details: dict[str, Any] = {
        "rule": "race",
        "bias_source": cert.bias_source,
        "counts": dict(cert.counts),
        "uncovered": list(cert.uncovered),
        "zeta_plus": list(eng.race_bias.upper) if eng.race_bias is not None else None,
        "sigma": eng.sigma.tolist(),
        "epsilon": cert.epsilon,
        "tolerance": cert.tolerance,
        "certificate": cert.sentence(),
        "evidence": dict(cert.evidence),
    }
    if done and cert.key is not None:
        key, rung, est = cert.key, view.ladder.top, cert.value
        reason = "identified" if cert.identified else "finished"
    elif done:  # over, and no configuration reached the top: every one failed (or was abandoned) below it
        key, rung, est, reason = None, None, None, "failed"
    else:
        key, rung, est = eng.answer()
        reason = "in-progress"
    details["estimate"] = None if est is None else sign * est
    R = float(view.ladder.resources[-1])
    return MFRecommendation(
        params=None if key is None else params_of(key, trials),
        arm=key if isinstance(key, int) else None,
        certified=bool(done and cert.certified),
        reason=reason,
        delta=delta,
        cost=eng.cost,
        full_fidelity_cost=K * float(view.ladder.costs[-1]),
        resources_spent=spent,
        full_fidelity_resources=K * R,
        done=done,
        n_trials=len(trials),
        rung=None if rung is None or rung < 0 else int(rung),
        details=details,
    )
