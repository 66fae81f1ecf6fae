"""Optuna adapters: :class:`MFSampler` (a policy chooses configuration *and* fidelity) and :class:`MFPruner`.

Install with ``pip install "mf-sched[optuna]"``. Facts about Optuna 5 that shaped this module (and the
private APIs it must use) are in the project's ``notes/optuna-facts.md``; the private calls are
``study._storage.get_all_trials``, ``study._storage.set_trial_system_attr`` and
``study._storage.get_trial_system_attrs``: Optuna 5 removed the public ``set_system_attr`` and offers no
other way for a sampler to annotate a trial or read a running trial's annotations.

How a study runs with :class:`MFSampler`
-----------------------------------------
* **Continuous spaces with MF-GP-UCB**: ``policy="mf-gp-ucb"`` (or ``"gp-ucb"``, with ``policy_kwargs={"budget":
  Λ}``) chooses a point and a fidelity per trial (stored as ``mf:params``); the replay re-asks the policy
  and matches each trial against its proposal (adopting points placed by others or enqueued).
* **Arms** are configurations: the ``search_space`` you give (``{"lr": [0.1, 0.01], ...}`` or Optuna
  distributions), or the distributions of the study's first trial. A finite space with at most
  ``max_grid`` points is enumerated; otherwise ``n_candidates`` points are drawn by a scrambled Sobol
  sequence seeded with ``candidate_seed`` (the same set in every process). A trial that suggests a
  parameter outside the space, or with another distribution, is rejected with a ValueError (dynamic and
  conditional spaces are not supported by arm-based policies). With an explicit ``search_space`` such a trial
  fails with a ValueError; with an inferred one, the sampler warns and hands the study to ``fallback`` at the
  top fidelity (use a non-arm sampler with :class:`MFPruner` for such spaces).
* **Fidelity**: in ``before_trial`` the policy picks (arm, fidelity) and the sampler stores them on the
  trial (system attributes ``mf:arm``, ``mf:fidelity``). The objective asks :func:`budget` for its
  resource (e.g. epochs) and ends with ``return finish(trial, value)``.
* **best_trial stays safe**: :func:`finish` ends a trial below the top fidelity as PRUNED (its value is
  kept as the intermediate value at its resource and as ``mf:result``), so only top-fidelity trials are
  COMPLETE and ``study.best_trial`` is never a low-fidelity evaluation. The policy's own answer, with its
  certificate, is :meth:`MFSampler.recommendation`.
* **State** is a pure function of the storage: every decision replays the study's trials in ``number``
  order into a fresh policy (finished trials are adopted and told, RUNNING ones are outstanding pulls,
  FAIL/crashed ones give their pull back). N processes on one SQLite/PostgreSQL/journal storage therefore
  share one policy; two processes may still pick the same pull at the same instant (the race of every
  Optuna sampler), and the duplicate is then an extra observation. A lock serialises decisions of threads
  (``n_jobs > 1``).
* **Enqueued and retried trials** keep their parameters: a retried trial (``RetryFailedTrialCallback``)
  inherits its failed trial's arm and fidelity; an enqueued trial runs at the top fidelity and counts for
  its arm when its parameters are a candidate.
* **Waiting and done**: when the policy waits for running trials (a round barrier) a new trial repeats a
  running pull (an extra replica the policy can use, marked ``mf:replica``); when the policy is done, the
  recommended arm is evaluated once at the top fidelity (if it was not yet), then trials go to ``fallback`` (default
  :class:`optuna.samplers.RandomSampler`) at the top fidelity. The sampler never calls ``study.stop()``
  and never stalls.
* Trials without ``mf:arm`` (before the space is known, or in Optuna's sampler test-suites, which never
  call ``before_trial``) are sampled by ``fallback``.

:class:`MFPruner` applies :class:`~mf_sched.rungs.RungEliminator` (IISE's ζ-aware rule, one value per rung)
to the ``trial.report(value, step)`` loop of any sampler: at each rung resource it prunes a trial only
when some trial's lower bound beats the trial's upper bound by ``2ζ(m)``. With MFSampler, a trial pruned
below its fidelity counts for the sampler's policy as an evaluation at its fidelity with its last reported
value (pessimistic for metrics that improve with training, and consistent with the pruner's verdict that
it cannot be the best).
"""

