"""MFE: Maximum Fidelity Exploit, the over-exploiting IISE baseline of Poiani, Metelli, Restelli (2022, §7).

Paper: R. Poiani, A. M. Metelli, M. Restelli, *Multi-Fidelity Best-Arm Identification*, NeurIPS 2022,
Section 7: "a version of IISE that chooses the thresholds α_m so as to exploit every fidelity as much as
possible (i.e., α_m close to 0)". The paper does not give the thresholds; the authors' released code
(`riccardopoiani/mf-bai`, `MultiFidelitySuccessiveEliminationMaxBoundDiscardAll`) uses
`α_m = c·ξ_m` for `m < M` (stored as `4ξ_m + c·ξ_m`) with `c = --discard-all-th`. Reproducing
Table 1 identifies `c = 0.1` on Synthetic A/B and `c = 0.005` on Yahtzee (the text does not give the MFE
thresholds, §7; other
values give very different numbers, e.g. Synthetic A: c = 0.05 → 818 %, c = 0.5 → 17 % of SE).

Everything else is IISE (:class:`~mf_sched.policies.iise.IISE`): Eq. 3 elimination with `2B(t, δ/(KM)) +
2ξ_m`, per-phase statistics, the same switch rule — so MFE is δ-correct too (Theorem 2 holds for any
`α_m > 0`); it only spends far more. It exists to show that the threshold choice of Eq. 8 matters.

The authors' Yahtzee runs fast-forward MFE's phases with precomputed "options" that assume no elimination
happens in them; mf-sched's reproduction does the same only where it can certify it (see
`benchmarks/reproduce_poiani2022.py`), never inside the policy.

Example:
    >>> from mf_sched import FidelityLadder
    >>> from mf_sched.policies.mfe import MFE
    >>> p = MFE(n_arms=3, ladder=FidelityLadder([1.0, 10.0], [0.2, 0.0]), delta=0.1, c=0.1)
    >>> p.thresholds.round(6).tolist(), p.phase_lengths   # α = c·ξ: a long first phase
    ([0.02, 0.0], [644673, None])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mf_sched._validate import check_real
from mf_sched.ladder import FidelityLadder
from mf_sched.policies.iise import IISE
from mf_sched.registry import register

__all__ = ["MFE"]


@register
class MFE(IISE):
    """Maximum Fidelity Exploit (Poiani et al. 2022, §7): IISE with thresholds `α_m = c·ξ_m`.

    Args:
        c: the threshold factor `c > 0` (default 0.1, the synthetic-domain value of Table 1; 0.005
            reproduces Yahtzee).
        n_arms: as :class:`~mf_sched.policies.iise.IISE`.
        ladder: as :class:`~mf_sched.policies.iise.IISE`.
        delta: as :class:`~mf_sched.policies.iise.IISE`.
        fidelities: as :class:`~mf_sched.policies.iise.IISE`.
        epsilon: as :class:`~mf_sched.policies.iise.IISE`.
        radius: as :class:`~mf_sched.policies.iise.IISE`.
        noise: as :class:`~mf_sched.policies.iise.IISE`.
        budget: as :class:`~mf_sched.policies.iise.IISE`.
        seed: as :class:`~mf_sched.policies.iise.IISE`.
    """

    name = "iise-max-exploit"
    paper = "Poiani, Metelli, Restelli 2022 (NeurIPS), §7 baseline MFE (IISE with α_m = c·ξ_m, authors' code)"
    summary = "IISE with near-zero thresholds: exploits every fidelity as long as possible (over-exploiting baseline)"

    def __init__(
        self,
        n_arms: int,
        ladder: FidelityLadder,
        *,
        delta: float = 0.05,
        c: float = 0.1,
        fidelities: Sequence[int] | str | None = None,
        epsilon: float = 0.0,
        radius: str = "theory",
        noise: Any = None,
        budget: float | None = None,
        seed: int | None = None,
    ) -> None:
        self.c = check_real("c", c, gt=0.0)
        super().__init__(
            n_arms,
            ladder,
            delta=delta,
            fidelities=fidelities,
            epsilon=epsilon,
            radius=radius,
            noise=noise,
            budget=budget,
            seed=seed,
        )

    def _extra_config(self) -> dict[str, Any]:
        return {"c": self.c}

    def _default_thresholds(self, used: list[int] | None) -> np.ndarray:
        xi = np.asarray(self.ladder.zeta, dtype=float)
        M = self.M
        alpha = np.full(M, np.inf)
        for m in range(M) if used is None else used:
            alpha[m] = self.c * xi[m] if m < M - 1 else 0.0
        return alpha
