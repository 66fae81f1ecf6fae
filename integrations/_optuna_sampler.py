"""MFSampler: multi-fidelity racing (or any registered policy) as an Optuna sampler — the Optuna glue around the
race's decisions (see :mod:`mf_sched.integrations.optuna` for the user's guide).

The class holds the settings, the per-study state of this process, and Optuna's hooks. What it decides is
elsewhere: the race rebuilt from the storage (:func:`~mf_sched.integrations._optuna_race.race_view`), what to run
next and what to stop (:mod:`mf_sched.integrations._optuna_decide`), the answer
(:mod:`mf_sched.integrations._optuna_recommendation`), the other registered policies
(:mod:`mf_sched.integrations._optuna_policy`); how a decision becomes a trial's claim is
:mod:`mf_sched.integrations._optuna_claims`, and which configuration each arm is,
:mod:`mf_sched.integrations._optuna_arms`.
"""

from __future__ import annotations

import copy
import threading
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler, RandomSampler
from optuna.trial import FrozenTrial, TrialState

from mf_sched._validate import check_choice
from mf_sched.ladder import FidelityLadder
from mf_sched.policy import check_delta
from mf_sched.racing.engine import ORDERS, RungEliminator
from mf_sched.racing.schedule import SCHEDULES
from mf_sched.registry import get_policy

from ._common import DEFAULT_TOLERANCE, bound_kwargs, check_budget, check_count, resolve_rungs
from ._optuna_arms import StudyArms, check_proposer
from ._optuna_claims import Claims, deciding, set_pull
from ._optuna_decide import RaceDecisions, crossed_rung, race_over
from ._optuna_evidence import note_certificate, note_decision, note_pause
from ._optuna_policy import arms_for, check_suggested
from ._optuna_race import (
    ARM,
    FIDELITY,
    PAUSED,
    PRUNED_PRIOR,
    PRUNED_RUNG,
    RESUMABLE,
    SURPLUS,
    TrialCache,
    step_offset,
)
from ._optuna_recommendation import (
    MFRecommendation,
    early_recommendation,
    race_recommendation,
    resources_spent,
)
from ._optuna_space import SearchState, as_distributions
from ._optuna_study import StudyAdapter, mark, sign_of, stop_study

__all__ = ["MFSampler"]


