"""MFSampler's racing decisions: which arm and fidelity a new trial runs, whether a running trial is stopped or
paused, whether the race is over — the decision core of the Optuna adapter.

:class:`RaceDecisions` rebuilds a study's race from its storage at every decision
(:func:`~mf_sched.integrations._optuna_race.race_view`; a :class:`~mf_sched.integrations._optuna_race.RaceView`: the
engine, the busy runs, per-run counts of ended, paused and failed trials) and decides on it. It reads the storage and
writes nothing to it: MFSampler records the decisions (:mod:`mf_sched.integrations._optuna_claims`,
:mod:`mf_sched.integrations._optuna_evidence`), and MFPruner carries out the stops and pauses. The rules:

* **What to run next** (:meth:`RaceDecisions.next_pull`): the anytime schedule of :mod:`mf_sched.racing.schedule` —
  ASHA's promotions (resumable objectives), then a configuration not started yet, in a seeded random order the same
  in every process (:meth:`RaceDecisions.start_order`), then the survivors in the engine's order. Before the maximum
  resource is known (no trial completed), configurations are started in that order at the top fidelity. When
  nothing can be handed out while other trials run, the trial is surplus; when no run that can still win is below
  the top, the race is over.
* **What to stop** (:meth:`RaceDecisions.prune_verdict`): a trial that has just crossed a rung
  (:func:`crossed_rung`) is pruned when the racing rule stopped its configuration, or *paused* by the anytime
  schedule (:meth:`RaceDecisions.pause_now`, ASHA's cut while configurations wait to start).
* **Failures**: a configuration that failed `max_failures` times is dropped; when every one has (and none ended
  otherwise), the race is over with no answer (:meth:`RaceDecisions.all_failed`).
"""

from __future__ import annotations

import datetime
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState

from mf_sched.ladder import FidelityLadder
from mf_sched.racing.engine import RUNNING
from mf_sched.racing.schedule import next_job

from ._common import RungArgs, warn_no_family
from ._optuna_arms import StudyArms
from ._optuna_claims import CLAIMED, claims_seen
from ._optuna_race import ARM, SURPLUS, RaceView, TrialCache, race_view, trial_rung_values
from ._optuna_space import SearchState
from ._optuna_study import sign_of, study_key

__all__ = ["RaceDecisions", "crossed_rung", "race_over"]


def crossed_rung(t: FrozenTrial, steps: np.ndarray) -> bool:
    """Whether the trial's latest report moved it past a rung step (decisions are taken there only).

    Args:
        t: a trial of the study.
        steps: the rungs' steps as the objective reports them (the resources minus the step offset).

    Returns:
        True when a rung step lies in `(previous reported step, last reported step]`.
    """
    iv = t.intermediate_values
    if not iv:
        return False
    reported = sorted(iv)
    last = reported[-1]
    prev = reported[-2] if len(reported) > 1 else -math.inf
    return bool(np.any((steps > prev) & (steps <= last)))


def race_over(view: RaceView) -> bool:
    """Whether the race is over: no trial is busy, and every run is stopped or at the top.

    Args:
        view: the study's race.

    Returns:
        True when the race is over (the study stops, as GridSampler's does once its grid is done).
    """
    eng = view.engine
    return not view.busy and not ((eng.statuses() == RUNNING) & (eng.reached_all() < view.ladder.top)).any()


