"""IISE-γ: order-aware Iterative Imprecise Successive Elimination (Poiani, Metelli, Restelli 2022, §5).

Paper: R. Poiani, A. M. Metelli, M. Restelli, *Multi-Fidelity Best-Arm Identification*, NeurIPS 2022,
Section 5 ("Breaking the cost barrier"), Eq. 9. The pseudo-code and formal statement are in Appendix D,
which the available text lacks; the two changes below are stated in §5 and confirmed by the authors'
released code (`riccardopoiani/mf-bai`, `MultiFidelitySuccessiveEliminationOrder`).

IISE-γ knows the **maximum bias variation** `γ_m = max_{i,j} |ξ_{i,m} − ξ_{j,m}|` (how much fidelity
`m` can reorder the arms), or an upper bound `φ_m ≥ γ_m`, with `γ_M = 0`. It is IISE
(:class:`~mf_sched.policies.iise.IISE`) with two changes:

* elimination: `max_{j∈S} µ̂_j − B ≥ µ̂_i + B + γ_m`, i.e. `max µ̂ − µ̂_i ≥ 2B(t, δ/(KM)) + γ_m` (the
  bias enters once, as γ_m, instead of `2ξ_m`);
* thresholds: Eq. 8 with "4ξ's swapped with 2γ's": `α^γ_m = max_{m'>m} 2(γ_m − γ_{m'})√λ_m/(√λ_{m'} − √λ_m)`.
  The phase switch is unchanged (`α^γ_m ≥ 4B(t, δ/(KM))`).

Why it is correct: on the good event, if the best arm 1 were eliminated by `j` then
`µ_{j,m} ≥ µ_{1,m} + γ_m`, hence `µ_{j,M} − µ_{1,M} ≥ ξ_{1,m} − ξ_{j,m} + γ_m ≥ 0` — impossible.
Theory (Eq. 9) needs Assumption 1 with γ in place of ξ (footnote 5): :attr:`assumption1` checks it.

γ comes from the ladder (`FidelityLadder(..., gamma=...)`; the Poiani et al. instance files carry it)
or from the `gamma` argument. Always valid choices: `γ_m ≤ 2ξ_m` by definition (then IISE-γ *is*
IISE), and, for **underestimating** fidelities (`µ_{i,M} ≥ µ_{i,m}` for every arm — planning depth,
fewer training epochs on an accuracy that only grows), `φ_m = ξ_m` (§5, used for Yahtzee).

The ε-optimal variant (reconstruction, see IISE) stops when `4B + 2γ_m ≤ ε`: on the good event the
empirical best active arm is then `2B + γ_m ≤ ε/2`-optimal. Parallel workers and observation
semantics are as for IISE.

Example:
    >>> from mf_sched import FidelityLadder
    >>> from mf_sched.policies.iise_gamma import IISEGamma
    >>> ladder = FidelityLadder(costs=[1.0, 10.0], zeta=[0.2, 0.0], gamma=[0.05, 0.0])
    >>> p = IISEGamma(n_arms=3, ladder=ladder, delta=0.1, noise={"kind": "subgaussian", "sigma": 0.05})
    >>> while not p.done:
    ...     pulls = p.ask_batch()
    ...     p.tell_batch(pulls, [[0.2, 0.5, 0.9][q.arm] for q in pulls])
    >>> p.recommendation().arm, int(p.counts[:, 1].sum())   # decided at fidelity 0 (gaps exceed γ)
    (2, 0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mf_sched.ladder import FidelityLadder
from mf_sched.policies.iise import IISE
from mf_sched.registry import register

__all__ = ["IISEGamma"]


@register
class IISEGamma(IISE):
    """IISE-γ (Poiani et al. 2022, §5): IISE with the order-aware bias spread γ. See the module docstring.

    Args:
        n_arms: as :class:`~mf_sched.policies.iise.IISE`.
        ladder: as :class:`~mf_sched.policies.iise.IISE`.
        gamma: `γ_m` (or upper bounds `φ_m`) per fidelity, `γ_M = 0`; default: `ladder.gamma`.
        **kwargs: the other arguments of :class:`~mf_sched.policies.iise.IISE` (`thresholds` default to Eq. 8
            with 2γ in place of 4ξ).
    """

    name = "iise-gamma"
    paper = "Poiani, Metelli, Restelli 2022 (NeurIPS), Multi-Fidelity Best-Arm Identification, §5 (IISE-γ)"
    summary = "IISE with the order-aware maximum bias variation γ(m) instead of 2ζ(m)"
    _bias_name = "gamma"
    _eq8_factor = 2.0

    def __init__(
        self,
        n_arms: int,
        ladder: FidelityLadder,
        *,
        gamma: Sequence[float] | None = None,
        **kwargs: Any,
    ) -> None:
        self._gamma_raw = gamma
        super().__init__(n_arms, ladder, **kwargs)

    def _init_extra(self) -> None:
        gamma = self._gamma_raw
        if gamma is None:
            if self.ladder.gamma is None:
                raise ValueError(
                    "iise-gamma needs the maximum bias variation gamma(m): give gamma=[...] or a ladder with "
                    "gamma (gamma = 2*zeta is always valid; gamma = zeta is valid when every low fidelity "
                    "underestimates the true means)"
                )
            self._gamma_arg = None
            g = np.asarray(self.ladder.gamma, dtype=float)
        else:
            FidelityLadder._check_bias("gamma", tuple(float(x) for x in gamma), self.M)
            self._gamma_arg = [float(x) for x in gamma]
            g = np.asarray(self._gamma_arg, dtype=float)
        g.setflags(write=False)
        self.gamma = g

    def _extra_config(self) -> dict[str, Any]:
        return {"gamma": self._gamma_arg}

    def _bias(self) -> np.ndarray:
        return self.gamma

    def _elimination_bias(self, m: int) -> float:
        return float(self.gamma[m])

    def _epsilon_bias(self, m: int) -> float:
        return 2.0 * float(self.gamma[m])

    @classmethod
    def example_params(cls, instance: Any) -> dict[str, Any]:
        """`gamma = 2ζ` (always valid) when the instance's ladder has no γ.

        Args:
            instance: the simulated instance the policy will run on (its ladder's γ and ζ are read).
        """
        if instance.ladder.gamma is None:
            return {"gamma": [2.0 * z for z in instance.ladder.zeta]}
        return {}
