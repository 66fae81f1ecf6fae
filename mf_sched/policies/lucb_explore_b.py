"""LUCB with EXPLORE-B: explore every fidelity, then commit to a good one (Wang, Wu, Chen, Lui 2023, Alg. 2, 4–11).

Paper: X. Wang, Q. Wu, W. Chen, J. C. S. Lui, *Multi-Fidelity Multi-Armed Bandits Revisited*, NeurIPS 2023,
§3.2.2 (Algorithm 2, EXPLORE-B; Eq. 6 / Lemma E.3; Eq. 8 for its cost bound; Remark A.2), run inside the
LUCB framework of Algorithm 1 (:mod:`mf_sched.policies._mf_lucb`).

EXPLORE-B(k): while arm `k` is not committed, pull it once at **every** fidelity (a uniform sweep costing
`Σ_m λ(m)`); after the sweep, with `n` its per-fidelity count, commit to
`m̂*_k = argmax_m Δ̂_k^(m)/√λ(m)` if

`max_m Δ̂_k^(m)/√λ(m) ≥ 3 · β(n, 1, δ)/√λ(1) = 3 · 2σ √(log(L/δ) / (λ(1)·n))`

(σ = 1/2 gives the paper's `3√(log(L/δ)/(λ(1) n))`). Once committed, every EXPLORE-B(k) pulls `(k, m̂*_k)`;
an arm never un-commits. `Δ̂` is the online ancillary gap with the **round's** leader (`Δ̂` depends on `ℓ_t`; the
paper does not say which round's), and
the test runs only for arms swept in the round, after the sweep.

Resolved ambiguities: the log term is `log(L/δ)` as in the algorithm box (the proof of Lemma E.3 writes
`log(2KM/δ)`; with `L = 4KM` they differ only inside the log); the factor 3 is
`(1 + C)/(1 − C)` with `C = 1/2` (Remark A.2); `n` is the count at the maximising fidelity (equal
across fidelities before commitment unless adopted extras added samples).

Prior bounds `mu1_upper` (µ̃1) and `mu2_lower` (µ̃2) are required, as for EXPLORE-A. On
`poiani2024-lucb-nonstop.json` (µ̃1 = 0.6, µ̃2 = 0.5) EXPLORE-B commits both arms to fidelity 1, whose bias
keeps the intervals from separating: it never stops; the `budget` / `max_rounds` caps end such runs.

Example (a hand-made commit: both arms are most effective at the cheap fidelity):
    >>> from mf_sched import FidelityLadder
    >>> from mf_sched.policies.lucb_explore_b import LUCBExploreB
    >>> p = LUCBExploreB(n_arms=2, ladder=FidelityLadder([1.0, 4.0], [0.05, 0.0]), delta=0.1,
    ...                  mu1_upper=0.9, mu2_lower=0.1, noise={"kind": "subgaussian", "sigma": 0.01}, seed=1)
    >>> p.describe()["leader"]   # round 1: all UCBs are +inf, the leader is drawn at random
    0
    >>> pulls = p.ask_batch()
    >>> sorted((q.arm, q.fidelity) for q in pulls)   # both arms swept over both fidelities
    [(0, 0), (0, 1), (1, 0), (1, 1)]
    >>> p.tell_batch(pulls, [0.8 if q.arm == 0 else 0.2 for q in pulls])
    >>> p.committed.tolist()   # Δ̂/√λ = (0.65, 0.35) for both arms ≥ 3·2σ√(log(L/δ)/1) = 0.135
    [0, 0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mf_sched._serialize import StateFormatError
from mf_sched.confidence import wang_beta
from mf_sched.policies._mf_lucb import PriorBoundsLUCB
from mf_sched.policy import _state_arms
from mf_sched.registry import register

__all__ = ["LUCBExploreB"]


@register
class LUCBExploreB(PriorBoundsLUCB):
    """LUCB (Wang et al. 2023, Alg. 1) with EXPLORE-B (Alg. 2). See the module docstring.

    Arguments as :class:`~mf_sched.policies._mf_lucb.PriorBoundsLUCB` (the prior bounds are required).
    """

    name = "lucb-explore-b"
    paper = "Wang, Wu, Chen, Lui 2023 (NeurIPS), Multi-Fidelity MAB Revisited, Alg. 1 + EXPLORE-B (Alg. 2)"
    summary = "LUCB over arms; sweep all fidelities until one is provably good, then commit (needs mu1/mu2 priors)"
    explore_name = "EXPLORE-B (explore then commit)"
    _state_attrs = PriorBoundsLUCB._state_attrs + ("_committed", "_swept")
    _variable_shape = PriorBoundsLUCB._variable_shape + ("_swept",)  # the arms swept in the current round

    def _validate_state(self, sub: dict[str, Any]) -> None:
        super()._validate_state(sub)
        _state_arms(sub, "_swept", self.n_arms)
        committed = sub["_committed"]
        if committed.size and (committed.min() < -1 or committed.max() >= self.M):
            raise StateFormatError(f"state field _committed must hold -1 or a fidelity in 0..{self.M - 1}")

    def _init_explore(self) -> None:
        self._committed = np.full(self.n_arms, -1, dtype=np.int64)
        self._swept = np.zeros(0, dtype=np.int64)

    @property
    def committed(self) -> np.ndarray:
        """Committed fidelity `m̂*_k` per arm (−1: not committed yet)."""
        return self._committed.copy()

    def commit_threshold(self, n: int) -> float:
        """`3 · 2σ √(log(L/δ)/(λ(1) n))`, what the best effectiveness must reach to commit after `n` sweeps.

        Args:
            n: the number of completed sweeps of the arm (its per-fidelity count), `≥ 1`.
        """
        return float(3.0 * wang_beta(n, 1, self.delta, self.L, self.sigma) / self._sqrt_lam[0])

    def _explore(self, k: int, t: int) -> list[int]:
        m = int(self._committed[k])
        if m >= 0:
            return [m]
        self._swept = np.append(self._swept, k)
        return list(range(self.M))

    def _next_round(self) -> tuple[np.ndarray, np.ndarray] | None:
        self._swept = np.zeros(0, dtype=np.int64)
        return super()._next_round()

    def _after_round(self) -> None:
        for k in self._swept.tolist():
            if self._committed[k] >= 0:
                continue
            eff = self.delta_hat(k) / self._sqrt_lam
            m = int(np.argmax(eff))
            n = int(self._counts[k, m])
            if n > 0 and eff[m] >= self.commit_threshold(n):
                self._committed[k] = m
        self._swept = np.zeros(0, dtype=np.int64)

    def _describe(self) -> dict[str, Any]:
        d = super()._describe()
        d["committed"] = self._committed.tolist()
        return d
