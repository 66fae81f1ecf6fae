"""MFSampler's two kinds of search: finite arms (`race` and the finite-armed policies) or a continuous space
(MF-GP-UCB), and MFSampler with a registered ask/tell policy other than `race` (IISE, SH, Hyperband, MF-GRAD,
MF-GP-UCB ...).

:class:`MFSampler` picks one strategy in its constructor — :class:`_FiniteArms` or :class:`_ContinuousGP`, both
:class:`_Arms` — and calls it wherever the two kinds differ: checking the policy, learning the search space,
building and replaying the policy, placing a new trial, the answer (:meth:`_Arms.recommendation`), the recommended
parameters and sampling a parameter.

The policy is rebuilt from the study's storage at every decision: every trial is replayed in `number` order
into a fresh policy (COMPLETE/PRUNED trials adopted and told their value at their fidelity, RUNNING ones
outstanding pulls, FAIL ones given back). These policies choose a fidelity per trial: the objective trains to
`train_to(trial)` and ends with `finish(trial, value)`, or — an ordinary objective — MFPruner ends the trial
when it reaches the policy's fidelity (its value there is told to the policy). MF-GP-UCB (continuous spaces)
re-asks the policy and matches each trial to its proposal, adopting points placed by others.
"""

from __future__ import annotations

import abc
import math
import random
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState

from mf_sched.ladder import FidelityLadder
from mf_sched.policy import Policy, Recommendation

from ._optuna_claims import distinct_discovery_value
from ._optuna_race import ARM, FIDELITY, PARAMS, RESULT
from ._optuna_recommendation import MFRecommendation, resources_spent
from ._optuna_space import SearchState, point_of, same_distribution, to_python

__all__ = ["GP_POLICIES", "policy_result", "arms_for", "check_suggested"]

GP_POLICIES = ("mf-gp-ucb", "gp-ucb")
"""The continuous-space (Gaussian-process) policies: MFSampler uses :class:`_ContinuousGP` for them."""

Placement = tuple[int | None, int, bool]  # (arm, fidelity, replica)


class SamplerView(Protocol):
    """What the strategies read from :class:`~mf_sched.integrations.optuna.MFSampler` (a structural type, so that
    this module never imports the sampler that imports it)."""

    ladder: FidelityLadder | None
    delta: float
    seed: int | None
    race: bool
    policy_name: str
    policy_kwargs: dict[str, Any]

    @property
    def search_state(self) -> SearchState: ...

    @property
    def policy_sigma(self) -> float: ...

    @property
    def fallback(self) -> BaseSampler: ...

    @property
    def proposer(self) -> BaseSampler | None: ...

    def proposed_arm(self, study: optuna.Study, trial: FrozenTrial) -> tuple[dict[str, Any], bool] | None: ...

    def arm_of(self, t: FrozenTrial) -> int | None: ...


def policy_result(t: FrozenTrial) -> float | None:
    """A trial's value for the policy: `mf:result`, else its value (COMPLETE) or last report (PRUNED).

    Args:
        t: a trial of the study.

    Returns:
        The value, or None when it has none or it is not finite.
    """
    attrs = t.system_attrs
    v = attrs.get(RESULT)
    if v is None and t.state == TrialState.COMPLETE and t.value is not None:
        v = t.value
    if v is None and t.state == TrialState.PRUNED and t.intermediate_values:
        v = t.intermediate_values[max(t.intermediate_values)]
    if v is None or not math.isfinite(float(v)):
        return None
    return float(v)


def learnt_space(trials: Sequence[FrozenTrial]) -> Mapping[str, BaseDistribution] | None:
    """The search space learnt from the study's trials: the distributions of the first trial that has suggested
    all its parameters — one that has ended, or reported a value (an objective suggests before it trains).

    A trial still running that has reported nothing may be between two suggestions: workers that started together
    used to learn the space from the first one's first parameter alone (`['x']` of `x, y`), take the next
    parameter for a changed space and hand the study to the fallback, which then trained configurations again.

    Args:
        trials: the study's trials.

    Returns:
        Its distributions; None while no trial qualifies.
    """
    for t in trials:
        if t.distributions and (t.state not in (TrialState.RUNNING, TrialState.WAITING) or t.intermediate_values):
            return t.distributions
    return None