from __future__ import annotations

import itertools
import math
import threading
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.samplers import BaseSampler, RandomSampler
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from mf_sched.ladder import FidelityLadder
from mf_sched.policy import Policy
from mf_sched.registry import build_policy, get_policy
from mf_sched.rungs import RungEliminator

__all__ = [
    "MFSampler",
    "MFPruner",
    "MFRecommendation",
    "budget",
    "fidelity",
    "finish",
    "curves_from_study",
]

ARM, FIDELITY, RESULT, PRUNED_RUNG, REPLICA = "mf:arm", "mf:fidelity", "mf:result", "mf:pruned_rung", "mf:replica"
PARAMS = "mf:params"  # MF-GP-UCB: the point chosen for the trial
_GP_POLICIES = ("mf-gp-ucb", "gp-ucb")


def _point(policy: Any, pull: Any) -> dict[str, Any]:
    return {k: _to_python(v) for k, v in policy.point(pull).items()}


def _to_space(space: Mapping[str, BaseDistribution]) -> Any:
    """Optuna distributions as an :class:`mf_sched.space.SearchSpace` (stepped floats become their grid)."""
    from mf_sched.space import Categorical, Float, Int, SearchSpace

    dims = []
    for name in sorted(space):
        d = space[name]
        if isinstance(d, CategoricalDistribution):
            dims.append(Categorical(name, list(d.choices)))
        elif isinstance(d, IntDistribution):
            if d.step != 1:
                dims.append(Categorical(name, list(range(d.low, d.high + 1, d.step))))
            else:
                dims.append(Int(name, d.low, d.high, log=d.log))
        elif isinstance(d, FloatDistribution) and d.step is not None:
            dims.append(Categorical(name, _grid(d, 10**6)))
        elif isinstance(d, FloatDistribution):
            dims.append(Float(name, d.low, d.high, log=d.log))
        else:  # pragma: no cover - Optuna has no other distribution types
            raise ValueError(f"unsupported distribution {d!r} for {name!r}")
    return SearchSpace(dims)


# ----------------------------------------------------------------------------------------- helpers
def _resolve_ladder(ladder: FidelityLadder | None, calibration: Any, who: str) -> FidelityLadder:
    if (ladder is None) == (calibration is None):
        raise ValueError(
            f"{who} needs exactly one of ladder= (a FidelityLadder with resources, e.g. epochs) or calibration= "
            "(an mf_sched.calibration.Calibration)"
        )
    lad = ladder if ladder is not None else calibration.ladder()
    if not isinstance(lad, FidelityLadder):
        raise TypeError(f"ladder must be a FidelityLadder, got {type(lad).__name__}")
    if lad.resources is None:
        raise ValueError(f"{who}: the ladder needs resources (the step/epoch of each fidelity, e.g. [1, 3, 9, 27])")
    bad = [r for r in lad.resources if r != int(r)]
    if bad:
        raise ValueError(f"{who}: ladder resources must be whole steps (Optuna reports integer steps), got {bad}")
    return lad


def _check_sigma(sigma: Any, calibration: Any, M: int) -> Any:
    if sigma is None and calibration is not None:
        s = np.asarray(calibration.sigma, dtype=float)
        if s.size == M and np.isfinite(s).all():
            return s
        raise ValueError("the calibration has no seed-to-seed σ (one seed per configuration): pass sigma=")
    if sigma is None:
        return 0.05
    s = np.asarray(sigma, dtype=float)
    if not (np.isfinite(s).all() and (s > 0).all()):
        raise ValueError(f"sigma = {sigma!r} is out of range; accepted: finite numbers > 0 (one, or one per fidelity)")
    return s if s.ndim else float(s)


def _storage_attrs(trial: optuna.trial.Trial) -> dict[str, Any]:
    return trial.study._storage.get_trial_system_attrs(trial._trial_id)


