"""LUCB with EXPLORE-C: climb the fidelities as their radius falls below their bias (Wang et al. 2023, App. D).

Paper: X. Wang, Q. Wu, W. Chen, J. C. S. Lui, *Multi-Fidelity Multi-Armed Bandits Revisited*, NeurIPS 2023,
Appendix D (Algorithm 4, EXPLORE-C; Theorem D.1), run inside the LUCB framework of Algorithm 1
(:mod:`mf_sched.policies._mf_lucb`).

EXPLORE-C(k) pulls arm `k` at `m_{k,t} = min{m : β(N_k^(m), t, δ) ≥ ζ(m)}`: the cheapest fidelity whose
statistical radius still exceeds its bias (once the radius is below the bias, more samples there carry
little information). The set is never empty since `ζ(M) = 0`. The relation is lost in the extraction;
the text ("when the confidence radius is less than ζ(m), increase the fidelity") gives `≥` (Wang et al. 2023, Appendix
D, Algorithm 4). The rule is stateless, as printed: `β` grows with `t` (`log t⁴`), so a fidelity left earlier can
be chosen again. EXPLORE-C needs no prior bounds — only ζ, λ and δ — and is the multi-fidelity idea of IISE
inside LUCB; its cost bound (Theorem D.1) is "incomparable to the lower bound and can be very large".

Example:
    >>> from mf_sched import FidelityLadder
    >>> from mf_sched.policies.lucb_explore_c import LUCBExploreC
    >>> p = LUCBExploreC(n_arms=3, ladder=FidelityLadder([1.0, 10.0], [0.3, 0.0]), delta=0.1, seed=0)
    >>> [q.fidelity for q in p.ask_batch()]   # no samples yet: β = ∞ ≥ ζ at the cheapest fidelity
    [0, 0]
"""

from __future__ import annotations

import math
from typing import Any

from mf_sched.confidence import wang_beta_numerator
from mf_sched.policies._mf_lucb import MFLUCB
from mf_sched.registry import register

__all__ = ["LUCBExploreC"]


@register
class LUCBExploreC(MFLUCB):
    """LUCB (Wang et al. 2023, Alg. 1) with EXPLORE-C (Appendix D, Alg. 4). Arguments: as
    :class:`~mf_sched.policies._mf_lucb.MFLUCB`."""

    name = "lucb-explore-c"
    paper = "Wang, Wu, Chen, Lui 2023 (NeurIPS), Multi-Fidelity MAB Revisited, Alg. 1 + EXPLORE-C (App. D, Alg. 4)"
    summary = "LUCB over arms; each explored arm at the cheapest fidelity whose radius still exceeds its bias"
    explore_name = "EXPLORE-C (lowest fidelity with radius >= bias)"

    def _init_explore(self) -> None:
        self._num_t = (-1, 0.0)  # (t, 4σ² log(L t⁴/δ)) of the last round explored

    def _explore(self, k: int, t: int) -> list[int]:
        # β(N, t, δ) = √(num / N) per fidelity (the arithmetic of wang_beta for array counts; +inf at N = 0)
        if self._num_t[0] != t:
            self._num_t = (t, float(wang_beta_numerator(t, self.delta, self.L, self.sigma)))
        num = self._num_t[1]
        for m, (n, z) in enumerate(zip(self._counts[k].tolist(), self._zeta_list)):
            if n == 0 or math.sqrt(num / n) >= z:
                return [m]
        return [self.M - 1]  # unreachable: ζ(M) = 0 ≤ β

    @classmethod
    def example_params(cls, instance: Any) -> dict[str, Any]:
        return {}
