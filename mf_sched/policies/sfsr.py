"""SFSR — Score Function-based Successive Reject (Tang, Jain, Nayyar, Nuzzo 2024).

Paper: D. Tang, R. Jain, A. Nayyar, P. Nuzzo, *Pure Exploration for Constrained Best Mixed Arm
Identification with a Fixed Budget*, arXiv 2405.15090v1 — Algorithm 1, eqs. (4)–(8), Proposition 1,
Theorem 1.

Problem: `K` arms, each pull of arm `a` returns a reward and `L` costs; find the best *mixed* arm
`max_p rᵀp s.t. c p ≤ c̄` — precisely, its support `I*` in the standard-form LP (arms plus the
slacks of non-binding constraints, the "virtual arms"), with a fixed budget of `N` pulls. See
:mod:`mf_sched.constrained.mixture` for the LP notation (0-based: arm `a` is column `a`, the slack of constraint
`l` is column `K + l`).

Algorithm 1:

1. `Ψ(K0, L) = Σ_{j=1}^{K0} 1/max(2, j − L)`, `n_0 = 0`,
   `n_k = ⌈(1/Ψ) (N − K0)/(K + 1 − k)⌉` and `T_k = n_k − n_{k−1}` for `k = 1..K−1` (eq. 7);
2. `X = [K + L]` (real and virtual arms);
3. round `k = 1..K−1`: pull every remaining unknown arm `T_k` times; compute a score for every
   `a ∈ X` from the empirical `µ̂_X`, `Â_X` (eqs. 4–5) — the **intersection value** `f^IV` (eq. 6,
   `score="iv"`, the default; "SFSR") or the **Lagrangian** reduced cost `f^L` (eq. 8,
   `score="lagrangian"`; "SFSR-L"); if every score is `−∞` return ∅ ("no feasible mixture");
   otherwise remove the arm with the lowest score;
4. return `X` (`L + 1` indices) and, by Remark 2, the weights `x̂_X = Â_X^{-1} b`.

The total number of pulls never exceeds `N` (Proposition 1) and is usually below it: a rejected
virtual or known arm leaves its share unused (not redistributed, as in the paper). Theorem 1 bounds
the error probability of the IV score by `poly(K)·exp(−Ñ/H)` with the gaps of
:mod:`mf_sched.constrained.mixture_hardness`; SFSR-L has no guarantee (Appendix A shows it can fail).

Resolutions of ambiguities (where the paper is silent):

* Ties in the rejection ("arbitrary"): broken uniformly at random with the policy's seeded generator
  (`tie_break="random"`, the default; ties at `−∞` are common in early rounds), or the lowest index
  (`tie_break="lowest"`).
* Tolerances (not given): see :mod:`mf_sched.constrained.mixture` (singular: relative determinant `≤ 1e-12`;
  feasible: `x ≥ −1e-10`). A degenerate BFS still counts in eq. (6), as the definition says.
* The Lagrangian dual is solved with `scipy.optimize.linprog` (HiGHS); an unbounded dual means the
  restricted primal is infeasible (→ ∅); a non-unique dual (probability 0 under continuous noise) uses
  HiGHS' solution; numerical trouble falls back to the dual of the best feasible basis.
* SFSR-L depends on the units of the costs (the virtual-arm score `−λ_l` scales with `1/unit`; IV
  does not; the paper, whose experiments use `c̄ = 1`, does not choose a unit). `cost_scale="threshold"` (default)
  divides cost row `l` and `c̄_l` by `|c̄_l|` (by 1 when `c̄_l = 0`) before computing the Lagrangian score; with
  the paper's `c̄ = 1` this is the identity, so its experiments are reproduced unchanged. `"none"` uses raw
  units; a list gives explicit positive scales.
* `N > K0` is required so that `n_1 ≥ 1` (every unknown arm has data before the first score).
* `K ≥ 2` is required: with `K = 1` there are no rounds and the algorithm would answer without data.
* Remark 2's `x̂_X = Â_X^{-1} b`: if `Â_X` is singular or `x̂` has a component `< −1e-9` (only
  possible after exact ties), the LP restricted to `X` is solved with `linprog` instead; if that
  is infeasible the answer is "no feasible mixture". Tiny negatives are clipped to 0.
* Eq. (34)–(35)'s `3(L/2 + log K0)` is a typo for `3((L+1)/2 + log K0)` (Theorem 1, eq. 37); eq.
  (29)'s `n_k Δ_a` should be `n_k Δ_a²` — these affect only the bounds in
  :mod:`mf_sched.constrained.mixture_hardness`.
* Pulls adopted from outside a round (:meth:`~mf_sched.policy.Policy.adopt` with no matching slot) are
  kept in the shared reward statistics but not in the scores: the schedule's guarantee assumes every
  remaining arm has exactly `n_k` samples.

The recommendation (:meth:`recommendation`) carries the answer as a :class:`~mf_sched.constrained.mixture.Mixture`
in `Recommendation.mixture` (support, arms, weights, expected reward and costs under the empirical
means); `Recommendation.arm` is the mixture's heaviest arm (a convenience — the answer is the
mixture), `None` with `reason="infeasible"` when SFSR declares the problem infeasible. It is never
`certified` (a fixed-budget method). Before the schedule ends it is the LP over the arms still in
`X` with the current means (`reason="in-progress"` or `"budget"`).

Parallel workers: a round (`T_k` pulls of every remaining unknown arm, interleaved arm by arm) is
handed out at once and the next round waits for all of it (a barrier); W outstanding pulls change the
wall-clock time, never the decisions. Semantics: independent pulls (each pull is a fresh sample of the
reward and all costs).

Example (L = 1: maximise reward subject to mean cost ≤ 1; the optimum mixes arms 0 and 1):

    >>> import numpy as np
    >>> from mf_sched.policies.sfsr import SFSR
    >>> rewards, costs = np.array([0.5, 1.0, 0.3, 0.2]), np.array([[0.5], [1.5], [0.9], [0.2]])
    >>> p = SFSR(n_arms=4, thresholds=[1.0], pull_budget=4000, seed=0)
    >>> rng = np.random.default_rng(1)
    >>> while not p.done:
    ...     batch = p.ask_batch()
    ...     arms = np.array([q.arm for q in batch])
    ...     obs = np.column_stack([rewards[arms], costs[arms]]) + 0.1 * rng.standard_normal((arms.size, 2))
    ...     p.tell_batch(batch, obs)
    >>> mix = p.recommendation().mixture
    >>> mix.support, [round(w, 1) for w in mix.weights], p.n_pulls <= 4000
    ((0, 1), [0.5, 0.5], True)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from mf_sched._validate import check_choice
from mf_sched.constrained.mixture import SINGULAR_TOL, Mixture, iv_scores, lagrangian_scores
from mf_sched.ladder import FidelityLadder
from mf_sched.policies._mixture_base import MixturePolicy
from mf_sched.registry import register

__all__ = ["SFSR", "sfsr_psi", "sfsr_schedule"]


def sfsr_psi(K0: int, L: int) -> float:
    """`Ψ(K0, L) = Σ_{j=1}^{K0} 1/max(2, j − L)` (eq. 7); `Ψ(K, 0)` is Successive Rejects' log-bar.

    Args:
        K0: the number of unknown (pulled) arms, `≥ 1`.
        L: the number of constraints, `≥ 0`.

    >>> round(sfsr_psi(16, 1), 6), round(sfsr_psi(24, 2), 6), round(sfsr_psi(16, 0), 6)
    (3.318229, 4.190813, 2.880729)
    """
    j = np.arange(1, K0 + 1)
    return float(np.sum(1.0 / np.maximum(2, j - L)))


def sfsr_schedule(K: int, K0: int, L: int, N: int) -> np.ndarray:
    """`n_k` for `k = 0..K−1` (`n_0 = 0`): after round `k` every remaining unknown arm has been
    pulled `n_k` times (eq. 7). `N > K0` makes `n_1 ≥ 1`.

    Args:
        K: the number of arms, known ones included (there are `K − 1` rounds).
        K0: the number of unknown (pulled) arms, `≤ K`.
        L: the number of constraints, `≥ 0`.
        N: the pull budget, `> K0`.

    >>> sfsr_schedule(16, 16, 1, 1000)[1:].tolist()
    [19, 20, 22, 23, 25, 27, 30, 33, 38, 43, 50, 60, 75, 99, 149]
    """
    if N <= K0:
        raise ValueError(f"pull_budget N = {N} is out of range; accepted: N > K0 = {K0} (every arm needs a pull)")
    k = np.arange(1, K)
    n = np.ceil((N - K0) / (sfsr_psi(K0, L) * (K + 1 - k)) - 1e-9).astype(np.int64)
    return np.concatenate([[0], n])


def _cost_scale(spec: Any, thresholds: np.ndarray) -> tuple[Any, np.ndarray | None]:
    """(JSON-safe spec, scale vector or None) for SFSR-L's cost normalisation."""
    if isinstance(spec, str):
        check_choice("cost_scale", spec, ("threshold", "none"))
        if spec == "none":
            return spec, None
        a = np.abs(thresholds)
        return spec, np.where(a > 0, a, 1.0)
    s = np.array(spec, dtype=float)
    if s.shape != thresholds.shape or not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise ValueError(
            f"cost_scale = {spec!r} is out of range; accepted: 'threshold', 'none' or {thresholds.size} "
            "finite numbers > 0 (one per constraint)"
        )
    return s.tolist(), s