class _Arms(abc.ABC):
    """What MFSampler does differently for finite arms and for a continuous space (the strategy interface).

    The search state (:class:`SearchState`: space, candidates, dynamic) is the sampler's, shared with the race."""

    continuous: ClassVar[bool]

    def __init__(self, sampler: SamplerView) -> None:
        self.sampler = sampler

    @property
    def search(self) -> SearchState:
        return self.sampler.search_state

    @abc.abstractmethod
    def check_policy(self, policy: str, cls: type[Policy], policy_kwargs: Mapping[str, Any] | None) -> None:
        """Refuse a registered policy (other than `race`) this kind of search cannot drive."""

    def use_given_space(self) -> None:
        """Constructor step once `search_space=` is set (finite arms: its candidates)."""

    def probe(self) -> Policy | None:
        """Constructor's last step: a throw-away policy built so that bad `policy_kwargs` fail early (None if
        this kind of search builds none)."""
        return None

    @abc.abstractmethod
    def ensure_space(self, trials: Sequence[FrozenTrial]) -> bool:
        """Learn the search space from `trials` if not known yet; whether it is known."""

    @abc.abstractmethod
    def new_policy(self) -> Policy:
        """A fresh policy over the known search space."""

    @abc.abstractmethod
    def replay(self, policy: Policy, t: FrozenTrial, sign: float, running: dict[int, Any]) -> None:
        """Replay trial `t` into `policy` (a RUNNING trial's pull goes into `running`)."""

    @abc.abstractmethod
    def place(self, study: optuna.Study, trial: FrozenTrial, policy: Policy, running: dict[int, Any]) -> Placement:
        """`(arm, fidelity, replica)` of the new `trial` from the policy's next pull (`policy.ask()`), given the
        outstanding pull of each RUNNING trial."""

    @abc.abstractmethod
    def recommended_params(self, rec: Recommendation) -> dict[str, Any] | None:
        """The parameters of the policy's recommendation."""

    @abc.abstractmethod
    def sample_independent(
        self, study: optuna.Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution
    ) -> Any:
        """The value of `param_name` for `trial` (MFSampler.sample_independent)."""

    def replay_study(self, study: optuna.Study, sign: float) -> tuple[Policy | None, list[FrozenTrial], dict[int, Any]]:
        """Rebuild the policy from the study's storage (see the module docstring); `sign` is +1 for a study
        that maximizes, -1 for one that minimizes. Returns the policy (None while the search space is unknown),
        the trials, and the outstanding pull of each RUNNING trial."""
        trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
        if not self.ensure_space(trials):
            return None, list(trials), {}
        policy = self.new_policy()
        running: dict[int, Any] = {}
        for t in sorted(trials, key=lambda x: x.number):
            self.replay(policy, t, sign, running)
        return policy, list(trials), running

    def decide(self, study: optuna.Study, trial: FrozenTrial, sign: float) -> tuple[int | None, int, set[Any], bool]:
        """The (arm, fidelity) of a new trial: the policy's next pull; a replica of a running pull at a barrier
        (last flag True); the recommended arm at the top once (when done); then None (the fallback explores).
        Also returns the claims (trial number, arm, fidelity) of the running trials this decision saw."""
        policy, _, running = self.replay_study(study, sign)
        seen = {(n, p.arm, p.fidelity) for n, p in running.items()}  # the claims this decision saw
        if policy is None:  # the search space is not known yet: a cheap discovery trial
            return None, 0, seen, False
        arm, fid, replica = self.place(study, trial, policy, running)
        return arm, fid, seen, replica

    def recommendation(self, study: optuna.Study, sign: float) -> MFRecommendation:
        """The policy's answer, replayed from the study's storage (:meth:`replay_study`).

        Args:
            study: the study.
            sign: `1.0` for a study that maximizes, `-1.0` for one that minimizes.

        Returns:
            The policy's recommendation with its cost and the study's counts (`"in-progress"` and no answer while
                the search space is unknown).
        """
        s = self.sampler
        policy, trials, _ = self.replay_study(study, sign)
        lad = s.ladder
        assert lad is not None
        spent = resources_spent(trials, s.arm_of, 0)
        if policy is None:
            return MFRecommendation(None, None, False, "in-progress", s.delta, 0.0, 0.0, spent, 0.0, False,
                                    len(trials))  # fmt: skip
        rec = policy.recommendation()
        params = self.recommended_params(rec)
        n_cand = len(self.search.candidates) if self.search.candidates is not None else 0
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

    def _noise(self) -> dict[str, Any]:
        return {"kind": "subgaussian", "sigma": self.sampler.policy_sigma}

    def _seed(self) -> int:
        return 0 if self.sampler.seed is None else self.sampler.seed


