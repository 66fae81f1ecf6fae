"""Racing: the rule that stops training runs which cannot win, its proof, its bounds and their calibration.

* :mod:`mf_sched.racing.engine` — the engine (:class:`~mf_sched.racing.engine.RungEliminator`): runs, values
  per rung, the IISE rule and the racing rule, the answer, saved states;
* :mod:`mf_sched.racing.certificate` — what the rules guarantee and why (the proofs), and the certificate;
* :mod:`mf_sched.racing.bias` — the unconditional bound ζ⁺ and the metric families;
* :mod:`mf_sched.racing.calibration` — estimating ζ⁺ from learning curves;
* :mod:`mf_sched.racing.policy` — the `race` policy (the engine driven by the ask/tell protocol);
* :mod:`mf_sched.racing.curve_bound` — how much a run can still improve after a rung given its own curve
  (:class:`~mf_sched.racing.curve_bound.CurveBound`), and the bounds shipped per metric family;
* :mod:`mf_sched.racing.fit` — fitting it on learning curves of many tasks, with one conformal step over tasks
  that makes it hold jointly over the rungs;
* :mod:`mf_sched.racing.evidence` — the bound learned from the study's own finished curves, with the shipped
  bound as the prior, and when a study looks unlike the calibration tasks;
* :mod:`mf_sched.racing.schedule` — the anytime order of work (ASHA's breadth-first promotions while the
  evidence is thin, then resuming the survivors best-first toward a certificate).
"""

from __future__ import annotations

from mf_sched.racing.curve_bound import CurveBound, CurveBoundFit, curve_bound_families, shipped_curve_bound

__all__ = ["CurveBound", "CurveBoundFit", "curve_bound_families", "shipped_curve_bound"]