@register
class SFSR(MixturePolicy):
    """Score Function-based Successive Reject for constrained best mixed arm identification.

    Args:
        n_arms: see :class:`~mf_sched.policies._mixture_base.MixturePolicy`.
        ladder: see :class:`~mf_sched.policies._mixture_base.MixturePolicy`.
        **kwargs: `thresholds`, `pull_budget`, `known_rewards`, `known_costs`, `noise`, `budget`, `seed`; see
            :class:`~mf_sched.policies._mixture_base.MixturePolicy`.
        score: `"iv"` (intersection value, eq. 6; the paper's SFSR, with Theorem 1's guarantee) or
            `"lagrangian"` (reduced cost of the empirical dual, eq. 8; SFSR-L).
        tie_break: `"random"` (default) or `"lowest"` (lowest index among the lowest scores).
        cost_scale: cost normalisation for the Lagrangian score (see the module docstring).
    """

    name = "sfsr"
    paper = "Tang, Jain, Nayyar, Nuzzo 2024 (arXiv 2405.15090) Alg. 1, eqs. (6)-(8)"
    summary = "Successive rejects for the best mixture of arms under expected-cost constraints (fixed budget N)"
    _state_attrs = ("_vsum", "_n", "_alive", "_k", "_infeasible", "_eliminated")

    def __init__(
        self,
        n_arms: int,
        ladder: FidelityLadder | Mapping[str, Any] | None = None,
        *,
        score: str = "iv",
        tie_break: str = "random",
        cost_scale: Any = "threshold",
        **kwargs: Any,
    ) -> None:
        super().__init__(n_arms, ladder, **kwargs)
        self.score = check_choice("score", score, ("iv", "lagrangian"))
        self.tie_break = check_choice("tie_break", tie_break, ("random", "lowest"))
        cs_spec, self._scale = _cost_scale(cost_scale, self.thresholds)
        if self.K < 2:
            raise ValueError(f"SFSR needs K >= 2 arms in all (pulled + known), got K = {self.K}")
        self.schedule = sfsr_schedule(self.K, self.n_arms, self.L, self.pull_budget)
        self._set_problem_config(score=self.score, tie_break=self.tie_break, cost_scale=cs_spec)
        self._alive = np.ones(self.K + self.L, dtype=bool)
        self._k = 1
        self._infeasible = False
        self._eliminated: list[int] = []
        self._start()

    # ----------------------------------------------------------------------------- rounds
    def _next_round(self) -> tuple[np.ndarray, np.ndarray] | None:
        while not self._infeasible and self._k <= self.K - 1:
            T = int(self.schedule[self._k] - self.schedule[self._k - 1])
            arms = np.flatnonzero(self._alive[: self.n_arms])
            if T > 0 and arms.size:
                pulls = np.tile(arms, T)
                return pulls, np.zeros(pulls.size, dtype=np.int64)
            self._reject()  # a round without pulls (T_k = 0, or only known arms left): score and reject
        return None

    def _round_complete(self) -> None:
        self._reject()

    def scores(self) -> np.ndarray:
        """Scores of every standard-form column with the current means (`−inf` for rejected ones)."""
        alive = self._alive
        if self.score == "iv":
            return iv_scores(*self._empirical_problem(), alive)
        return lagrangian_scores(*self._empirical_problem(self._scale), alive)[0]

    def _reject(self) -> None:
        s = self.scores()
        cand = np.flatnonzero(self._alive)
        sc = s[cand]
        if not np.isfinite(sc.max()):
            self._infeasible = True
            return
        ties = cand[sc == sc.min()]
        a = int(ties[0]) if self.tie_break == "lowest" or ties.size == 1 else int(ties[self._rng.integers(ties.size)])
        self._alive[a] = False
        self._eliminated.append(a)
        self._k += 1

    # ----------------------------------------------------------------------------- answer
    @property
    def remaining(self) -> tuple[int, ...]:
        """Standard-form columns still in `X` (arms `< K`, slacks `K + l`)."""
        return tuple(int(i) for i in np.flatnonzero(self._alive))

    def _final_mixture(self) -> tuple[Mixture, str]:
        if self._infeasible:
            return (
                Mixture.infeasible(
                    self.K,
                    self.thresholds,
                    f"the empirical LP over the remaining arms is infeasible (round {self._k})",
                ),
                "infeasible",
            )
        X = np.flatnonzero(self._alive)
        mu, A, b = self._empirical_problem()
        AX = A[:, X]
        r, c = self.empirical_means()
        det = np.linalg.det(AX)
        if abs(det) > SINGULAR_TOL * np.prod(np.linalg.norm(AX, axis=0)):
            x = np.linalg.solve(AX, b)
            if np.all(x >= -1e-9):
                x = np.maximum(x, 0.0)
                arm = X < self.K
                if arm.any():
                    x[arm] /= x[arm].sum()
                    return Mixture.from_solution(X, x, r, c, self.thresholds, "SFSR: x = A_X^-1 b (Remark 2)"), (
                        "finished"
                    )
        mix = self._lp_mixture(X, "SFSR: LP restricted to the final set (Remark 2 fallback)")
        return mix, "finished" if mix.feasible else "infeasible"

    def _interim_columns(self) -> np.ndarray:
        return self._alive.copy()

    def _details(self) -> dict[str, Any]:
        d = super()._details()
        d.update(
            score=self.score,
            round=int(min(self._k, self.K - 1)),
            remaining=list(self.remaining),
            eliminated=list(self._eliminated),
        )
        return d

    def _describe(self) -> dict[str, Any]:
        d = super()._describe()
        d.update(score=self.score, remaining=len(self.remaining) if self.K + self.L > 10 else list(self.remaining))
        return d
