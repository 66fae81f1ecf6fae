"""MFSampler with a registered ask/tell policy other than ``race`` (IISE, SH, Hyperband, MF-GRAD, MF-GP-UCB ...).

The policy is rebuilt from the study's storage at every decision: every trial is replayed in ``number`` order
into a fresh policy (COMPLETE/PRUNED trials adopted and told their value at their fidelity, RUNNING ones
outstanding pulls, FAIL ones given back). These policies choose a fidelity per trial: the objective trains to
``train_to(trial)`` and ends with ``finish(trial, value)``, or — an ordinary objective — MFPruner ends the trial
when it reaches the policy's fidelity (its value there is told to the policy). MF-GP-UCB (continuous spaces)
re-asks the policy and matches each trial to its proposal, adopting points placed by others.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState

from mf_sched.policy import Policy

from ._optuna_race import ARM, FIDELITY, PARAMS, RESULT
from ._optuna_space import point_of

if TYPE_CHECKING:  # pragma: no cover
    from .optuna import MFSampler

__all__ = ["policy_result", "new_policy", "replay_policy", "decide_with_policy"]


def policy_result(t: FrozenTrial) -> float | None:
    """A trial's value for the policy: ``mf:result``, else its value (COMPLETE) or last report (PRUNED)."""
    attrs = t.system_attrs
    v = attrs.get(RESULT)
    if v is None and t.state == TrialState.COMPLETE and t.value is not None:
        v = t.value
    if v is None and t.state == TrialState.PRUNED and t.intermediate_values:
        v = t.intermediate_values[max(t.intermediate_values)]
    if v is None or not math.isfinite(float(v)):
        return None
    return float(v)


def new_policy(self: MFSampler, n_arms: int) -> Policy:
    """A fresh policy for ``n_arms`` candidates (MF-GP-UCB: over the search space)."""
    from mf_sched.registry import build_policy, get_policy

    if self._gp:
        from mf_sched.policies.mf_gp_ucb import MFGPUCB  # needs the gp extra (scikit-learn)

        from ._optuna_space import to_space

        cls = get_policy(self.policy_name)
        assert issubclass(cls, MFGPUCB)
        return cls(
            to_space(self._space),
            self.ladder,
            noise={"kind": "subgaussian", "sigma": self._policy_sigma},
            seed=0 if self.seed is None else self.seed,
            **self.policy_kwargs,
        )
    problem = {
        "n_arms": n_arms,
        "ladder": self.ladder,
        "delta": self.delta,
        "noise": {"kind": "subgaussian", "sigma": self._policy_sigma},
        "seed": 0 if self.seed is None else self.seed,
    }
    return build_policy(self.policy_name, problem, **self.policy_kwargs)


def replay_policy(self: MFSampler, study: optuna.Study) -> tuple[Policy | None, list[FrozenTrial], dict[int, Any]]:
    """Rebuild the policy from the study's storage (see the module docstring). Returns the policy (None
    while the search space is unknown), the trials, and the outstanding pull of each RUNNING trial."""
    trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
    if not self._ensure_space(trials):
        return None, list(trials), {}
    policy = new_policy(self, 0 if self._gp else len(self._candidates))
    sign = self._sign(study)
    running: dict[int, Any] = {}
    for t in sorted(trials, key=lambda x: x.number):
        attrs = t.system_attrs
        if self._gp:
            fid, params = attrs.get(FIDELITY), attrs.get(PARAMS) or t.params
            if fid is None or not params or set(params) != set(self._space):
                continue
            v = policy_result(t) if t.state in (TrialState.COMPLETE, TrialState.PRUNED) else None
            if t.state != TrialState.RUNNING and v is None:
                continue  # failed: its pull is given back (never re-told)
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
            v = policy_result(t)
            if v is not None:
                policy.tell(policy.adopt(arm, fid), sign * v)
    return policy, list(trials), running


def decide_with_policy(
    self: MFSampler, study: optuna.Study, trial: FrozenTrial
) -> tuple[int | None, int, set[int], bool]:
    """The (arm, fidelity) of a new trial: the policy's next pull; a replica of a running pull at a barrier
    (last flag True); the recommended arm at the top once (when done); then None (the fallback explores)."""
    policy, trials, running = replay_policy(self, study)
    seen = set(running)
    if policy is None:  # the search space is not known yet: a cheap discovery trial
        return None, 0, seen, False
    pull = policy.ask()
    if pull is not None and self._gp:
        study._storage.set_trial_system_attr(trial._trial_id, PARAMS, point_of(policy, pull))
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
