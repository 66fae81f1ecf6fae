"""MFPruner: racing (or IISE's rule) at the rungs of a ladder, for Optuna's `report` / `should_prune` loop (see
:mod:`mf_sched.integrations.optuna` for the user's guide).

With MFSampler it carries out the sampler's decisions
(:meth:`mf_sched.integrations.optuna.MFSampler.should_prune`); with any other sampler it rebuilds the race from the
study's trials — one run per trial — and stops a trial that can no longer beat the best completed one, or pauses
it by ASHA's cut, or (`rule="iise"`) applies IISE's symmetric rule. It also enforces the study's epoch `budget`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import optuna
from optuna.trial import FrozenTrial

from mf_sched._validate import check_choice
from mf_sched.ladder import FidelityLadder
from mf_sched.policy import check_delta
from mf_sched.racing.engine import RULES, RungEliminator
from mf_sched.racing.schedule import SCHEDULES

from ._common import (
    DEFAULT_TOLERANCE,
    bound_kwargs,
    check_budget,
    check_count,
    default_sigma,
    resolve_rungs,
    warn_no_family,
)
from ._optuna_decide import crossed_rung
from ._optuna_evidence import note_certificate, note_decision, note_pause
from ._optuna_race import BUDGET_SPENT, PAUSED, PRUNED_RUNG, TrialCache, race_view, step_offset, trial_rung_values
from ._optuna_sampler import MFSampler
from ._optuna_study import StudyAdapter, mark, sign_of, stop_study, study_key

__all__ = ["MFPruner"]


class MFPruner(StudyAdapter, optuna.pruners.BasePruner):
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
        sigma: seed-to-seed σ (default: as :class:`MFSampler`).
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
        """The race of `study` rebuilt from its storage, one run per trial.

        Args:
            study: the study.

        Returns:
            The engine with every trial's rung values (maximisation convention), keyed by trial number; None while
                the ladder is unknown.
        """
        trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
        lad, off = self.study_ladder(study, trials)
        if lad is None:
            return None
        sign = sign_of(study)
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
        key = (study_key(study), trial.number)
        n, top = len(iv), trial.last_step
        before = self._steps_seen.get(key)
        if len(self._steps_seen) > 10_000:
            self._steps_seen.clear()
        self._steps_seen[key] = (n, top)
        if before is None or n <= before[0] or top != before[1] or study_key(study) in self._warned_order:
            return
        self._warned_order.add(study_key(study))
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
        if lad is None or not crossed_rung(trial, np.asarray(lad.resources, dtype=float) - off):
            return False
        eng = self.engine(study)
        if eng is None or trial.number not in eng:
            return False
        if self.rule == "race":
            stop = eng.status(trial.number) == "stopped"
            if not stop and self._pause_now(eng, trial.number):
                mark(study, trial, PAUSED, True)
                mark(study, trial, PRUNED_RUNG, eng.reached(trial.number))
                steps = np.asarray(lad.resources) - off
                s = study.sampler  # only MFSampler's race over fixed arms gives a paused configuration a later trial
                again = isinstance(s, MFSampler) and not s.dynamic_space and not s.continuous
                note_pause(study, trial, eng, trial.number, steps=steps, eta=self._rungs.reduction_factor, again=again)
                note_certificate(study, self, eng, trials)
                return True
        else:
            stop = bool(eng.should_stop(trial.number))
        if stop:
            mark(study, trial, PRUNED_RUNG, eng.stop_rung(trial.number))
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
        mark(study, trial, BUDGET_SPENT, True)
        stop_study(study)
        return True
