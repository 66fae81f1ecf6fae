"""Racing: the curve-aware bound of the racing rule, its fitting, and the anytime schedule.

* :mod:`mf_sched.racing.curve_bound` — how much a run can still improve after a rung given its own curve
  (:class:`~mf_sched.racing.curve_bound.CurveBound`), and the bounds shipped per metric family;
* :mod:`mf_sched.racing.fit` — fitting it on learning curves of many tasks, with one conformal step over tasks
  that makes it hold jointly over the rungs;
* :mod:`mf_sched.racing.schedule` — the anytime order of work (ASHA's breadth-first promotions while the
  evidence is thin, then resuming the survivors best-first toward a certificate).

The rule itself and its proof: :mod:`mf_sched.racing.engine`; the unconditional bound ζ⁺ (the fallback):
:mod:`mf_sched.racing.bias`.
"""

from __future__ import annotations

from mf_sched.racing.curve_bound import CurveBound, CurveBoundFit, curve_bound_families, shipped_curve_bound

__all__ = ["CurveBound", "CurveBoundFit", "curve_bound_families", "shipped_curve_bound"]