class _FiniteArms(_Arms):
    """Arms are a fixed candidate set of the search space (`race` and the finite-armed best-arm policies)."""

    continuous = False

    def __init__(self, sampler: SamplerView) -> None:
        super().__init__(sampler)
        self._rng = random.Random()  # the pause before a discovery trial chooses again (distinct_discovery_value)

    def _arm_params(self, t: FrozenTrial) -> Mapping[str, Any] | None:
        """The fixed candidate a trial claimed (None for arms proposed one at a time: those are their trials')."""
        a, cands = t.system_attrs.get(ARM), self.search.candidates
        if self.search.lazy or cands is None or not isinstance(a, int) or not 0 <= a < len(cands):
            return None
        return cands[a]

    def check_policy(self, policy: str, cls: type[Policy], policy_kwargs: Mapping[str, Any] | None) -> None:
        if not cls.finite_armed or cls.objective not in ("best-arm", "fixed-budget"):
            raise ValueError(
                f"policy = {policy!r} is not a finite-armed best-arm policy; accepted: 'race', 'iise-rungs', "
                "'iise', 'iise-gamma', 'se', 'sh', 'hyperband', 'mf-grad', or 'mf-gp-ucb' / 'gp-ucb'"
            )

    def use_given_space(self) -> None:
        if self.search.space is not None:
            self.search.set_candidates(self.search.space)

    def probe(self) -> Policy | None:
        return None if self.sampler.race else self._build(2)

    def ensure_space(self, trials: Sequence[FrozenTrial]) -> bool:
        if self.search.known:
            return True
        space = learnt_space(trials)
        if space is not None:
            self.search.set_candidates(space)
            return True
        if any(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in trials):
            # a trial ended without suggesting anything: the objective has no parameters, so one configuration
            # (issue 24: the study never stopped, 60 trials of the same objective and no recommendation)
            warnings.warn(
                "MFSampler: the objective suggests no parameters (no trial.suggest_*): there is one configuration, "
                "and the study stops once it has been evaluated",
                stacklevel=4,
            )
            self.search.set_candidates({})
            return True
        return False

    def _build(self, n_arms: int) -> Policy:
        from mf_sched.registry import build_policy

        s = self.sampler
        problem = {
            "n_arms": n_arms,
            "ladder": s.ladder,
            "delta": s.delta,
            "noise": self._noise(),
            "seed": self._seed(),
        }
        policy = build_policy(s.policy_name, problem, **s.policy_kwargs)
        policy.stall_warning_pulls = None  # replayed at every decision; the study's n_trials bounds it
        return policy

    def new_policy(self) -> Policy:
        assert self.search.candidates is not None  # ensure_space came first
        return self._build(len(self.search.candidates))

    def replay(self, policy: Policy, t: FrozenTrial, sign: float, running: dict[int, Any]) -> None:
        attrs = t.system_attrs
        arm, fid = attrs.get(ARM), attrs.get(FIDELITY)
        if arm is None and t.state in (TrialState.COMPLETE, TrialState.PRUNED) and t.params:
            arm = self.search.arm_of_params(t.params)
            fid = self.sampler.ladder.top if fid is None else fid
        if arm is None or fid is None or not 0 <= int(arm) < policy.n_arms:
            return
        arm, fid = int(arm), int(fid)
        if t.state == TrialState.RUNNING:
            running[t.number] = policy.adopt(arm, fid)
        elif t.state in (TrialState.COMPLETE, TrialState.PRUNED):
            v = policy_result(t)
            if v is not None:
                policy.tell(policy.adopt(arm, fid), sign * v)

    def place(self, study: optuna.Study, trial: FrozenTrial, policy: Policy, running: dict[int, Any]) -> Placement:
        pull = policy.ask()
        if pull is not None:
            return pull.arm, pull.fidelity, False
        if not policy.done and running:  # a barrier: replicate a running pull
            rng = np.random.default_rng(trial.number)
            p = list(running.values())[int(rng.integers(len(running)))]
            return p.arm, p.fidelity, True
        rec = policy.recommendation()
        top = self.sampler.ladder.top
        if rec.arm is not None and policy.counts[rec.arm, top] == 0:
            if not any(p.arm == rec.arm and p.fidelity == top for p in running.values()):
                return rec.arm, top, False
        return None, top, False  # done: the fallback explores at the top fidelity

    def recommended_params(self, rec: Recommendation) -> dict[str, Any] | None:
        return None if rec.arm is None or self.search.candidates is None else dict(self.search.candidates[rec.arm])

    def sample_independent(
        self, study: optuna.Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution
    ) -> Any:
        search, fallback = self.search, self.sampler.fallback
        proposed = self.sampler.proposed_arm(study, trial)
        if proposed is not None:  # an arm whose configuration the proposer gives: its values, else a proposal
            known, discovery = proposed
            if not discovery and not self._in_space(trial, param_name, param_distribution):
                return fallback.sample_independent(study, trial, param_name, param_distribution)
            if param_name in known:
                return to_python(known[param_name])
            proposer = self.sampler.proposer
            if discovery:  # the proposer's value, re-drawn where another trial would train the same configuration
                return distinct_discovery_value(
                    study, trial, param_name, param_distribution,
                    lambda: proposer.sample_independent(study, trial, param_name, param_distribution),
                    self._arm_params, self._rng,
                )  # fmt: skip
            return proposer.sample_independent(study, trial, param_name, param_distribution)
        arm = trial.system_attrs.get(ARM)
        if arm is None or search.candidates is None or search.space is None or search.dynamic:
            return fallback.sample_independent(study, trial, param_name, param_distribution)
        params = search.candidates[int(arm)]
        if not self._in_space(trial, param_name, param_distribution):
            return fallback.sample_independent(study, trial, param_name, param_distribution)
        return to_python(params[param_name])

    def _in_space(self, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution) -> bool:
        """Whether `param_name` with this distribution is in the search space; if not, the space is dynamic:
        an error with an explicit `search_space=`, else a warning and the study goes to the fallback."""
        search = self.search
        assert search.space is not None
        if (
            not search.dynamic
            and param_name in search.space
            and same_distribution(search.space.get(param_name), param_distribution)
        ):
            return True
        if search.dynamic:
            return False
        given = search.space.get(param_name)
        where = (
            f"search_space[{param_name!r}]"
            if search.explicit
            else f"MFSampler's search space (learnt from the study's first trial) has {param_name!r} as"
        )
        now = f"this trial {param_distribution!r}"
        what = (
            f"suggests {param_name!r} with a changed distribution: {where} {given!r}, {now}"
            if given is not None
            else f"suggests {param_name!r} ({param_distribution!r}), which is not in MFSampler's search space "
            f"{sorted(search.space)}"
        )
        msg = (
            f"trial {trial.number} {what}: arm-based policies need a fixed search space (no conditional or "
            "changing parameters)"
        )
        if search.explicit:
            raise ValueError(
                f"MFSampler(search_space=...): {msg}; accepted: a search_space= whose parameters every trial "
                "suggests, each with the distribution given there — for a conditional space leave search_space "
                "unset (MFSampler then hands the study to its fallback sampler) or use another sampler"
            )
        fb = type(self.sampler.fallback).__name__
        # stacklevel 4: the caller of MFSampler.sample_independent
        warnings.warn(msg + f"; MFSampler hands this study to its fallback {fb}", stacklevel=4)
        search.dynamic = True
        return False


