"""Instance-dependent lower bounds, so that every benchmark can report "cost used / lower bound".

Every bound of the package is importable from here; each lives, with its derivation, in the module of its
paper:

* :mod:`~mf_sched.sim.cost_bound` — the least expected cost of a δ-correct best-arm identification,
  `log(1/(2.4δ)) Σ_k min_m λ(m)/KL` (Wang et al. 2023, Theorem 3.1; Poiani et al. 2022, Theorem 1):
  :func:`~mf_sched.sim.cost_bound.cost_lower_bound`, :func:`~mf_sched.sim.cost_bound.instance_lower_bound`
  and the gaps :func:`~mf_sched.sim.cost_bound.gaps`. Known to be loose: it ignores the cost of finding the
  right fidelity.
* :mod:`~mf_sched.sim.tight_bound` — the same question answered tightly for Gaussian noise,
  `C*(µ) · kl(δ, 1 − δ)` (Poiani et al. 2024): :func:`~mf_sched.sim.tight_bound.tight_lower_bound`,
  :func:`~mf_sched.sim.tight_bound.instance_tight_lower_bound`.
* :mod:`~mf_sched.sim.regret_bounds` — the least cumulative regret at capital `Λ`, Kandasamy et al. (2016),
  Theorem 4 (:func:`~mf_sched.sim.regret_bounds.kandasamy_regret_lower_bound`) and Wang et al. (2023),
  Theorem 4.4 (:func:`~mf_sched.sim.regret_bounds.wang_regret_lower_bound`); and what Kandasamy et al.'s
  analysis of MF-UCB predicts on an instance: thresholds γ (Eq. 4), home fidelities (§4.1), Theorem 2's
  constants (:func:`~mf_sched.sim.regret_bounds.mfucb_analysis`,
  :func:`~mf_sched.sim.regret_bounds.mfucb_low_fidelity_caps`).

:func:`~mf_sched.sim.simulate.run_many` reports both cost bounds of an instance next to the cost its runs used.

Example:
    >>> from mf_sched.sim import cost_bound, regret_bounds, tight_bound
    >>> tight_lower_bound is tight_bound.tight_lower_bound and gaps is cost_bound.gaps
    True
    >>> mu = [[0.4, 0.5]] * 4 + [[0.5, 0.6]]
    >>> loose = cost_lower_bound(mu, [0.5, 5.0], [0.1, 0.0], 0.01, sigma=0.1)
    >>> tight = tight_lower_bound(mu, [0.5, 5.0], [0.1, 0.0], 0.01, sigma=0.1)
    >>> bool(loose.value < tight.value)
    True
"""

from __future__ import annotations

from mf_sched.sim.cost_bound import LowerBound, cost_lower_bound, gaps, instance_lower_bound
from mf_sched.sim.regret_bounds import (
    MFUCBAnalysis,
    RegretLowerBound,
    kandasamy_regret_lower_bound,
    mfucb_analysis,
    mfucb_low_fidelity_caps,
    wang_regret_lower_bound,
)
from mf_sched.sim.tight_bound import TightLowerBound, instance_tight_lower_bound, tight_lower_bound

__all__ = [
    "LowerBound",
    "cost_lower_bound",
    "instance_lower_bound",
    "TightLowerBound",
    "tight_lower_bound",
    "instance_tight_lower_bound",
    "gaps",
    "RegretLowerBound",
    "kandasamy_regret_lower_bound",
    "wang_regret_lower_bound",
    "MFUCBAnalysis",
    "mfucb_analysis",
    "mfucb_low_fidelity_caps",
]
