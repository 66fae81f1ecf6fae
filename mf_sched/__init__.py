"""mf-sched: multi-fidelity bandit policies as ask/tell policies, Optuna samplers and Ray schedulers.

The core (this package) depends on numpy and scipy only; adapters live in :mod:`mf_sched.integrations`.

>>> from mf_sched import FidelityLadder, get_policy
>>> ladder = FidelityLadder(costs=[1, 3, 9], zeta=[0.2, 0.05, 0.0])
>>> policy = get_policy("sh")(n_arms=9, ladder=ladder, seed=0)
>>> pull = policy.ask()
>>> policy.tell(pull, 0.5)
"""

from __future__ import annotations

from mf_sched import _moved
from mf_sched.ladder import FidelityLadder
from mf_sched.noise import Bounded, NoiseModel, SubGaussian
from mf_sched.policy import (
    DuplicateTellError,
    InvalidValueError,
    NotStoppingWarning,
    Policy,
    PolicyError,
    Pull,
    Recommendation,
    ReplayMismatchError,
    RoundPolicy,
    UnknownPullError,
)
from mf_sched.registry import build_policy, get_policy, list_policies, register
from mf_sched.sim.bounds import (
    LowerBound,
    TightLowerBound,
    cost_lower_bound,
    instance_lower_bound,
    instance_tight_lower_bound,
    tight_lower_bound,
)
from mf_sched.sim.instance import AssumptionWarning, Instance, load_instance, published_instance, published_instances
from mf_sched.sim.simulate import RunResult, Summary, policy_for, run_many, run_policy

__version__ = "0.1.0"

# the old paths of moved modules (`import mf_sched.datasets`, `mf_sched.datasets`): the moved modules, with a
# DeprecationWarning, until 0.2.0
_moved.install()
__getattr__ = _moved.module_getattr

__all__ = [
    "AssumptionWarning",
    "Bounded",
    "DuplicateTellError",
    "FidelityLadder",
    "Instance",
    "InvalidValueError",
    "LowerBound",
    "NoiseModel",
    "NotStoppingWarning",
    "Policy",
    "PolicyError",
    "Pull",
    "Recommendation",
    "ReplayMismatchError",
    "RoundPolicy",
    "RunResult",
    "SubGaussian",
    "Summary",
    "TightLowerBound",
    "UnknownPullError",
    "build_policy",
    "cost_lower_bound",
    "get_policy",
    "instance_lower_bound",
    "instance_tight_lower_bound",
    "list_policies",
    "load_instance",
    "published_instance",
    "published_instances",
    "policy_for",
    "register",
    "run_many",
    "run_policy",
    "tight_lower_bound",
]