def check_suggested(search: SearchState, trial: FrozenTrial, fallback: BaseSampler, *, stacklevel: int) -> None:
    """A trial that ended (COMPLETE or PRUNED) without suggesting every parameter of the search space makes the
    space conditional: an error naming the parameter with an explicit `search_space=`, else a warning and the
    study goes to the fallback (:attr:`SearchState.dynamic`), as for a parameter outside the space.

    Args:
        search: the sampler's search state.
        trial: the trial that has just ended (not FAIL: a trial may fail before it suggested everything).
        fallback: the sampler the study goes to with an inferred space.
        stacklevel: the warning's stack level.
    """
    if search.space is None or search.dynamic or not search.space:
        return
    missing = sorted(set(search.space) - set(trial.params))
    if not missing or not (trial.params or trial.intermediate_values):
        return
    names = ", ".join(repr(n) for n in missing)
    msg = (
        f"trial {trial.number} ended without suggesting {names} (its parameters: {dict(trial.params)}), which "
        f"{'is' if len(missing) == 1 else 'are'} in MFSampler's search space {sorted(search.space)}: the space is "
        "conditional, and arm-based policies need a fixed search space"
    )
    if search.explicit:
        raise ValueError(
            f"MFSampler(search_space=...): {msg}; accepted: a search_space= whose parameters every trial suggests, "
            "each with the distribution given there — for a conditional space leave search_space unset "
            "(MFSampler then hands the study to its fallback sampler) or use another sampler"
        )
    fb = type(fallback).__name__
    warnings.warn(msg + f"; MFSampler hands this study to its fallback {fb}", stacklevel=stacklevel)
    search.dynamic = True


