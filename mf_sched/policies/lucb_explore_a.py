"""LUCB with EXPLORE-A: a UCB over fidelities for each explored arm (Wang, Wu, Chen, Lui 2023, Alg. 2, lines 1–3).

Paper: X. Wang, Q. Wu, W. Chen, J. C. S. Lui, *Multi-Fidelity Multi-Armed Bandits Revisited*, NeurIPS 2023,
§3.2.2 (Algorithm 2, EXPLORE-A; Eq. 7 / Theorem 3.4 for its cost bound), run inside the LUCB framework
of Algorithm 1 (:mod:`mf_sched.policies._mf_lucb`).

EXPLORE-A(k) pulls arm `k` at the fidelity maximising the "fidelity UCB" of its effectiveness
`Δ̃_k^(m)/√λ(m)`:

`f-UCB_k^(m) = Δ̂_k^(m)/√λ(m) + √(2 log N_k / (λ(m) N_k^(m)))`

with the online ancillary gaps `Δ̂_k^(m) = µ̃1 − (µ̂_k^(m) + ζ(m))` for `k ≠ ℓ_t` and
`Δ̂_{ℓ_t}^(m) = (µ̂_{ℓ_t}^(m) − ζ(m)) − µ̃2` for the round's leader, `N_k` the arm's total pulls (counts
taken before the pull; `log max(N_k, 1)`), and `+∞` for a fidelity without samples (each fidelity is
tried once first; ties broken at random). The extraction lost "/√λ(m) + √(" — the reading above is
confirmed by the proof of Lemma E.2 and by Poiani et al. 2024's re-implementation (`riccardopoiani/adv-mf-bai`,
`algorithms/lucb.py`). For
σ-sub-Gaussian rewards the exploration bonus is scaled like UCB1's, `2σ√(2 log N_k/N_k^(m))/√λ(m)`
(:func:`mf_sched.confidence.ucb1_bonus`; σ = 1/2 is the paper's [0, 1] formula).

The prior bounds are required arguments: `mu1_upper` = µ̃1 ≥ µ_1^(M) (the best arm's true mean) and
`mu2_lower` = µ̃2 ≤ µ_2^(M) (the second best's). Wrong priors do not break δ-correctness (stopping uses
only the β-intervals) but change which fidelities are sampled; loose priors push the procedure toward
cheap fidelities, where it may never stop (see :mod:`mf_sched.policies._mf_lucb`): keep the
`budget`/`max_rounds` caps.

Example (the Table 1 instance of Wang et al., Bernoulli rewards):
    >>> from mf_sched import Instance, FidelityLadder, run_policy
    >>> from mf_sched.policies.lucb_explore_a import LUCBExploreA
    >>> means = [[0.7, 0.8, 0.9], [0.75, 0.775, 0.8], [0.5, 0.6, 0.7], [0.5, 0.55, 0.6], [0.3, 0.45, 0.5]]
    >>> inst = Instance(means, FidelityLadder([1, 1.1, 1.2], [0.3, 0.15, 0.0]), {"kind": "bernoulli"})
    >>> p = LUCBExploreA(n_arms=5, ladder=inst.ladder, delta=0.1, mu1_upper=0.95, mu2_lower=0.75, seed=0)
    >>> r = run_policy(p, inst, seed=0)
    >>> r.recommendation.arm, r.recommendation.certified
    (0, True)
"""

from __future__ import annotations

import math

import numpy as np

from mf_sched.confidence import ucb1_bonus
from mf_sched.policies._mf_lucb import PriorBoundsLUCB
from mf_sched.policy import argmax_random
from mf_sched.registry import register

__all__ = ["LUCBExploreA"]


@register
class LUCBExploreA(PriorBoundsLUCB):
    """LUCB (Wang et al. 2023, Alg. 1) with EXPLORE-A (Alg. 2). See the module docstring.

    Arguments as :class:`~mf_sched.policies._mf_lucb.PriorBoundsLUCB` (the prior bounds are required).
    """

    name = "lucb-explore-a"
    paper = "Wang, Wu, Chen, Lui 2023 (NeurIPS), Multi-Fidelity MAB Revisited, Alg. 1 + EXPLORE-A (Alg. 2)"
    summary = "LUCB over arms, a UCB over fidelities per explored arm (needs prior bounds mu1_upper, mu2_lower)"
    explore_name = "EXPLORE-A (UCB over fidelities)"

    def f_ucb(self, k: int) -> np.ndarray:
        """The fidelity UCB index of arm `k` for every fidelity (`inf` where it has no sample).

        Args:
            k: the arm, an integer in `0 .. K − 1`.
        """
        n = self._counts[k]
        c = float(ucb1_bonus(1, max(int(n.sum()), 1), self.sigma))  # 2σ√(2 log N_k), divided by √N_k^(m) below
        f = (self.delta_hat(k) + c / np.sqrt(np.maximum(n, 1))) / self._sqrt_lam
        return np.where(n > 0, f, np.inf)

    def _explore(self, k: int, t: int) -> list[int]:
        # f_ucb(k) element by element (the same arithmetic, without numpy calls on M-vectors)
        counts = self._counts[k].tolist()
        c = float(ucb1_bonus(1, max(sum(counts), 1), self.sigma))
        lead = k == self._leader
        f = []
        for sm, n, z, sl in zip(self._sums[k].tolist(), counts, self._zeta_list, self._sqrt_lam_list):
            if n == 0:
                f.append(math.inf)
                continue
            mu = sm / n
            dh = (mu - z) - self.mu2_lower if lead else self.mu1_upper - (mu + z)
            f.append((dh + c / math.sqrt(n)) / sl)
        return [argmax_random(f, self._rng)]
