"""Constrained best-mixed-arm identification (Tang et al. 2024).

:mod:`~mf_sched.constrained.runner` (instances, their file format, the runner and the paper's instances,
re-exported here), :mod:`~mf_sched.constrained.mixture` (the optimal mixture of the LP) and
:mod:`~mf_sched.constrained.mixture_hardness` (the instance hardness of the mixture problem).
"""

from __future__ import annotations

from mf_sched.constrained.runner import (
    TANG2024_INSTANCES,
    ConstrainedInstance,
    ConstrainedNoise,
    ConstrainedRunResult,
    ConstrainedSummary,
    constrained_policy,
    is_constrained_file,
    load_constrained_instance,
    run_constrained,
    run_many_constrained,
    tang2024_instance,
    wilson_interval,
)

__all__ = [
    "ConstrainedInstance",
    "ConstrainedNoise",
    "ConstrainedRunResult",
    "ConstrainedSummary",
    "load_constrained_instance",
    "is_constrained_file",
    "constrained_policy",
    "run_constrained",
    "run_many_constrained",
    "wilson_interval",
    "tang2024_instance",
    "TANG2024_INSTANCES",
]
