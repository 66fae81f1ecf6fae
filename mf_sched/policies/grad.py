"""GRAD: gradient ascent for best-arm identification at the highest fidelity (Ménard 2019).

Paper: P. Ménard, *Gradient Ascent for Active Exploration in Bandit Problems*, arXiv 1905.08165 (2019),
as the single-fidelity baseline of Poiani et al. (2024, *Optimal Multi-Fidelity Best-Arm
Identification*, NeurIPS), with the constants of the latter's released code (`BAIGradientLearner`).

GRAD is :class:`~mf_sched.policies.mf_grad.MFGrad` restricted to the highest fidelity, and the code's
GRAD is exactly that restriction (checked step by step against `algorithms/gradient.py`):

* initialisation: every arm once at fidelity M;
* gradient: with one fidelity every arm is consistent, the best response is the closest pair
  `a* = argmin_a f_a` with `f_a = ω̃_i d(µ̂_i, η_a) + ω̃_a d(µ̂_a, η_a)`, `η_a` the `ω̃`-weighted mean
  of `µ̂_i` and `µ̂_a` (the closed form of the code); the cost factor of MF-GRAD is the constant
  `λ_M` and cancels (the code's GRAD has none);
* exponential weights, forced exploration `γ_t = 1/(4√t)` (pull and cost proportions coincide) and
  C-tracking as in MF-GRAD;
* stopping: the classical GLR `min_a f_a` with pull counts as weights, against
  `β = log(K/δ) + log(1 + log t)` (MF-GRAD's practical threshold with `M = 1`); the theoretical
  option uses the multi-fidelity form with `M = 1` (the code's GRAD comment has a variant).

Every pull costs `λ_M`. Samples at lower fidelities (adopted pulls) are recorded but not used.
Parallel workers and semantics: as for MF-GRAD.

Example:
    >>> from mf_sched import FidelityLadder, SubGaussian
    >>> from mf_sched.policies.grad import Grad
    >>> p = Grad(n_arms=3, ladder=FidelityLadder([0.5, 5.0], [0.1, 0.0]), noise=SubGaussian(0.1), delta=0.01)
    >>> while not p.done:
    ...     pull = p.ask(); p.tell(pull, [0.5, 0.6, 0.35][pull.arm])
    >>> p.recommendation().arm, set(p.counts[:, 0].tolist())
    (1, {0})
"""

from __future__ import annotations

from mf_sched.policies.mf_grad import MFGrad
from mf_sched.registry import register


@register
class Grad(MFGrad):
    """GRAD (Ménard 2019) at the highest fidelity, the single-fidelity baseline of MF-GRAD.

    Same arguments as :class:`~mf_sched.policies.mf_grad.MFGrad` (`gradient` has no effect with a
    single fidelity).
    """

    name = "grad"
    paper = "Ménard 2019 (arXiv 1905.08165), Gradient Ascent for Active Exploration; baseline of Poiani et al. 2024"
    summary = "GRAD at the highest fidelity only (gradient ascent on proportions, GLR stopping)"
    _top_only = True