class _ContinuousGP(_Arms):
    """The policy searches the whole (continuous) space itself: MF-GP-UCB / GP-UCB propose each trial's
    parameters, stored in `mf:params`."""

    continuous = True

    def check_policy(self, policy: str, cls: type[Policy], policy_kwargs: Mapping[str, Any] | None) -> None:
        if not (policy_kwargs or {}).get("budget"):
            raise ValueError(
                f"policy = {policy!r} needs policy_kwargs={{'budget': Λ}}: its capital, in the ladder's cost units"
            )

    def ensure_space(self, trials: Sequence[FrozenTrial]) -> bool:
        search = self.search
        if search.space is None:
            space = learnt_space(trials)
            if space is not None:
                search.space = dict(space)
        return search.space is not None

    def new_policy(self) -> Policy:
        from mf_sched.policies.mf_gp_ucb import MFGPUCB  # needs the gp extra (scikit-learn)
        from mf_sched.registry import get_policy

        from ._optuna_space import to_space

        s = self.sampler
        cls = get_policy(s.policy_name)
        assert issubclass(cls, MFGPUCB) and self.search.space is not None
        return cls(to_space(self.search.space), s.ladder, noise=self._noise(), seed=self._seed(), **s.policy_kwargs)

    def replay(self, policy: Policy, t: FrozenTrial, sign: float, running: dict[int, Any]) -> None:
        attrs = t.system_attrs
        fid, params = attrs.get(FIDELITY), attrs.get(PARAMS) or t.params
        if fid is None or not params or set(params) != set(self.search.space or ()):
            return
        v = policy_result(t) if t.state in (TrialState.COMPLETE, TrialState.PRUNED) else None
        if t.state != TrialState.RUNNING and v is None:
            return  # failed: its pull is given back (never re-told)
        # the policy's own sequence: re-ask; the trial's point is the policy's next proposal unless
        # another process or the user placed it (then it is adopted)
        pull = policy.ask() if PARAMS in attrs else None
        if pull is not None and (pull.fidelity != int(fid) or point_of(policy, pull) != params):
            policy.give_back(pull)
            pull = None
        if pull is None:
            pull = policy.adopt_point(params, int(fid))
        if t.state == TrialState.RUNNING:
            running[t.number] = pull
        else:
            policy.tell(pull, sign * v)

    def place(self, study: optuna.Study, trial: FrozenTrial, policy: Policy, running: dict[int, Any]) -> Placement:
        pull = policy.ask()
        if pull is not None:
            study._storage.set_trial_system_attr(trial._trial_id, PARAMS, point_of(policy, pull))
            return None, pull.fidelity, False
        return None, self.sampler.ladder.top, False

    def recommended_params(self, rec: Recommendation) -> dict[str, Any] | None:
        return rec.details.get("params")

    def sample_independent(
        self, study: optuna.Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution
    ) -> Any:
        search = self.search
        gp_params = trial.system_attrs.get(PARAMS)
        if gp_params is None or search.dynamic or search.space is None:
            # no proposal (a discovery trial, or nothing left to propose): the fallback samples it
            return self.sampler.fallback.sample_independent(study, trial, param_name, param_distribution)
        if param_name in gp_params and search.space.get(param_name) == param_distribution:
            return gp_params[param_name]
        raise ValueError(
            f"trial {trial.number} suggests {param_name!r} with {param_distribution!r}, which is not in "
            f"MFSampler's search space {sorted(search.space)} (MF-GP-UCB needs a fixed search space)"
        )


def arms_for(sampler: SamplerView, policy: str) -> _Arms:
    """The strategy for `policy`: :class:`_ContinuousGP` for the GP policies, else :class:`_FiniteArms`.

    Args:
        sampler: the MFSampler the strategy serves.
        policy: the registered policy's name (`MFSampler(policy=...)`).
    """
    return (_ContinuousGP if policy in GP_POLICIES else _FiniteArms)(sampler)