def _sampler_or_pruner(trial: optuna.trial.Trial) -> tuple[FidelityLadder, bool]:
    s = trial.study.sampler
    if isinstance(s, MFSampler):
        return s.ladder, True
    p = trial.study.pruner
    if isinstance(p, MFPruner):
        return p.ladder, False
    raise ValueError("budget()/fidelity()/finish() need a study whose sampler is an MFSampler or pruner an MFPruner")


def fidelity(trial: optuna.trial.Trial) -> int:
    """The fidelity (0-based ladder index) this trial runs at: the MFSampler's choice, else the top one."""
    ladder, is_sampler = _sampler_or_pruner(trial)
    m = _storage_attrs(trial).get(FIDELITY) if is_sampler else None
    return ladder.top if m is None else int(m)


def budget(trial: optuna.trial.Trial) -> int:
    """The resource (e.g. number of epochs) this trial should train for: ``ladder.resources[fidelity]``."""
    ladder, _ = _sampler_or_pruner(trial)
    return int(ladder.resources[fidelity(trial)])


def finish(trial: optuna.trial.Trial, value: float) -> float:
    """End the objective: ``return finish(trial, value)``.

    Records ``value`` as the trial's result at its fidelity. Below the top fidelity the trial then ends
    PRUNED (raises :class:`optuna.TrialPruned`; Optuna stores ``value`` as its final value), so that a
    low-fidelity evaluation never becomes ``study.best_trial``; at the top fidelity ``value`` is returned
    and the trial completes normally.
    """
    v = float(value)
    ladder, _ = _sampler_or_pruner(trial)
    m = fidelity(trial)
    step = int(ladder.resources[m])
    trial.study._storage.set_trial_system_attr(trial._trial_id, RESULT, v if math.isfinite(v) else None)
    if m < ladder.top:
        if step not in trial.study._storage.get_trial(trial._trial_id).intermediate_values:
            trial.report(v, step)
        raise optuna.TrialPruned(f"fidelity {m} of {ladder.top}: recorded for the policy, not a final result")
    return v


# ----------------------------------------------------------------------------------------- the arms
def _grid(dist: BaseDistribution, max_points: int) -> list[Any] | None:
    if isinstance(dist, CategoricalDistribution):
        return list(dist.choices)
    if isinstance(dist, IntDistribution):
        n = (dist.high - dist.low) // dist.step + 1
        return list(range(dist.low, dist.high + 1, dist.step)) if n <= max_points and not dist.log else None
    if isinstance(dist, FloatDistribution) and dist.step is not None:
        n = int(round((dist.high - dist.low) / dist.step)) + 1
        return [float(dist.low + i * dist.step) for i in range(n)] if n <= max_points else None
    return None


def _from_unit(dist: BaseDistribution, u: float) -> Any:
    if isinstance(dist, CategoricalDistribution):
        return dist.choices[min(int(u * len(dist.choices)), len(dist.choices) - 1)]
    lo, hi = float(dist.low), float(dist.high)
    x = math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo))) if dist.log else lo + u * (hi - lo)
    if isinstance(dist, IntDistribution):
        k = int(round((x - dist.low) / dist.step))
        return int(min(dist.high, dist.low + k * dist.step))
    if dist.step is not None:
        k = int(round((x - lo) / dist.step))
        return float(min(hi, lo + k * dist.step))
    return float(min(hi, max(lo, x)))


