"""LUCB at the highest fidelity: the baseline of Wang et al. (2023), Appendix C.

Paper: X. Wang, Q. Wu, W. Chen, J. C. S. Lui, *Multi-Fidelity Multi-Armed Bandits Revisited*, NeurIPS 2023,
Appendix C (Table 3, "Baseline"): Algorithm 1 with `EXPLORE(k) := pull (k, M)`. With ζ(M) = 0 this is the
classic LUCB with the paper's radius `β(n, t, δ) = √(log(L t⁴/δ)/n)` and `L = 4KM` (the `M` of the
ladder, as in the paper's runs), and with the top-two-UCB choice of ℓ_t and u_t
(:mod:`mf_sched.policies._mf_lucb`). It differs from `lucb1` (Kalyanakrishnan et al. 2012: empirical
best vs. highest UCB, `k₁ = 5/4`, `2u` in the radius) only in those constants and that choice, and is
the right yardstick for EXPLORE-A/B/C: same framework, no fidelity selection.

Example:
    >>> from mf_sched import FidelityLadder
    >>> from mf_sched.policies.lucb_highest import LUCBHighest
    >>> p = LUCBHighest(n_arms=3, ladder=FidelityLadder([1.0, 10.0], [0.3, 0.0]), delta=0.1, seed=0)
    >>> [q.fidelity for q in p.ask_batch()]
    [1, 1]
"""

from __future__ import annotations

from mf_sched.policies._mf_lucb import MFLUCB
from mf_sched.registry import register

__all__ = ["LUCBHighest"]


@register
class LUCBHighest(MFLUCB):
    """LUCB (Wang et al. 2023, Alg. 1) always exploring at the highest fidelity (Appendix C baseline).
    Arguments: as :class:`~mf_sched.policies._mf_lucb.MFLUCB`."""

    name = "lucb-highest"
    paper = "Wang, Wu, Chen, Lui 2023 (NeurIPS), Multi-Fidelity MAB Revisited, Alg. 1, App. C baseline (fidelity M)"
    summary = "Multi-fidelity LUCB framework with EXPLORE = the highest fidelity (Wang et al.'s baseline)"
    explore_name = "highest fidelity"

    def _explore(self, k: int, t: int) -> list[int]:
        return [self.M - 1]
