"""Constrained best-mixed-arm identification (Tang et al. 2024).

:mod:`~mf_sched.constrained.instance` (instances and their file format), :mod:`~mf_sched.constrained.runner`
(the simulator of the mixture policies and its error rates), :mod:`~mf_sched.constrained.tang2024` (the paper's
instances), :mod:`~mf_sched.constrained.mixture` (the optimal mixture of the LP) and
:mod:`~mf_sched.constrained.mixture_hardness` (the instance hardness of the mixture problem). The public names
of the first three are re-exported here (they were one module, `mf_sched.constrained`, before).
"""

from __future__ import annotations

from mf_sched.constrained.instance import (
    ConstrainedInstance,
    ConstrainedNoise,
    is_constrained_file,
    load_constrained_instance,
)
from mf_sched.constrained.runner import (
    ConstrainedRunResult,
    ConstrainedSummary,
    constrained_policy,
    run_constrained,
    run_many_constrained,
    summarize_constrained,
    wilson_interval,
)
from mf_sched.constrained.tang2024 import TANG2024_INSTANCES, tang2024_instance

__all__ = [
    "ConstrainedInstance",
    "ConstrainedNoise",
    "load_constrained_instance",
    "is_constrained_file",
    "constrained_policy",
    "run_constrained",
    "run_many_constrained",
    "summarize_constrained",
    "wilson_interval",
    "tang2024_instance",
    "TANG2024_INSTANCES",
    "ConstrainedRunResult",
    "ConstrainedSummary",
]