def _to_python(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v


def _as_distributions(space: Mapping[str, Any]) -> dict[str, BaseDistribution]:
    out: dict[str, BaseDistribution] = {}
    for name, d in space.items():
        if isinstance(d, BaseDistribution):
            out[name] = d
        elif isinstance(d, (list, tuple)) and len(d) > 0:
            out[name] = CategoricalDistribution([_to_python(x) for x in d])
        else:
            raise ValueError(
                f"search_space[{name!r}] = {d!r} is not accepted; accepted: a non-empty list of values or an "
                "optuna distribution"
            )
    if not out:
        raise ValueError("search_space is empty; accepted: a mapping name -> values or distribution")
    return out


def candidate_set(
    space: Mapping[str, BaseDistribution], *, max_grid: int = 1000, n_candidates: int = 64, seed: int = 0
) -> list[dict[str, Any]]:
    """The arms of a search space: its full grid when finite with ``≤ max_grid`` points, else ``n_candidates``
    scrambled-Sobol points (deterministic in ``seed``; discrete dimensions are snapped)."""
    names = sorted(space)
    grids = [_grid(space[n], max_grid) for n in names]
    if all(g is not None for g in grids) and math.prod(len(g) for g in grids) <= max_grid:
        return [dict(zip(names, combo)) for combo in itertools.product(*grids)]
    from scipy.stats import qmc

    u = qmc.Sobol(d=len(names), scramble=True, seed=seed).random(n_candidates)
    out, seen = [], set()
    for row in u:
        c = {n: _from_unit(space[n], float(x)) for n, x in zip(names, row)}
        key = tuple(repr(c[n]) for n in names)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


# ----------------------------------------------------------------------------------------- recommendation
@dataclass(frozen=True)
class MFRecommendation:
    """The policy's answer for a study, with its certificate.

    Attributes:
        params: the recommended configuration (None while there is no answer).
        arm: its index in :attr:`MFSampler.candidates`.
        certified: True when the policy's stopping rule fired (best with probability ≥ 1 − δ).
        reason: the policy's state (``"identified"``, ``"finished"``, ``"in-progress"``, ``"budget"``).
        delta: the confidence parameter; cost: Σ λ(fidelity) over the evaluations told to the policy;
        full_fidelity_cost: what evaluating every candidate once at the top fidelity would cost;
        resources_spent: Σ over trials of the last step they reported (e.g. epochs actually trained, pruned
        runs included); full_fidelity_resources: candidates × the top resource;
        done: whether the policy has finished; details: the policy's extras (e.g. ε for ``iise-rungs``).
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
    details: Mapping[str, Any] = field(default_factory=dict)


# ----------------------------------------------------------------------------------------- the sampler
class MFSampler(BaseSampler):
    """A registered mf-sched policy as an Optuna sampler: it picks the configuration and the fidelity.

    Args:
        ladder: the fidelity ladder with ``resources`` (steps/epochs per fidelity) and ζ; or
        calibration: a :class:`mf_sched.calibration.Calibration` (ladder, and σ if it has one).
        policy: a registered finite-armed policy name (``mf-sched policies``). Default ``"iise-rungs"``:
            one evaluation per surviving configuration and rung, ζ-aware eliminations with a δ guarantee,
            cost at most (number of candidates) × λ(M) — the budget of a successive-halving bracket, without
            its unguarded cuts. ``"iise"`` repeats evaluations (seeds) until the best is identified exactly.
        policy_kwargs: extra constructor arguments of the policy.
        search_space: ``{name: list of values or distribution}``; default: the first trial's distributions.
        delta: confidence δ. sigma: seed-to-seed σ of the objective (default 0.05, conservative for an
            accuracy in [0, 1]; from ``calibration`` when it has one).
        max_grid, n_candidates, candidate_seed: see :func:`candidate_set`.
        fallback: sampler for trials the policy does not place (default RandomSampler(seed)).
        seed: seeds the policy (give every process the same seed) and the default fallback.
    """

    def __init__(
        self,
        ladder: FidelityLadder | None = None,
        *,
        calibration: Any = None,
        policy: str = "iise-rungs",
        policy_kwargs: Mapping[str, Any] | None = None,
        search_space: Mapping[str, Any] | None = None,
        delta: float = 0.05,
        sigma: float | Sequence[float] | None = None,
        max_grid: int = 1000,
        n_candidates: int = 64,
        candidate_seed: int = 0,
        fallback: BaseSampler | None = None,
        seed: int | None = None,
    ) -> None:
        self.ladder = _resolve_ladder(ladder, calibration, "MFSampler")
        cls = get_policy(policy)
        self._gp = policy in _GP_POLICIES
        if self._gp and not (policy_kwargs or {}).get("budget"):
            raise ValueError(
                f"policy = {policy!r} needs policy_kwargs={{'budget': Λ}}: its capital, in the ladder's cost units"
            )
        if not self._gp and (not cls.finite_armed or cls.objective not in ("best-arm", "fixed-budget")):
            raise ValueError(
                f"policy = {policy!r} is not a finite-armed best-arm policy; accepted: e.g. 'iise-rungs', 'iise', "
                "'iise-gamma', 'se', 'sh', 'hyperband', 'mf-grad', or 'mf-gp-ucb' / 'gp-ucb' for continuous spaces"
            )
        self.policy_name = policy
        self.policy_kwargs = dict(policy_kwargs or {})
        if not 0 < delta < 1:
            raise ValueError(f"delta = {delta} is out of range; accepted: 0 < delta < 1")
        self.delta = float(delta)
        s = _check_sigma(sigma, calibration, self.ladder.M)
        self.sigma = float(np.max(s))  # policies take one σ; the largest is the safe choice
        for name, v in (("max_grid", max_grid), ("n_candidates", n_candidates)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} = {v!r} is out of range; accepted: an integer >= 1")
        self.max_grid, self.n_candidates, self.candidate_seed = max_grid, n_candidates, int(candidate_seed)
        self._space = _as_distributions(search_space) if search_space is not None else None
        self._explicit_space = search_space is not None
        self._dynamic = False  # an inferred space turned out conditional/dynamic: the fallback takes over
        self._candidates: list[dict[str, Any]] | None = None
        if self._space is not None and not self._gp:
            self._candidates = candidate_set(
                self._space, max_grid=max_grid, n_candidates=n_candidates, seed=self.candidate_seed
            )
        self.seed = seed
        self._fallback = fallback if fallback is not None else RandomSampler(seed=seed)
        self._lock = threading.RLock()
        if not self._gp:  # a policy probe: fails early on bad policy_kwargs
            self._probe = self._new_policy(2)

    # ------------------------------------------------------------------ policy and replay
    @property
    def candidates(self) -> list[dict[str, Any]] | None:
        """The arms (configurations), once the search space is known."""
        return None if self._candidates is None else [dict(c) for c in self._candidates]

    def _new_policy(self, n_arms: int) -> Policy:
        if self._gp:
            from mf_sched.policies.mf_gp_ucb import MFGPUCB  # needs the gp extra (scikit-learn)

            cls = get_policy(self.policy_name)
            assert issubclass(cls, MFGPUCB)
            return cls(
                _to_space(self._space),
                self.ladder,
                noise={"kind": "subgaussian", "sigma": self.sigma},
                seed=0 if self.seed is None else self.seed,
                **self.policy_kwargs,
            )
        problem = {
            "n_arms": n_arms,
            "ladder": self.ladder,
            "delta": self.delta,
            "noise": {"kind": "subgaussian", "sigma": self.sigma},
            "seed": 0 if self.seed is None else self.seed,
        }
        return build_policy(self.policy_name, problem, **self.policy_kwargs)

    def _ensure_space(self, trials: Sequence[FrozenTrial]) -> bool:
        if self._gp:
            if self._space is None:
                for t in trials:
                    if t.distributions:
                        self._space = dict(t.distributions)
                        break
            return self._space is not None
        if self._candidates is not None:
            return True
        for t in trials:
            if t.distributions:
                self._space = dict(t.distributions)
                self._candidates = candidate_set(
                    self._space, max_grid=self.max_grid, n_candidates=self.n_candidates, seed=self.candidate_seed
                )
                return True
        return False

    def _arm_of_params(self, params: Mapping[str, Any]) -> int | None:
        if self._candidates is None:
            return None
        for i, c in enumerate(self._candidates):
            if c == dict(params):
                return i
        return None

    def _sign(self, study: optuna.Study) -> float:
        return 1.0 if study.direction == StudyDirection.MAXIMIZE else -1.0

    def _result(self, t: FrozenTrial) -> float | None:
        attrs = t.system_attrs
        v = attrs.get(RESULT)
        if v is None and t.state == TrialState.COMPLETE and t.value is not None:
            v = t.value
        if v is None and t.state == TrialState.PRUNED and t.intermediate_values:
            v = t.intermediate_values[max(t.intermediate_values)]
        if v is None or not math.isfinite(float(v)):
            return None
        return float(v)

    def replay(self, study: optuna.Study) -> tuple[Policy | None, list[FrozenTrial], dict[int, Any]]:
        """Rebuild the policy from the study's storage (see the module docstring). Returns the policy (None
        while the search space is unknown), the trials, and the outstanding pull of each RUNNING trial."""
        trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
        if not self._ensure_space(trials):
            return None, list(trials), {}
        policy = self._new_policy(0 if self._gp else len(self._candidates))
        sign = self._sign(study)
        running: dict[int, Any] = {}
        for t in sorted(trials, key=lambda x: x.number):
            attrs = t.system_attrs
            if self._gp:
                fid, params = attrs.get(FIDELITY), attrs.get(PARAMS) or t.params
                if fid is None or not params or set(params) != set(self._space):
                    continue
                v = self._result(t) if t.state in (TrialState.COMPLETE, TrialState.PRUNED) else None
                if t.state != TrialState.RUNNING and v is None:
                    continue  # failed: its pull is given back (never re-told)
                # the policy's own sequence: re-ask; the trial's point is the policy's next proposal unless
                # another process or the user placed it (then it is adopted)
                pull = policy.ask() if PARAMS in attrs else None
                if pull is not None and (pull.fidelity != int(fid) or _point(policy, pull) != params):
                    policy.give_back(pull)
                    pull = None
                if pull is None:
                    pull = policy.adopt_point(params, int(fid))
                if t.state == TrialState.RUNNING:
                    running[t.number] = pull
                else:
                    policy.tell(pull, sign * v)
                continue
            arm, fid = attrs.get(ARM), attrs.get(FIDELITY)
            if arm is None and t.state in (TrialState.COMPLETE, TrialState.PRUNED) and t.params:
                arm = self._arm_of_params(t.params)
                fid = self.ladder.top if fid is None else fid
            if arm is None or fid is None or not 0 <= int(arm) < policy.n_arms:
                continue
            arm, fid = int(arm), int(fid)
            if t.state == TrialState.RUNNING:
                running[t.number] = policy.adopt(arm, fid)
            elif t.state in (TrialState.COMPLETE, TrialState.PRUNED):
                v = self._result(t)
                if v is not None:
                    policy.tell(policy.adopt(arm, fid), sign * v)
        return policy, list(trials), running

    def recommendation(self, study: optuna.Study) -> MFRecommendation:
        """The policy's recommended configuration for ``study``, with its certificate."""
        with self._lock:
            policy, trials, _ = self.replay(study)
        if policy is None:
            spent = float(sum(t.last_step or 0 for t in trials))
            return MFRecommendation(
                None, None, False, "in-progress", self.delta, 0.0, 0.0, spent, 0.0, False, len(trials)
            )
        rec = policy.recommendation()
        if self._gp:
            params = rec.details.get("params")
        else:
            params = None if rec.arm is None else dict(self._candidates[rec.arm])
        n_cand = len(self._candidates) if self._candidates is not None else 0
        return MFRecommendation(
            params=params,
            arm=rec.arm,
            certified=rec.certified,
            reason=rec.reason,
            delta=rec.delta,
            cost=policy.cost,
            full_fidelity_cost=n_cand * self.ladder.costs[-1],
            resources_spent=float(sum(t.last_step or 0 for t in trials)),
            full_fidelity_resources=n_cand * float(self.ladder.resources[-1]),
            done=policy.done,
            n_trials=len(trials),
            details=dict(rec.details),
        )

    # ------------------------------------------------------------------ Optuna hooks
    def reseed_rng(self) -> None:
        self._fallback.reseed_rng()

    def infer_relative_search_space(self, study: optuna.Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return {}

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        self._raise_error_if_multi_objective(study)
        return {}

    def _set(self, study: optuna.Study, trial: FrozenTrial, arm: int | None, fid: int) -> None:
        study._storage.set_trial_system_attr(trial._trial_id, ARM, None if arm is None else int(arm))
        study._storage.set_trial_system_attr(trial._trial_id, FIDELITY, int(fid))

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        self._fallback.before_trial(study, trial)
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
                self._ensure_space(study._storage.get_all_trials(study._study_id, deepcopy=False))
                arm = self._arm_of_params(attrs["fixed_params"])
            self._set(study, trial, arm, self.ladder.top)
            return
        if self._dynamic:
            self._set(study, trial, None, self.ladder.top)
            return
        with self._lock:
            for _ in range(4):  # claim, then verify against decisions other processes made meanwhile
                arm, fid, seen, replica = self._decide(study, trial)
                self._set(study, trial, arm, fid)
                if replica:
                    study._storage.set_trial_system_attr(trial._trial_id, REPLICA, True)
                    return
                if arm is None or not self._lost_race(study, trial, arm, fid, seen):
                    return

    def _lost_race(self, study: optuna.Study, trial: FrozenTrial, arm: int, fid: int, seen: set[int]) -> bool:
        """True when a lower-numbered trial that our replay did not see placed took the same pull."""
        for t in study._storage.get_all_trials(study._study_id, deepcopy=False, states=(TrialState.RUNNING,)):
            if t.number < trial.number and t.number not in seen:
                if t.system_attrs.get(ARM) == arm and t.system_attrs.get(FIDELITY) == fid:
                    return True
        return False

    def _decide(self, study: optuna.Study, trial: FrozenTrial) -> tuple[int | None, int, set[int], bool]:
        policy, trials, running = self.replay(study)
        seen = set(running)
        if policy is None:  # the search space is not known yet: a cheap discovery trial
            return None, 0, seen, False
        pull = policy.ask()
        if pull is not None and self._gp:
            study._storage.set_trial_system_attr(trial._trial_id, PARAMS, _point(policy, pull))
            return None, pull.fidelity, seen, False
        if pull is not None:
            return pull.arm, pull.fidelity, seen, False
        if self._gp:
            return None, self.ladder.top, seen, False
        if not policy.done and running:  # a barrier: replicate a running pull
            rng = np.random.default_rng(trial.number)
            p = list(running.values())[int(rng.integers(len(running)))]
            return p.arm, p.fidelity, seen, True
        rec = policy.recommendation()
        top = self.ladder.top
        if rec.arm is not None and policy.counts[rec.arm, top] == 0:
            if not any(p.arm == rec.arm and p.fidelity == top for p in running.values()):
                return rec.arm, top, seen, False
        return None, top, seen, False  # done: the fallback explores at the top fidelity

    def sample_independent(
        self, study: optuna.Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution
    ) -> Any:
        self._raise_error_if_multi_objective(study)
        gp_params = trial.system_attrs.get(PARAMS) if self._gp else None
        if gp_params is not None and not self._dynamic:
            if param_name in gp_params and self._space.get(param_name) == param_distribution:
                return gp_params[param_name]
            raise ValueError(
                f"trial {trial.number} suggests {param_name!r} with {param_distribution!r}, which is not in "
                f"MFSampler's search space {sorted(self._space)} (MF-GP-UCB needs a fixed search space)"
            )
        arm = trial.system_attrs.get(ARM)
        if arm is None or self._candidates is None or self._dynamic:
            return self._fallback.sample_independent(study, trial, param_name, param_distribution)
        params = self._candidates[int(arm)]
        if param_name not in params or self._space.get(param_name) != param_distribution:
            msg = (
                f"trial {trial.number} suggests {param_name!r} with {param_distribution!r}, which is not in "
                f"MFSampler's search space {sorted(self._space)}: arm-based policies need a fixed search space "
                "(no conditional or changing parameters)"
            )
            if self._explicit_space:
                raise ValueError(msg + "; pass search_space= covering every parameter, or use another sampler")
            fb = type(self._fallback).__name__
            warnings.warn(msg + f"; MFSampler hands this study to its fallback {fb}", stacklevel=2)
            self._dynamic = True
            return self._fallback.sample_independent(study, trial, param_name, param_distribution)
        return _to_python(params[param_name])

    def after_trial(
        self, study: optuna.Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None
    ) -> None:
        self._fallback.after_trial(study, trial, state, values)


# ----------------------------------------------------------------------------------------- the pruner
class MFPruner(optuna.pruners.BasePruner):
    """ζ-aware pruning at the rungs of a fidelity ladder (:class:`~mf_sched.rungs.RungEliminator`).

    A trial is pruned at rung ``m`` (step ``ladder.resources[m]``) only when some trial's value there, minus
    its confidence radius, beats the trial's value plus its radius by ``2ζ(m)`` — it provably cannot be
    the best, up to δ. Works with any sampler, across processes (decisions are recomputed from the storage),
    tolerates NaN reports (a NaN value is no evidence either way), returns a builtin ``bool``.

    Args:
        ladder / calibration: as for :class:`MFSampler` (``resources`` are the rung steps).
        delta, sigma: confidence and seed-to-seed σ (default 0.05).
        n_trials: the number of trials if known (δ split δ/(KM)); default open-ended (6δ/(π²k²) for trial k).
        bias: ``"zeta"`` or ``"gamma"`` (needs ``ladder.gamma``). eta: optional halving cut (heuristic).
    """

    def __init__(
        self,
        ladder: FidelityLadder | None = None,
        *,
        calibration: Any = None,
        delta: float = 0.05,
        sigma: float | Sequence[float] | None = None,
        n_trials: int | None = None,
        bias: str = "zeta",
        eta: float | None = None,
    ) -> None:
        self.ladder = _resolve_ladder(ladder, calibration, "MFPruner")
        self.sigma = _check_sigma(sigma, calibration, self.ladder.M)
        self._kw = dict(delta=delta, sigma=self.sigma, n_arms=n_trials, bias=bias, eta=eta)
        RungEliminator(self.ladder, **self._kw)  # validate the arguments now
        self._steps = [int(r) for r in self.ladder.resources]
        self._step_set = frozenset(self._steps)

    def engine(self, study: optuna.Study) -> RungEliminator:
        """The engine with every trial's rung values (maximisation convention)."""
        sign = 1.0 if study.direction == StudyDirection.MAXIMIZE else -1.0
        eng = RungEliminator(self.ladder, **self._kw)
        for t in sorted(study._storage.get_all_trials(study._study_id, deepcopy=False), key=lambda x: x.number):
            iv = t.intermediate_values
            if not iv:
                continue
            done = False
            for m, s in enumerate(self._steps):
                v = iv.get(s)
                if v is None or not math.isfinite(v):
                    continue
                if not done:
                    eng.register(t.number, index=t.number)
                    done = True
                eng.report(t.number, m, sign * float(v))
        return eng

    def prune(self, study: optuna.Study, trial: FrozenTrial) -> bool:
        if trial.last_step is None or trial.last_step not in self._step_set:
            return False  # decisions happen at rung steps only
        iv = trial.intermediate_values
        if not any(s in iv and math.isfinite(iv[s]) for s in self._steps if s <= trial.last_step):
            return False
        eng = self.engine(study)
        if trial.number not in eng:
            return False
        stop = bool(eng.should_stop(trial.number))
        if stop:
            rung = eng.stop_rung(trial.number)
            try:
                study._storage.set_trial_system_attr(trial._trial_id, PRUNED_RUNG, rung)
            except Exception:  # pragma: no cover - a finished trial cannot be annotated
                pass
        return stop


# ----------------------------------------------------------------------------------------- curves
def curves_from_study(study: optuna.Study, *, metric_name: str = "value", merge_trials: bool = False) -> Any:
    """The study's learning curves (each trial's intermediate values) as :class:`mf_sched.curves.LearningCurves`,
    for :func:`mf_sched.calibration.calibrate`: configuration = the trial's parameters, fidelity = step.

    Each trial is one run (a seed) of its configuration; with ``merge_trials=True`` the trials of a
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