class MFSampler(StudyAdapter, BaseSampler):
    """Multi-fidelity racing (or any registered policy) as an Optuna sampler; see :mod:`mf_sched.integrations.optuna`.

    Args:
        ladder: the rungs (resources) and, for policies other than `race`, ζ (a
            :class:`~mf_sched.ladder.FidelityLadder`); default: inferred.
        calibration: a :class:`~mf_sched.curves.calibration.Calibration` whose ladder is used (instead of `ladder`).
        resources: the rungs alone (e.g. epochs `[1, 3, 9, 27]`: racing with the ζ⁺ prior); default: inferred.
        policy: `"race"` (default) or a registered finite-armed best-arm policy (needs `ladder`).
        policy_kwargs: extra constructor arguments of the policy.
        search_space: `{name: list of values or distribution}`; default: the first trial's distributions.
        delta: confidence δ.
        sigma: seed-to-seed σ of the objective (one, or one per rung; default: the calibration's, else 0.01 for
            values in [0, 1] and 1% of the median absolute value reported otherwise).
        race_bias: ζ⁺ for `race` (:class:`~mf_sched.racing.bias.RaceBias`, a list, a
            :class:`~mf_sched.curves.calibration.RaceCalibration`); default the shipped prior, refined by the study.
        max_resource: the top resource `R` of the inferred ladder (default: the last step of the first trial that
            completes; see :mod:`mf_sched.integrations.optuna`).
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
        self._proposer = check_proposer(proposer, seed) if self.race else None
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
        if order not in ORDERS:
            raise ValueError(f"order = {order!r} is unknown; accepted: {', '.join(map(repr, ORDERS))}")
        self.order = order
        self.schedule = check_choice("schedule", schedule, SCHEDULES)
        self._bound_kw = bound_kwargs(tolerance, metric_family, bound)
        self.budget = check_budget(budget)
        self.keep_sampling = bool(keep_sampling)
        self._search = SearchState(
            max_grid, n_candidates, self.candidate_seed,
            space=as_distributions(search_space) if search_space is not None else None,
            explicit=search_space is not None, propose=self._proposer is not None,
        )  # fmt: skip
        self._study_arms = StudyArms(self._search)  # which configuration each arm is, per study
        self._claims = Claims()
        self._arms.use_given_space()
        self.seed = seed
        self._fallback = fallback if fallback is not None else RandomSampler(seed=seed)
        self._lock = threading.RLock()
        self._caches: dict[tuple[int, int], TrialCache] = {}  # per study: its parsed finished trials
        self._race = RaceDecisions(
            self._search, self._study_arms, ensure_space=self._arms.ensure_space, study_ladder=self.study_ladder,
            cache_of=self._cache, rungs=self._rungs, delta=self.delta, order=order, max_failures=max_failures,
            stale_after=stale_after, schedule=self.schedule, candidate_seed=self.candidate_seed,
            bound_args=self._bound_kw,
        )  # fmt: skip
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
        process sees it.

        Args:
            study: a study this sampler samples (or one loaded from its storage).

        Returns:
            The configurations by arm index; None while the search space is unknown.

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
            book = self._study_arms.rebuild(study, trials)
        return self._study_arms.configurations(book)

    def proposed_arm(self, study: optuna.Study, trial: FrozenTrial) -> tuple[dict[str, Any], bool] | None:
        """What the proposer gave the arm a trial starts, resumes or re-runs.

        Args:
            study: the study.
            trial: a trial being sampled.

        Returns:
            For a trial whose configuration is (partly) the proposer's — it starts, resumes or re-runs an arm that
                is proposed one at a time, or it started before the search space was known — `(the arm's values known
                so far, discovery)`; None for any other trial (a fixed candidate, the fallback's).
        """
        if self._proposer is None:
            return None
        return self._study_arms.proposed(study, trial, self._lock)

    def arm_of(self, t: FrozenTrial) -> int | None:
        """The candidate (arm index into the finite search space) that a trial evaluates.

        Args:
            t: a trial of a study this sampler samples.

        Returns:
            The arm this sampler assigned it, else the one its parameters match; None for a trial outside the
                candidates (or while the space is not known yet). Arms proposed one at a time: as :meth:`arms` rebuilt
                them last.
        """
        return self._study_arms.arm_of(t)

    def engine(self, study: optuna.Study) -> RungEliminator | None:
        """The race of `study` rebuilt from its storage.

        Args:
            study: the study.

        Returns:
            The engine, its runs keyed by candidate index (`"trial-<n>"` for a trial outside the candidates),
                values in the maximisation convention; None while the space or the ladder is unknown, or when the
                policy is not `"race"`.
        """
        if not self.race:
            return None
        with self._lock:
            trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
            view = self._race.view(study, trials, exclude=None)
        return None if view is None else view.engine

    # ------------------------------------------------------------------ the race
    def _race_decide(self, study: optuna.Study, trial: FrozenTrial) -> tuple[int | None, int, set[Any], str]:
        """Racing's decision for a new trial (:meth:`RaceDecisions.decide`)."""
        return self._race.decide(study, trial)

    def _decide(self, study: optuna.Study, trial: FrozenTrial) -> tuple[int | None, int, set[Any], str]:
        """The decision :meth:`Claims.claim` claims: racing's, or the registered policy's next pull."""
        if self.race:
            return self._race_decide(study, trial)
        arm, fid, seen, replica = self._arms.decide(study, trial, sign_of(study))
        return arm, fid, seen, "replica" if replica else "pull"

    def should_prune(self, study: optuna.Study, trial: FrozenTrial) -> bool:
        """The decision MFPruner carries out when paired with this sampler (see :mod:`mf_sched.integrations.optuna`).

        Args:
            study: the study.
            trial: the trial that has just reported.

        Returns:
            True when the trial is to be pruned: a surplus trial; racing: its configuration was stopped by the rule
                or is paused by the anytime schedule at the rung it has just crossed; another policy: an ordinary
                objective reached the fidelity the policy chose for the trial.
        """
        if trial.system_attrs.get(SURPLUS):
            return True
        with self._lock:
            trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
            if self.race:
                view = self._race.view(study, trials, exclude=None)
                if view is None:
                    return False
                key = self.arm_of(trial)
                key = key if key is not None else f"trial-{trial.number}"
                if not crossed_rung(trial, view.steps) and not self._race.stopped_since(view, trial, key):
                    return False
                verdict = self._race.prune_verdict(view, trial, key, trials)
                if verdict is None:
                    return False
                if verdict == "pause":
                    mark(study, trial, PAUSED, True)
                    again = not self.dynamic_space and not self.continuous  # a fixed set of arms: it may run again
                    note_pause(study, trial, view.engine, key, steps=view.steps, eta=self._rungs.reduction_factor,
                               again=again)  # fmt: skip
                rung = view.engine.stop_rung(key)
                if rung is None:  # paused by the anytime schedule, not stopped: there is no stop to explain
                    rung = view.engine.reached(key)
                else:
                    note_decision(study, trial, view.engine, key, steps=view.steps, adapter=self, trials=trials)
                    if view.family is not None:  # stopped under the shipped bound of this metric family
                        mark(study, trial, PRUNED_PRIOR, view.family)
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
        mark(study, trial, PRUNED_RUNG, rung)
        return True

    def recommendation(self, study: optuna.Study) -> MFRecommendation:
        """The sampler's recommended configuration for `study`, with its certificate.

        Args:
            study: a study this sampler samples (or one loaded from its storage).

        Returns:
            The answer (see :class:`MFRecommendation` and :mod:`mf_sched.integrations.optuna`).
        """
        with self._lock:
            trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
            if not self.race:
                return self._arms.recommendation(study, sign_of(study))
            view = self._race.view(study, trials, exclude=None)
        spent = resources_spent(trials, self.arm_of, step_offset(trials) if view is None else view.offset)
        sign = sign_of(study)
        if view is None:
            failed = self._search.known and self._race.unraced(trials, self._search.n_arms or 0, exclude=None)[2]
            return early_recommendation(
                trials, sign=sign, delta=self.delta, spent=spent, failed=failed, arm_of=self.arm_of
            )
        return race_recommendation(
            view, trials, sign=sign, delta=self.delta, n_arms=self._search.n_arms or 0, spent=spent,
            params_of=self._study_arms.params_of,
        )  # fmt: skip

    def resources_spent(self, study: optuna.Study, trials: Sequence[FrozenTrial] | None = None) -> float:
        """Epochs (steps) trained so far in `study`, as :attr:`MFRecommendation.resources_spent` counts them
        (a resumable objective's trial continues its configuration; others train from scratch).

        Args:
            study: the study.
            trials: its trials, if already read from the storage (default: read them).

        Returns:
            The epochs spent, in the objective's resource units.
        """
        if trials is None:
            trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
        with self._lock:
            self._study_arms.rebuild(study, trials)
            return resources_spent(trials, self.arm_of, step_offset(trials))

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

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        with deciding(study._storage, trial._trial_id):  # a heartbeat while deciding; an error fails the trial
            self._before_trial(study, trial)

    def _before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        for s in self._helpers():
            s.before_trial(study, trial)
        if len(study.directions) > 1:
            return  # sample_* raise the error: MFSampler is single-objective
        attrs = trial.system_attrs
        if FIDELITY in attrs:
            return
        top = -1 if self.race else self.ladder.top  # type: ignore[union-attr]
        if "failed_trial" in attrs:  # RetryFailedTrialCallback: same arm and fidelity as the failed trial
            old = study._storage.get_trial(
                study._storage.get_trial_id_from_study_id_trial_number(study._study_id, attrs["failed_trial"])
            )
            if FIDELITY in old.system_attrs:
                set_pull(study, trial, old.system_attrs.get(ARM), old.system_attrs[FIDELITY])
                return
        if "fixed_params" in attrs:  # an enqueued trial: its own parameters, at the top fidelity
            with self._lock:
                trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
                self._arms.ensure_space(trials)
                book = self._study_arms.rebuild(study, trials)
                arm = (book or self._search).arm_of_params(attrs["fixed_params"])
            set_pull(study, trial, arm, top)
            return
        if self._search.dynamic:
            set_pull(study, trial, None, top)
            return
        if self.race and not isinstance(study.pruner, StudyAdapter):  # a pruner that is a StudyAdapter: MFPruner
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
            set_pull(study, trial, None, top)
            study._storage.set_trial_system_attr(trial._trial_id, SURPLUS, True)
            stop_study(study)  # the epoch budget is spent: the answer is the recommendation now
            return
        self._claims.claim(study, trial, self._decide, self._lock, race=self.race, keep_sampling=self.keep_sampling)

    def sample_independent(
        self, study: optuna.Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution
    ) -> Any:
        self._raise_error_if_multi_objective(study)
        if self.race and trial.system_attrs.get(SURPLUS):
            # a surplus trial (nothing to hand out while other workers run, or the race is over) is pruned at its
            # first suggest, before it trains anything: pruned at its first report, every surplus trial used to
            # train an epoch (with 4 threads, 2–5 of the README study's epochs), thrown away
            raise optuna.TrialPruned("MFSampler: a surplus trial (nothing to hand out now)")
        return self._arms.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(
        self, study: optuna.Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None
    ) -> None:
        for s in self._helpers():
            s.after_trial(study, trial, state, values)
        self._study_arms.forget(study, trial.number)
        if state in (TrialState.COMPLETE, TrialState.PRUNED) and len(study.directions) == 1:
            with self._lock:  # a parameter of the space it never suggested: a conditional space
                check_suggested(self._search, trial, self._fallback, stacklevel=4)
        attrs = trial.system_attrs
        fid = attrs.get(FIDELITY)
        if state == TrialState.COMPLETE and attrs.get(RESUMABLE) and isinstance(fid, int) and fid >= 0:
            lad, _ = self.study_ladder(study, study._storage.get_all_trials(study._study_id, deepcopy=False))
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
            view = self._race.view(study, trials, exclude=trial.number)
        if view is not None:
            note_certificate(study, self, view.engine, trials)
        if view is None or view.busy:
            return
        if not any(t.intermediate_values for t in trials):
            return  # a black-box objective: no race to end (see _race_decide)
        if race_over(view):
            if self._race.all_failed(view, self._search.n_arms or 0):
                self._race.warn_all_failed(study, stacklevel=4)
            stop_study(study)  # every candidate is stopped or at the top: the race is over (as GridSampler)
