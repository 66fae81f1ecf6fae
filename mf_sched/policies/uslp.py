"""USLP — Uniform Sampling + Linear Program, the baseline of Tang, Jain, Nayyar, Nuzzo (2024).

Paper: *Pure Exploration for Constrained Best Mixed Arm Identification with a Fixed Budget*, arXiv
2405.15090v1, Section 4.3 and Section 5 ("pull each arm ⌊N/K⌋ times, compute the empirical means of
rewards and costs of all arms, and then solve the empirical version of (SFLP)"); Theorem 2 (eq. 14)
bounds its error exponent by `min{Δ_0², Δ_(L+2)²}/(2K)`, a factor `K` worse than the lower bound.

1. pull every unknown arm `m` times in one round;
2. build the empirical `µ̂`, `Â` over all `K + L` columns (eqs. 4–5);
3. solve `max {µ̂ᵀx : Âx = b, x ≥ 0}`; infeasible → "no feasible mixture", otherwise the optimal basis
   (support, slacks of non-binding constraints included) and its weights.

Resolutions (USLP as described in Tang et al. 2024, §5; the paper is silent on known arms and on degenerate LP
solutions):

* `m = ⌊N/K0⌋` by default (`divide_by="unknown-arms"`): known arms need no pulls, so this is the
  fairer baseline when `K0 < K`; `divide_by="all-arms"` gives the paper's literal `⌊N/K⌋`. The two
  agree when every arm is unknown (all of the paper's experiments). The leftover `N − K0·m` pulls are
  unused, as in the paper.
* The LP is solved with `scipy.optimize.linprog` (HiGHS dual simplex, which returns a vertex;
  `solver="highs"`) and the support is `{i : x_i > 1e-9}`; a degenerate empirical optimum
  (probability 0 under continuous noise) then has fewer than `L + 1` indices and can never equal
  `I*`. `solver="enumerate"` takes the best feasible basis by exhaustive enumeration instead.

Parallel workers: the single round (`K0·m` pulls) is handed out at once. Semantics: independent
pulls. The recommendation is a :class:`~mf_sched.constrained.mixture.Mixture`, as for
:class:`~mf_sched.policies.sfsr.SFSR`.

Example:
    >>> import numpy as np
    >>> from mf_sched.policies.uslp import USLP
    >>> rewards, costs = np.array([0.5, 1.0, 0.3]), np.array([[0.5], [1.5], [0.9]])
    >>> p = USLP(n_arms=3, thresholds=[1.0], pull_budget=3000, seed=0)
    >>> batch = p.ask_batch()
    >>> arms = np.array([q.arm for q in batch])
    >>> noise = 0.1 * np.random.default_rng(0).standard_normal((arms.size, 2))
    >>> p.tell_batch(batch, np.column_stack([rewards[arms], costs[arms]]) + noise)
    >>> p.done, p.recommendation().mixture.support
    (True, (0, 1))
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from mf_sched._validate import check_choice
from mf_sched.constrained.mixture import Mixture, solve_mixture_lp
from mf_sched.ladder import FidelityLadder
from mf_sched.policies._mixture_base import MixturePolicy
from mf_sched.registry import register

__all__ = ["USLP"]


@register
class USLP(MixturePolicy):
    """Uniform sampling followed by the empirical LP (the paper's baseline).

    Args:
        n_arms: see :class:`~mf_sched.policies._mixture_base.MixturePolicy`.
        ladder: see :class:`~mf_sched.policies._mixture_base.MixturePolicy`.
        **kwargs: `thresholds`, `pull_budget`, `known_rewards`, `known_costs`, `noise`, `budget`, `seed`; see
            :class:`~mf_sched.policies._mixture_base.MixturePolicy`.
        divide_by: `"unknown-arms"` (`⌊N/K0⌋` pulls per arm, default) or `"all-arms"` (`⌊N/K⌋`).
        solver: `"highs"` (`linprog`, default) or `"enumerate"` (exhaustive basis enumeration).
    """

    name = "uslp"
    paper = "Tang, Jain, Nayyar, Nuzzo 2024 (arXiv 2405.15090) Sec. 4.3/5, USLP baseline"
    summary = "Uniform sampling of every arm, then the empirical LP (baseline for sfsr)"
    _state_attrs = ("_vsum", "_n", "_issued")

    def __init__(
        self,
        n_arms: int,
        ladder: FidelityLadder | Mapping[str, Any] | None = None,
        *,
        divide_by: str = "unknown-arms",
        solver: str = "highs",
        **kwargs: Any,
    ) -> None:
        super().__init__(n_arms, ladder, **kwargs)
        self.divide_by = check_choice("divide_by", divide_by, ("unknown-arms", "all-arms"))
        self.solver = check_choice("solver", solver, ("highs", "enumerate"))
        self.per_arm = self.pull_budget // (self.n_arms if self.divide_by == "unknown-arms" else self.K)
        if self.per_arm < 1:
            raise ValueError(
                f"pull_budget N = {self.pull_budget} is out of range; accepted: N >= "
                f"{self.n_arms if self.divide_by == 'unknown-arms' else self.K} (one pull per arm)"
            )
        self._set_problem_config(divide_by=self.divide_by, solver=self.solver)
        self._issued = False
        self._start()

    def _next_round(self) -> tuple[np.ndarray, np.ndarray] | None:
        if self._issued:
            return None
        self._issued = True
        arms = np.tile(np.arange(self.n_arms), self.per_arm)
        return arms, np.zeros(arms.size, dtype=np.int64)

    def _final_mixture(self) -> tuple[Mixture, str]:
        r, c = self.empirical_means()
        mix = solve_mixture_lp(r, c, self.thresholds, method=self.solver, note="USLP: empirical LP")
        return mix, "finished" if mix.feasible else "infeasible"

    def _details(self) -> dict[str, Any]:
        d = super()._details()
        d.update(per_arm=self.per_arm)
        return d