class RaceDecisions:
    """MFSampler's race in each study it serves — rebuilt from the storage at every decision (:meth:`view`) — and the
    decisions taken on it (see the module docstring); arms are the engine's first `K` runs, in order. It reads the
    trials and warns (once per study) where the user must act; it writes nothing to the storage.

    Args:
        search: the sampler's search state (its number of arms; whether they are proposed one at a time).
        arms: which configuration each arm is, per study.
        ensure_space: learns the search space from the trials if not known yet; whether it is known (the
            sampler's finite-arms strategy).
        study_ladder: `(ladder, step offset)` of a study given its trials (None while the maximum resource is
            unknown).
        cache_of: the study's parsed finished trials.
        rungs: the sampler's rung arguments (σ, the given bound, η = `reduction_factor`).
        delta: the confidence parameter δ.
        order: the engine's resumption order (:data:`mf_sched.racing.engine.ORDERS`).
        max_failures: failed trials per configuration before it is dropped (≥ 1).
        stale_after: seconds after which a RUNNING trial counts as failed, `"auto"` or None (`MFSampler`).
        schedule: `"anytime"` or `"best-first"` (:data:`mf_sched.racing.schedule.SCHEDULES`).
        candidate_seed: seeds the order in which the candidates of a fixed set are started.
        bound_args: the shipped bound's settings (tolerance, metric family, kind).
    """

    def __init__(
        self,
        search: SearchState,
        arms: StudyArms,
        *,
        ensure_space: Callable[[Sequence[FrozenTrial]], bool],
        study_ladder: Callable[[optuna.Study, Sequence[FrozenTrial]], tuple[FidelityLadder | None, int]],
        cache_of: Callable[[optuna.Study], TrialCache],
        rungs: RungArgs,
        delta: float,
        order: str,
        max_failures: int,
        stale_after: float | str | None,
        schedule: str,
        candidate_seed: int,
        bound_args: Mapping[str, Any],
    ) -> None:
        self.search, self.arms = search, arms
        self._ensure_space, self._study_ladder, self._cache_of = ensure_space, study_ladder, cache_of
        self.rungs, self.delta, self.order, self.max_failures = rungs, delta, order, max_failures
        self.stale_after, self.schedule, self.candidate_seed = stale_after, schedule, candidate_seed
        self.eta = rungs.reduction_factor
        self.bound_args = dict(bound_args)
        self._order_cache: list[int] | None = None
        self._over: set[tuple[int, int]] = set()  # studies whose race is over (decided once, never replayed again)
        self._warned_family: set[tuple[int, int]] = set()
        self._warned_stale: set[int] = set()
        self._warned_failed: set[tuple[int, int]] = set()  # studies in which every configuration failed (warned)
        self._warned_revoked: set[tuple[tuple[int, int], Any]] = set()  # (study, run) pruned under a prior now gone

    def view(self, study: optuna.Study, trials: Sequence[FrozenTrial], exclude: int | None) -> RaceView | None:
        """The race rebuilt from the study's trials (:func:`~mf_sched.integrations._optuna_race.race_view`).

        Warns once per study when the metric fits no family, once per run pruned under a family's bound that no
        longer fits, and once per RUNNING trial taken as failed (`stale_after`).

        Args:
            study: the study.
            trials: its trials.
            exclude: a trial number to leave out (the trial being decided), or None.

        Returns:
            The race; None while the space or the ladder is unknown.
        """
        if not self._ensure_space(trials) or not self.search.known:
            return None
        self.arms.rebuild(study, trials)  # arms proposed one at a time: arm_of reads them
        lad, off = self._study_ladder(study, trials)
        if lad is None:
            return None
        bias = self.rungs.given_bias(lad.M)
        cache = self._cache_of(study)
        view = race_view(
            trials, ladder=lad, offset=off, sign=sign_of(study), delta=self.delta, sigma=self.rungs.sigma,
            race_bias=bias, n_arms=self.search.n_arms, arm_of=self.arms.arm_of, exclude=exclude,
            max_failures=self.max_failures, refine=bias is None, order=self.order, cache=cache,
            stale_after=self._stale_seconds(cache), now=datetime.datetime.now(),
            bound_args={**self.bound_args, "fit": self.rungs.fit},
        )  # fmt: skip
        warn_no_family(view, study, self._warned_family, "MFSampler")
        for key in view.revoked:
            if (study_key(study), key) not in self._warned_revoked:
                self._warned_revoked.add((study_key(study), key))
                warnings.warn(
                    f"configuration {self.arms.params_of(key, trials)} was pruned under the shipped bound of another "
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

    def decide(self, study: optuna.Study, trial: FrozenTrial) -> tuple[int | None, int, set[Any], str]:
        """What a new trial runs, decided on the study's trials as they are now.

        Args:
            study: the study.
            trial: the new trial.

        Returns:
            `(arm, fidelity, claims seen, kind)`: the claims this decision saw
                (:func:`~mf_sched.integrations._optuna_claims.claims_seen`), and kind `"pull"`, `"surplus"`, `"done"`,
                `"explore"` (see :meth:`next_pull`) or `"discovery"` (the space is unknown: `arm` is the discovery arm
                should the arms be proposed one at a time, else None: the fallback samples the first trial).
        """
        if study_key(study) in self._over:  # the race is over: no replay (the study is being stopped)
            return None, -1, set(), "done"
        trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
        seen = claims_seen(trials, trial.number, CLAIMED)
        if not self._ensure_space(trials) or not self.search.known:
            lad, _ = self._study_ladder(study, trials)
            return self.arms.discovery_arm(trial, trials), -1 if lad is None else lad.top, seen, "discovery"
        view = self.view(study, trials, exclude=trial.number)
        arm, fid, kind, all_failed = self.next_pull(view, trials, exclude=trial.number)
        if kind == "done":
            self._over.add(study_key(study))
        if all_failed:
            self.warn_all_failed(study, stacklevel=7)  # MFSampler.before_trial
        return arm, fid, seen, kind

    def warn_all_failed(self, study: optuna.Study, stacklevel: int) -> None:
        """Warn once per study that every configuration failed `max_failures` times (the study stops, no answer).

        Args:
            study: the study.
            stacklevel: passed to :func:`warnings.warn`.
        """
        key = study_key(study)
        if key in self._warned_failed:
            return
        self._warned_failed.add(key)
        warnings.warn(
            f"MFSampler: every configuration failed {self.max_failures} times (max_failures): the race cannot go on "
            "and the study stops with no answer; see why in the FAIL trials (study.trials, Optuna's log)",
            stacklevel=stacklevel,
        )

    def next_pull(
        self, view: RaceView | None, trials: Sequence[FrozenTrial], exclude: int
    ) -> tuple[int | None, int, str, bool]:
        """What a new trial runs.

        Args:
            view: the study's race without the new trial; None while the maximum resource is unknown (no trial has
                completed): candidates are then started in the seeded order, at the top.
            trials: the study's trials.
            exclude: the new trial's number.

        Returns:
            `(arm, fidelity, kind, all failed)`. `kind`: `"pull"` (train `arm` to rung `fidelity`; `-1`: the top,
                not known yet), `"surplus"` (nothing to hand out while other trials run), `"done"` (the race is over:
                the study stops) or `"explore"` (a black-box objective evaluated every candidate: the fallback goes on).
                `all failed`: every configuration failed `max_failures` times (then `kind` is `"done"`).
        """
        K = self.search.n_arms
        assert K is not None
        if view is None:  # the maximum resource is unknown: start candidates in the seeded order, at the top
            avail, busy, all_failed = self.unraced(trials, K, exclude=exclude)
            if avail:
                return avail[0], -1, "pull", False
            if busy:
                return None, -1, "surplus", False
            if not all_failed and not any(t.intermediate_values for t in trials):
                return None, -1, "explore", False  # a black-box objective evaluated every candidate (see below)
            # nothing completed, nothing left to start or running: the race cannot start (issue 24: every
            # configuration failed, and the study used to go on with surplus trials for ever)
            return None, -1, "done", all_failed
        eng, top = view.engine, view.ladder.top
        job = next_job(
            eng, eta=self.eta, fresh=self.fresh(view, K), busy=self.unschedulable(view, K), schedule=self.schedule,
            promote=view.resumable,
        )  # fmt: skip
        if job is not None:
            _, a, rung = job
            return int(a), (rung if view.resumable else top), "pull", False  # type: ignore[arg-type]
        codes, reached = eng.statuses(), eng.reached_all()  # arms are the engine's first K runs, in order
        live = (codes[:K] == RUNNING) & (reached[:K] < top)
        if not live.any() and not view.busy:
            # a black-box objective (no trial.report) has no race: once every candidate is evaluated the fallback
            # explores, as keep_sampling=True; a multi-fidelity study is over and stops, and so does one in which
            # every configuration failed max_failures times (nothing ended)
            all_failed = self.all_failed(view, K)
            multi = any(t.intermediate_values for t in trials) or all_failed
            return None, top, "done" if multi else "explore", all_failed
        return None, top, "surplus", False

    def start_order(self, K: int) -> list[int]:
        """The order in which candidates are started: a permutation seeded by `candidate_seed` (the same in every
        process), never the order in which the choices were written; arms proposed one at a time are started in
        their own order (arm `k` is the `k`-th configuration proposed).

        Args:
            K: the number of arms.

        Returns:
            The arm indices in start order.
        """
        if self.search.lazy:
            return list(range(K))
        if self._order_cache is None or len(self._order_cache) != K:
            self._order_cache = np.random.default_rng([self.candidate_seed, K]).permutation(K).tolist()
        return self._order_cache

    def fresh(self, view: RaceView, K: int) -> list[int]:
        """Candidates with no trial yet that produced a value, ended or paused, in the start order.

        Args:
            view: the study's race.
            K: the number of arms.

        Returns:
            The arm indices, in :meth:`start_order`.
        """
        reached = view.engine.reached_all()[:K]
        untouched = (reached < 0) & (view.ended_count[:K] == 0) & (view.paused_count[:K] == 0)
        codes = view.engine.statuses()[:K]
        return [a for a in self.start_order(K) if untouched[a] and codes[a] == RUNNING]

    @staticmethod
    def unschedulable(view: RaceView, K: int) -> set[Any]:
        """Runs the sampler does not hand out: busy ones, and runs outside the candidates (an enqueued or fallback
        trial's parameters: evidence for the race, never resumed).

        Args:
            view: the study's race.
            K: the number of arms.

        Returns:
            The runs' keys.
        """
        return set(view.busy) | set(view.keys[K:])

    def unraced(self, trials: Sequence[FrozenTrial], K: int, exclude: int | None) -> tuple[list[int], bool, bool]:
        """The candidates before the maximum resource is known (no trial has completed).

        Args:
            trials: the study's trials.
            K: the number of arms.
            exclude: a trial number to leave out (the trial being decided), or None.

        Returns:
            `(candidates to start, any busy, all failed)`: the candidates neither running (nor queued as a retry),
                ended nor failed `max_failures` times, never-failed ones first (in start order), then by their failures;
                whether a candidate is busy; and whether every candidate has failed `max_failures` times.
        """
        busy, ended, failed = np.zeros(K, dtype=bool), np.zeros(K, dtype=bool), np.zeros(K, dtype=np.int64)
        for t in trials:
            if t.number == exclude or t.system_attrs.get(SURPLUS):
                continue
            a = self.arms.arm_of(t)
            if a is None:
                continue
            if t.state == TrialState.RUNNING or (t.state == TrialState.WAITING and t.system_attrs.get(ARM) is not None):
                busy[a] = True
            elif t.state == TrialState.FAIL:
                failed[a] += 1
            elif t.state != TrialState.WAITING:
                ended[a] = True
        ok = ~busy & ~ended & (failed < self.max_failures)
        avail = sorted((a for a in self.start_order(K) if ok[a]), key=lambda a: failed[a])
        return avail, bool(busy.any()), bool(K and (failed >= self.max_failures).all())

    def all_failed(self, view: RaceView, K: int) -> bool:
        """Whether every candidate failed `max_failures` times and none ended otherwise (completed, paused or
        stopped).

        Args:
            view: the study's race.
            K: the number of arms.

        Returns:
            True when the race cannot go on (no answer).
        """
        ended = view.ended_count[:K] + view.paused_count[:K]
        return bool(K) and not ended.any() and bool((view.failed_count[:K] >= self.max_failures).all())

    def prune_verdict(
        self, view: RaceView, trial: FrozenTrial, key: Any, trials: Sequence[FrozenTrial] | None = None
    ) -> str | None:
        """What happens to a running trial that has just crossed a rung (:func:`crossed_rung`).

        Args:
            view: the study's race.
            trial: the trial.
            key: its run in the engine (its arm, or `"trial-<n>"`).
            trials: the study's trials (for the epoch bound of :meth:`pause_now`; None: read from nothing, no pause).

        Returns:
            `"stop"` (the racing rule stopped its configuration), `"pause"` (:meth:`pause_now`) or None (it goes on).
        """
        if key not in view.engine:
            return None
        if view.engine.status(key) == "stopped":
            return "stop"
        return "pause" if trials is not None and self.pause_now(view, trial, key, trials) else None

    @staticmethod
    def stopped_since(view: RaceView, trial: FrozenTrial, key: Any) -> bool:
        """Whether the rule has stopped the configuration of a running trial that is between two rungs.

        Decisions are taken where a trial crosses a rung (:func:`crossed_rung`), but evidence also arrives between
        them: with several workers, a configuration that crossed a rung while the others were still low (nothing
        to stop it yet) is often stopped there by the rule once another trial reaches the top. It is pruned at its
        next report instead of training on to its next rung (with 4 threads on the README's objective, a third of
        the epochs `n_jobs=4` spent beyond `n_jobs=1`: configurations stopped at rung 9 instead of rung 3).

        Args:
            view: the study's race.
            trial: the running trial that has just reported.
            key: its run in the engine.

        Returns:
            True when the trial has reached a rung and its configuration's status is stopped.
        """
        iv = trial.intermediate_values
        if not iv or max(iv) < view.steps[0] or key not in view.engine:
            return False
        return view.engine.status(key) == "stopped"

    def pause_now(self, view: RaceView, trial: FrozenTrial, key: Any, trials: Sequence[FrozenTrial]) -> bool:
        """The anytime schedule for an ordinary objective (each trial trains from scratch): while configurations
        wait to be started, a trial that has just brought its configuration to a new rung goes on only if it is
        among the best `max(1, ⌊n/η⌋)` there (ASHA), else it is pruned to free the worker — *paused*: the race
        may run its configuration again later. Once every configuration has started nothing is paused (a re-run
        would train from scratch again). Resumable objectives end each trial at its rung anyway.

        **Never more than training each candidate once.** A paused configuration that the race later re-runs
        trains its first epochs twice; when the rule cannot tell the configurations apart (close curves) every
        paused one is re-run to the top, and the study used to spend more than `K × R` epochs (8 × 27: 219–222
        instead of at most 216). So a trial is paused only if the study's *worst case* stays within `K × R`
        (:meth:`worst_case_epochs`): the epochs spent so far, plus the epochs every configuration the rule has not
        stopped may still need — the rest of a running trial, `R` for one waiting or paused (a re-run trains from
        scratch) — plus the `r` epochs the pause throws away. Training, starting, completing and re-running keep
        that sum; a stop lowers it (by what the stopped configuration will not train); only a pause raises it. So
        the first pauses wait for the first stops, whose savings pay for them, and with one worker an ordinary
        objective never trains more than `K × R` epochs (unless the rule revives a stopped configuration, or a
        trial fails). Otherwise the trial goes on: finishing it costs less than pausing it now and running it
        again. Where nothing is stopped (nothing can be told apart) the schedule is best-first — the
        configurations are trained to the top one at a time, each once — and the answer and certificate are the
        rule's, as before.

        Args:
            view: the study's race.
            trial: the trial that has just reported.
            key: its run in the engine.
            trials: the study's trials.

        Returns:
            True when the trial is to be paused.
        """
        if self.schedule != "anytime" or view.resumable or not isinstance(key, int):
            return False
        K = self.search.n_arms or 0
        if not self.fresh(view, K):
            return False
        eng = view.engine
        rung = eng.reached(key)
        own = trial_rung_values(trial, view.steps)
        earlier = [m for m in range(rung + 1) if not np.isnan(own[m])]
        if not earlier or max(earlier) < rung or rung >= view.ladder.top:
            return False  # this trial has not brought the configuration to its highest rung (a re-run below it)
        if key in eng.promotable(self.eta):
            return False
        K_R = K * float(view.ladder.resources[-1])
        return self.worst_case_epochs(view, trials, pausing=trial) <= K_R + 1e-9

    def worst_case_epochs(
        self, view: RaceView, trials: Sequence[FrozenTrial], pausing: FrozenTrial | None = None
    ) -> float:
        """The most epochs the study can spend in all if no configuration the rule has not stopped is stopped
        from now on, and each is trained to the top (an ordinary objective: a re-run trains from scratch).

        Args:
            view: the study's race.
            trials: the study's trials.
            pausing: a running trial about to be paused (its configuration then needs a re-run from scratch).

        Returns:
            The epochs spent so far (every trial, surplus and failed ones included) plus, per candidate, the epochs
                it may still need: none once stopped by the rule (up to its next rung if a trial of it is still
                running) or at the top; the rest of its most advanced running trial; else the top resource `R`.
        """
        K = self.search.n_arms or 0
        steps = view.steps
        R, top_step = float(view.ladder.resources[-1]), float(steps[-1])
        spent = 0.0
        running: dict[int, float] = {}
        for t in trials:
            if pausing is not None and t.number == pausing.number:
                t = pausing
            if t.last_step is None:
                continue
            spent += float(t.last_step) + view.offset
            if t.state == TrialState.RUNNING and (pausing is None or t.number != pausing.number):
                a = self.arms.arm_of(t)
                if a is not None and 0 <= a < K:
                    running[a] = max(running.get(a, 0.0), float(t.last_step))
        eng, top = view.engine, view.ladder.top
        codes, reached = eng.statuses(), eng.reached_all()
        n_runs = len(codes)
        need = 0.0
        for a in range(K):
            at = running.get(a)
            live = a >= n_runs or (codes[a] == RUNNING and reached[a] < top)
            if live:
                need += top_step - at if at is not None else R
            elif at is not None:  # stopped while a trial of it runs: pruned at its next report (stopped_since); counted
                # up to its next rung, an upper bound
                later = steps[steps > at]
                need += float(later[0]) - at if len(later) else 0.0
        return spent + need
