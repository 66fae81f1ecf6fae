"""Linear programs of constrained best *mixed* arm identification (Tang, Jain, Nayyar, Nuzzo 2024).

Paper: *Pure Exploration for Constrained Best Mixed Arm Identification with a Fixed Budget*
(arXiv 2405.15090v1), Section 2–3 (eqs. 1–8). K arms, arm `a` has a mean reward `r_a` and `L` mean
costs `c_{l,a}`; a *mixed arm* `p` (a distribution over arms) is deployed by drawing arm `a` with
probability `p_a`. The best mixed arm solves

    (LP)    max_p  rᵀp   s.t.   Σ_a c_{l,a} p_a ≤ c̄_l  (l = 1..L),   p ≥ 0,  Σ_a p_a = 1.

In standard form (eq. 3), with the slack `s_l` of constraint `l` treated as a *virtual arm*:
`x = (p; s) ∈ ℝ^{K+L}`, `µ = (r; 0_L)`, `A = [[cᵀ-rows, I_L], [1_Kᵀ, 0_Lᵀ]]` of shape
`(L+1) × (K+L)` and `b = (c̄; 1)`: `max {µᵀx : A x = b, x ≥ 0}` (SFLP). **Indices are 0-based here**:
arm `a` is column `a` (`0 ≤ a < K`) and the slack of constraint `l` (0-based) is column `K + l`;
the paper's arm `a` is our `a − 1` and its virtual arm `K + l` is our `K + l − 1`.

A *basis* is a set `J` of `L + 1` columns with `A_J` invertible; it is *feasible* when
`x_J = A_J^{-1} b ≥ 0` (Definition 1) and its value is `µ_Jᵀ x_J`. The answer of the identification
problem is the support `I*` of the optimal basic solution, slacks of non-binding constraints included
(Assumption 1: unique and non-degenerate, `|I*| = L + 1`), or "infeasible".

This module holds the LP machinery every constrained policy and runner shares:

* :class:`Mixture` — the public answer object (support, arms, weights, expected reward and costs).
* :func:`standard_form` — (µ, A, b) of eq. (3).
* :func:`feasible_bases` — vectorised enumeration of the feasible bases of a set of columns.
* :func:`iv_scores` — the intersection-value score of eq. (6) (no LP solver needed).
* :func:`lagrangian_scores` — the Lagrangian score of eq. (8) from the empirical dual, solved with
  `scipy.optimize.linprog` (HiGHS).
* :func:`solve_mixture_lp` — the optimal mixture with `linprog` (HiGHS dual simplex, a vertex).
* :func:`best_basis` / :func:`check_assumption` — exact enumeration, the second-best basis value and
  Assumption 1.

Tolerances (our choice: Tang et al. 2024 give none): a basis is singular when `|det A_J|` is at most
`1e-12` times the product of its column norms (scale-free Hadamard bound); `x_J ≥ −1e-10` counts as
feasible; a variable is in a support when it is `> 1e-9`.

Example (two arms, one cost: the optimum mixes them so that the mean cost is exactly 1):

    >>> m = solve_mixture_lp(rewards=[0.5, 1.0], costs=[[0.5], [1.5]], thresholds=[1.0])
    >>> m.feasible, m.support, [round(w, 6) for w in m.weights], round(m.reward, 6)
    (True, (0, 1), [0.5, 0.5], 0.75)
    >>> solve_mixture_lp([0.5, 1.0], [[2.0], [3.0]], [1.0]).feasible   # every arm costs too much
    False
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import linprog

__all__ = [
    "Mixture",
    "AssumptionCheck",
    "standard_form",
    "check_problem",
    "feasible_bases",
    "iv_scores",
    "lagrangian_scores",
    "solve_mixture_lp",
    "best_basis",
    "check_assumption",
    "SINGULAR_TOL",
    "FEASIBLE_TOL",
    "SUPPORT_TOL",
    "MAX_BASES",
]

#: relative singularity threshold: |det A_J| ≤ SINGULAR_TOL · Π_j ‖A_J[:, j]‖
SINGULAR_TOL = 1e-12
#: x_J ≥ −FEASIBLE_TOL counts as feasible
FEASIBLE_TOL = 1e-10
#: a variable belongs to a support when it is > SUPPORT_TOL
SUPPORT_TOL = 1e-9
#: the largest number of candidate bases enumerated at once (memory guard; IV scores beyond this are
#: refused with a message that points to the Lagrangian score)
MAX_BASES = 5_000_000


# ---------------------------------------------------------------------------------------------- problem
def json_number(x: float | None) -> float | None:
    """`x` as a JSON-safe float (None for None, NaN and ±inf)."""
    return None if x is None or not math.isfinite(x) else float(x)


def check_problem(rewards: Any, costs: Any, thresholds: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate (rewards (K,), costs (K, L), thresholds (L,)) and return them as float arrays.

    >>> r, c, t = check_problem([1, 2], [[0.5], [1.5]], [1])
    >>> c.shape, t.tolist()
    ((2, 1), [1.0])
    >>> check_problem([1, 2], [[0.5, 1.0], [1.5]], [1])
    Traceback (most recent call last):
    ...
    ValueError: costs must be a K×L matrix (one row of L costs per arm)
    """
    try:
        r = np.array(rewards, dtype=float)
        t = np.array(thresholds, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("rewards and thresholds must be sequences of numbers") from None
    try:
        c = np.array(costs, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("costs must be a K×L matrix (one row of L costs per arm)") from None
    if r.ndim != 1 or r.size < 1:
        raise ValueError(f"rewards must be a non-empty vector, got shape {r.shape}")
    if t.ndim != 1:
        raise ValueError(f"thresholds must be a vector of L numbers, got shape {t.shape}")
    if c.ndim == 1 and c.size == 0 and t.size == 0:
        c = np.zeros((r.size, 0))
    if c.ndim != 2 or c.shape != (r.size, t.size):
        raise ValueError(
            f"costs must have shape (K, L) = ({r.size}, {t.size}) (one row of L costs per arm), got {c.shape}"
        )
    for name, v in (("rewards", r), ("costs", c), ("thresholds", t)):
        if not np.all(np.isfinite(v)):
            idx = tuple(int(i) for i in np.argwhere(~np.isfinite(v))[0])
            raise ValueError(f"{name}{list(idx)} = {v[idx]} is not finite")
    return r, c, t


def standard_form(rewards: Any, costs: Any, thresholds: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`(µ, A, b)` of the standard-form LP (SFLP), eq. (3): slacks are the virtual arms `K..K+L−1`.

    >>> mu, A, b = standard_form([0.5, 1.0], [[0.5], [1.5]], [1.0])
    >>> mu.tolist(), A.tolist(), b.tolist()
    ([0.5, 1.0, 0.0], [[0.5, 1.5, 1.0], [1.0, 1.0, 0.0]], [1.0, 1.0])
    """
    r, c, t = check_problem(rewards, costs, thresholds)
    return _standard_form(r, c, t)


def _standard_form(r: np.ndarray, c: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    K, L = c.shape
    A = np.zeros((L + 1, K + L))
    A[:L, :K] = c.T
    A[:L, K:] = np.eye(L)
    A[L, :K] = 1.0
    return np.concatenate([r, np.zeros(L)]), A, np.concatenate([t, [1.0]])


# ---------------------------------------------------------------------------------------------- mixture
@dataclass(frozen=True)
class Mixture:
    """A mixed arm (the answer of constrained best mixed arm identification), or "no feasible mixture".

    Attributes:
        feasible: False when no mixture satisfies the constraints (then `support` is empty).
        support: the basis / support in standard-form indices, sorted: arms `a < K` and the slacks
            `K + l` of non-binding constraints (the identification answer `I*` of the paper).
        values: `x_i` for each index of `support` (arm weights and slack values).
        n_arms: `K`, to tell arms from slacks.
        thresholds: `c̄` (length L).
        reward: expected reward `rᵀp` under the means the mixture was computed from (NaN if infeasible).
        costs: expected costs `c p` (length L; NaN if infeasible).
        note: how it was obtained (e.g. `"empirical LP"`), or why it is infeasible.
        arm_labels: optional mapping of arm index to a user label (e.g. an architecture string).

    >>> m = Mixture.infeasible(n_arms=3, thresholds=[1.0], note="every arm costs more than 1")
    >>> m.feasible, m.arms, m.to_dict()["support"]
    (False, (), [])
    """

    feasible: bool
    support: tuple[int, ...]
    values: tuple[float, ...]
    n_arms: int
    thresholds: tuple[float, ...]
    reward: float
    costs: tuple[float, ...]
    note: str = ""
    arm_labels: tuple[str, ...] | None = field(default=None, compare=False)

    @classmethod
    def infeasible(cls, n_arms: int, thresholds: Sequence[float], note: str = "") -> Mixture:
        """The explicit "no feasible mixture" answer."""
        L = len(thresholds)
        return cls(False, (), (), int(n_arms), tuple(float(x) for x in thresholds), math.nan, (math.nan,) * L, note)

    @classmethod
    def from_solution(
        cls,
        support: Sequence[int],
        values: Sequence[float],
        rewards: np.ndarray,
        costs: np.ndarray,
        thresholds: np.ndarray,
        note: str = "",
    ) -> Mixture:
        """Build a feasible mixture from a basic solution (`support` indices and their `x` values)."""
        K = rewards.size
        order = np.argsort(np.asarray(support, dtype=np.int64), kind="stable")
        sup = np.asarray(support, dtype=np.int64)[order]
        val = np.asarray(values, dtype=float)[order]
        p = np.zeros(K)
        arm = sup < K
        p[sup[arm]] = val[arm]
        return cls(
            True,
            tuple(int(i) for i in sup),
            tuple(float(v) for v in val),
            K,
            tuple(float(x) for x in thresholds),
            float(rewards @ p),
            tuple(float(x) for x in costs.T @ p),
            note,
        )

    @property
    def L(self) -> int:
        """Number of constraints."""
        return len(self.thresholds)

    @property
    def arms(self) -> tuple[int, ...]:
        """The real arms of the support (sorted)."""
        return tuple(i for i in self.support if i < self.n_arms)

    @property
    def weights(self) -> tuple[float, ...]:
        """Mixing probabilities of :attr:`arms` (they sum to 1)."""
        return tuple(v for i, v in zip(self.support, self.values) if i < self.n_arms)

    @property
    def probabilities(self) -> np.ndarray:
        """The full mixing vector `p ∈ ℝ^K`."""
        p = np.zeros(self.n_arms)
        for a, w in zip(self.arms, self.weights):
            p[a] = w
        return p

    @property
    def slack(self) -> tuple[float, ...]:
        """`c̄_l − (c p)_l` per constraint (NaN if infeasible)."""
        return tuple(t - c for t, c in zip(self.thresholds, self.costs))

    @property
    def binding(self) -> tuple[int, ...]:
        """Constraints whose slack is not in the support (active at the optimum)."""
        if not self.feasible:
            return ()
        basic = {i - self.n_arms for i in self.support if i >= self.n_arms}
        return tuple(l for l in range(self.L) if l not in basic)

    @property
    def heaviest_arm(self) -> int | None:
        """The arm with the largest weight (lowest index on ties), None if infeasible."""
        if not self.arms:
            return None
        w = np.asarray(self.weights)
        return int(self.arms[int(np.argmax(w))])

    def same_support(self, other: Mixture) -> bool:
        """The paper's correctness criterion: equal supports (slacks included), or both infeasible."""
        return self.feasible == other.feasible and set(self.support) == set(other.support)

    def evaluate(self, rewards: Any, costs: Any) -> tuple[float, np.ndarray]:
        """Expected reward and costs of this mixture's weights under other means (e.g. the true ones).

        >>> m = solve_mixture_lp([0.5, 1.0], [[0.5], [1.5]], [1.0])
        >>> r, c = m.evaluate([0.6, 0.9], [[0.4], [1.4]]); round(r, 6), c.round(6).tolist()
        (0.75, [0.9])
        """
        r = np.asarray(rewards, dtype=float)
        c = np.asarray(costs, dtype=float).reshape(r.size, -1)
        if r.size != self.n_arms:
            raise ValueError(f"rewards has {r.size} arms but the mixture is over {self.n_arms}")
        if not self.feasible:
            return math.nan, np.full(self.L, math.nan)
        p = self.probabilities
        return float(r @ p), c.T @ p

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description (`arm_labels` become `labels` of the support's arms)."""

        num = json_number

        d: dict[str, Any] = {
            "feasible": self.feasible,
            "support": list(self.support),
            "arms": list(self.arms),
            "weights": list(self.weights),
            "binding": list(self.binding),
            "slack": [num(s) for s in self.slack],
            "reward": num(self.reward),
            "costs": [num(c) for c in self.costs],
            "thresholds": list(self.thresholds),
            "n_arms": self.n_arms,
            "note": self.note,
        }
        if self.arm_labels is not None:
            d["labels"] = [self.arm_labels[a] for a in self.arms]
        return d

    def with_labels(self, labels: Sequence[str] | None) -> Mixture:
        """A copy carrying arm labels (shown by :meth:`to_dict`)."""
        if labels is None:
            return self
        if len(labels) != self.n_arms:
            raise ValueError(f"labels has {len(labels)} entries for {self.n_arms} arms")
        return Mixture(
            self.feasible,
            self.support,
            self.values,
            self.n_arms,
            self.thresholds,
            self.reward,
            self.costs,
            self.note,
            tuple(str(x) for x in labels),
        )

    def __str__(self) -> str:
        if not self.feasible:
            return f"no feasible mixture ({self.note})" if self.note else "no feasible mixture"
        parts = [f"{w:.4g}×arm {a}" for a, w in zip(self.arms, self.weights)]
        return f"mixture {' + '.join(parts)}: reward {self.reward:.6g}, costs {[round(c, 6) for c in self.costs]}"


# ---------------------------------------------------------------------------------------------- bases
@functools.lru_cache(maxsize=32)
def _combinations(n: int, m: int) -> np.ndarray:
    """All m-subsets of range(n), lexicographic, as a read-only (C(n, m), m) array."""
    count = math.comb(n, m)
    if count > MAX_BASES:
        raise ValueError(
            f"{count} candidate bases (C({n}, {m})) exceed the enumeration limit {MAX_BASES}; "
            "use the Lagrangian score (score='lagrangian') or fewer arms"
        )
    out = np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(n), m)), dtype=np.intp)
    out = out.reshape(count, m)
    out.setflags(write=False)
    return out


def _candidate_bases(n_cols: int, m: int, columns: np.ndarray | None) -> np.ndarray:
    """Column index sets of all m-subsets of `columns` (all columns when None)."""
    if columns is None:
        return _combinations(n_cols, m)
    cols = np.asarray(columns, dtype=np.intp)
    if cols.size < m:
        return np.zeros((0, m), dtype=np.intp)
    if math.comb(n_cols, m) <= 4 * math.comb(cols.size, m) and math.comb(n_cols, m) <= MAX_BASES:
        # filtering the cached full list is cheaper than building a new one
        alive = np.zeros(n_cols, dtype=bool)
        alive[cols] = True
        full = _combinations(n_cols, m)
        return full[alive[full].all(axis=1)]
    return cols[_combinations(int(cols.size), m)]


def _det3(a: list[list[np.ndarray]]) -> np.ndarray:
    return (
        a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1])
        - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0])
        + a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0])
    )


def _solve_bases(A: np.ndarray, b: np.ndarray, bases: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`(ok, x)`: `ok[i]` when `A[:, bases[i]]` is non-singular; `x[i] = A_J^{-1} b` there.

    1×1 to 3×3 (L ≤ 2) by Cramer's rule on whole columns of the stack (about ten times faster than
    `numpy.linalg` on many tiny matrices); larger ones with `numpy.linalg.solve`."""
    n, m = bases.shape
    x = np.full((n, m), np.nan)
    if n == 0:
        return np.zeros(0, dtype=bool), x
    G = A[:, bases]  # G[r, i, j] = A[r, bases[i, j]]
    scale = np.sqrt((G * G).sum(axis=0)).prod(axis=1)  # product of the column norms (Hadamard bound)
    if m <= 3:
        a = [[G[r, :, j] for j in range(m)] for r in range(m)]
        bcol = [np.full(n, b[r]) for r in range(m)]
        if m == 1:
            det, nums = a[0][0], [bcol[0]]
        elif m == 2:
            det = a[0][0] * a[1][1] - a[0][1] * a[1][0]
            nums = [b[0] * a[1][1] - a[0][1] * b[1], a[0][0] * b[1] - b[0] * a[1][0]]
        else:
            det = _det3(a)
            nums = [_det3([[bcol[r] if j == k else a[r][j] for j in range(3)] for r in range(3)]) for k in range(3)]
        ok = np.abs(det) > SINGULAR_TOL * scale
        with np.errstate(divide="ignore", invalid="ignore"):
            x[ok] = np.stack(nums, axis=1)[ok] / det[ok, None]
        return ok, x
    M = np.moveaxis(G, 1, 0)
    det = np.linalg.det(M)
    ok = np.abs(det) > SINGULAR_TOL * scale
    if ok.any():
        Mo = M[ok]
        x[ok] = np.linalg.solve(Mo, np.broadcast_to(b, (Mo.shape[0], m))[..., None])[..., 0]
    return ok, x


@dataclass(frozen=True)
class FeasibleBases:
    """Feasible bases found by :func:`feasible_bases`: `bases` (n, L+1) column indices, `x` (n, L+1)
    their basic solutions and `values` (n,) their objective values."""

    bases: np.ndarray
    x: np.ndarray
    values: np.ndarray

    def best(self) -> int | None:
        """Row of the highest value (None if there is no feasible basis)."""
        return None if self.values.size == 0 else int(np.argmax(self.values))


def feasible_bases(mu: np.ndarray, A: np.ndarray, b: np.ndarray, columns: Any = None) -> FeasibleBases:
    """All feasible bases of `(A, b)` whose columns lie in `columns` (default: all), vectorised.

    >>> mu, A, b = standard_form([0.5, 1.0], [[0.5], [1.5]], [1.0])
    >>> fb = feasible_bases(mu, A, b)
    >>> fb.bases.tolist(), fb.values.round(6).tolist()     # {0, 1} mixes, {0, slack}: arm 0 alone
    ([[0, 1], [0, 2]], [0.75, 0.5])
    """
    m = A.shape[0]
    cand = _candidate_bases(A.shape[1], m, None if columns is None else np.asarray(columns))
    ok, x = _solve_bases(A, b, cand)
    feas = ok & np.all(x >= -FEASIBLE_TOL, axis=1)
    bases, xf = cand[feas], x[feas]
    return FeasibleBases(bases, xf, np.einsum("ij,ij->i", mu[bases], xf))


def iv_scores(mu: np.ndarray, A: np.ndarray, b: np.ndarray, alive: np.ndarray) -> np.ndarray:
    """Intersection-value scores, eq. (6): for each column `a` in `alive`, the best value among the
    feasible bases (columns restricted to `alive`) that contain `a`; `−inf` when there is none and
    for columns not alive. No LP solver: all `C(|X|, L+1)` bases are enumerated in one batch.

    >>> mu, A, b = standard_form([0.5, 1.0, 0.2], [[0.5], [1.5], [0.1]], [1.0])
    >>> iv_scores(mu, A, b, np.ones(4, dtype=bool)).round(4).tolist()
    [0.75, 0.75, 0.7143, 0.5]
    """
    fb = feasible_bases(mu, A, b, np.flatnonzero(alive))
    scores = np.full(A.shape[1], -np.inf)
    for j in range(fb.bases.shape[1]):
        np.maximum.at(scores, fb.bases[:, j], fb.values)
    return scores


def lagrangian_scores(
    mu: np.ndarray, A: np.ndarray, b: np.ndarray, alive: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None]:
    """Lagrangian scores, eq. (8): the reduced costs `(µ̂_X − Â_Xᵀ λ̂*)_a` of the alive columns, with
    `λ̂*` an optimal solution of the empirical dual `min {bᵀλ : Â_Xᵀ λ ≥ µ̂_X}` (λ free) solved with
    `scipy.optimize.linprog(method="highs")`. An unbounded dual (= infeasible restricted primal) gives
    `−inf` everywhere. Returns `(scores, λ̂*)` (λ̂* None when unbounded). If HiGHS reports numerical
    trouble the dual is recovered from the best feasible basis (`λᵀ = µ_Jᵀ A_J^{-1}`).

    >>> mu, A, b = standard_form([0.5, 1.0, 0.2], [[0.5], [1.5], [0.1]], [1.0])
    >>> s, lam = lagrangian_scores(mu, A, b, np.ones(4, dtype=bool))
    >>> s.round(4).tolist(), lam.round(4).tolist()       # 0 on the optimal basis {0, 1}
    ([0.0, 0.0, -0.1, -0.5], [0.5, 0.25])
    """
    cols = np.flatnonzero(alive)
    scores = np.full(A.shape[1], -np.inf)
    if cols.size == 0:
        return scores, None
    Ax, mux = A[:, cols], mu[cols]
    res = linprog(
        c=b, A_ub=-Ax.T, b_ub=-mux, bounds=[(None, None)] * A.shape[0], method="highs", options={"presolve": False}
    )
    if res.status == 0:
        lam = np.asarray(res.x, dtype=float)
    elif res.status == 3:  # unbounded dual: the restricted primal is infeasible
        return scores, None
    else:  # numerical trouble: recover the dual from the best feasible basis
        fb = feasible_bases(mu, A, b, cols)
        i = fb.best()
        if i is None:
            return scores, None
        J = fb.bases[i]
        lam = np.linalg.solve(A[:, J].T, mu[J])
    scores[cols] = mux - Ax.T @ lam
    return scores, lam


# ---------------------------------------------------------------------------------------------- LP optimum
def _lp_primal(mu: np.ndarray, A: np.ndarray, b: np.ndarray, cols: np.ndarray) -> tuple[int, np.ndarray | None]:
    """HiGHS dual simplex on the columns `cols`: (status, x over cols)."""
    res = linprog(c=-mu[cols], A_eq=A[:, cols], b_eq=b, bounds=[(0, None)] * cols.size, method="highs-ds")
    if res.status == 0:
        return 0, np.asarray(res.x, dtype=float)
    return int(res.status), None


def solve_mixture_lp(
    rewards: Any,
    costs: Any,
    thresholds: Any,
    *,
    columns: Any = None,
    method: str = "highs",
    note: str = "LP optimum",
) -> Mixture:
    """The optimal mixture of the LP (SFLP), or :meth:`Mixture.infeasible`.

    Args:
        rewards: `r` (K,).
        costs: `c` (K, L).
        thresholds: `c̄` (L,).
        columns: restrict to these standard-form columns (arms and slacks; an excluded slack turns its
            constraint into an equality, as in SFSR after a virtual arm is rejected). Default: all.
        method: `"highs"` (`linprog` with HiGHS' dual simplex, which returns a vertex; the support is
            `{i : x_i > 1e-9}`, smaller than L+1 only for a degenerate optimum) or `"enumerate"`
            (best feasible basis by enumeration; the exact basis even when degenerate).

    >>> solve_mixture_lp([0.5, 1.0], [[0.5], [1.5]], [1.0], method="enumerate").support
    (0, 1)
    """
    r, c, t = check_problem(rewards, costs, thresholds)
    mu, A, b = _standard_form(r, c, t)
    cols = np.arange(A.shape[1]) if columns is None else np.unique(np.asarray(columns, dtype=np.intp))
    if cols.size and (cols.min() < 0 or cols.max() >= A.shape[1]):
        raise ValueError(f"columns must lie in 0..{A.shape[1] - 1} (arms, then one slack per constraint)")
    if method == "enumerate":
        fb = feasible_bases(mu, A, b, cols)
        i = fb.best()
        if i is None:
            return Mixture.infeasible(r.size, t, "no feasible basis")
        return Mixture.from_solution(fb.bases[i], np.maximum(fb.x[i], 0.0), r, c, t, note)
    if method != "highs":
        raise ValueError(f"method = {method!r} is unknown; accepted: 'highs', 'enumerate'")
    if cols.size == 0:
        return Mixture.infeasible(r.size, t, "no columns")
    status, x = _lp_primal(mu, A, b, cols)
    if status == 2:
        return Mixture.infeasible(r.size, t, "the LP is infeasible")
    if x is None:  # numerical trouble: fall back to exact enumeration
        return solve_mixture_lp(r, c, t, columns=cols, method="enumerate", note=note)
    keep = x > SUPPORT_TOL
    return Mixture.from_solution(cols[keep], x[keep], r, c, t, note)


def best_basis(rewards: Any, costs: Any, thresholds: Any, columns: Any = None) -> Mixture:
    """The best feasible basis by exhaustive enumeration (same as `solve_mixture_lp(method="enumerate")`)."""
    return solve_mixture_lp(rewards, costs, thresholds, columns=columns, method="enumerate")


@dataclass(frozen=True)
class AssumptionCheck:
    """Result of :func:`check_assumption` (Assumption 1 of the paper).

    Attributes:
        feasible: the LP has a feasible mixture.
        unique: the optimal value is attained by one basic solution only.
        non_degenerate: the optimal basic solution has exactly `L + 1` positive coordinates.
        optimum: the optimal :class:`Mixture` (infeasible marker when not feasible).
        second_value: best value among feasible bases whose basic solution is a different point.
        value_gap: `optimum.reward − second_value` (a simple hardness indicator).
    """

    feasible: bool
    unique: bool
    non_degenerate: bool
    optimum: Mixture
    second_value: float
    value_gap: float

    @property
    def ok(self) -> bool:
        """Assumption 1 holds (or the instance is infeasible, whose answer ∅ is also well defined)."""
        return (not self.feasible) or (self.unique and self.non_degenerate)

    def summary(self) -> str:
        if not self.feasible:
            return "infeasible: the correct answer is 'no feasible mixture'"
        if self.ok:
            return f"Assumption 1 holds (optimal value gap to the next vertex {self.value_gap:.4g})"
        why = []
        if not self.unique:
            why.append("the optimal basic solution is not unique")
        if not self.non_degenerate:
            why.append(f"the optimum has {len(self.optimum.support)} positive coordinates, not L+1")
        return "Assumption 1 fails: " + "; ".join(why) + " (the support is not identifiable)"

    def to_dict(self) -> dict[str, Any]:
        num = json_number

        return {
            "ok": self.ok,
            "feasible": self.feasible,
            "unique": self.unique,
            "non_degenerate": self.non_degenerate,
            "second_value": num(self.second_value),
            "value_gap": num(self.value_gap),
            "summary": self.summary(),
        }


def check_assumption(rewards: Any, costs: Any, thresholds: Any, *, rtol: float = 1e-9) -> AssumptionCheck:
    """Check Assumption 1 (unique, non-degenerate optimum) by enumerating every feasible basis.

    >>> chk = check_assumption([0.5, 1.0, 0.2], [[0.5], [1.5], [0.1]], [1.0])
    >>> chk.ok, chk.optimum.support, round(chk.value_gap, 6)
    (True, (0, 1), 0.035714)
    """
    r, c, t = check_problem(rewards, costs, thresholds)
    mu, A, b = _standard_form(r, c, t)
    fb = feasible_bases(mu, A, b)
    i = fb.best()
    if i is None:
        inf = Mixture.infeasible(r.size, t, "no feasible basis")
        return AssumptionCheck(False, True, True, inf, math.nan, math.nan)
    n = A.shape[1]
    full = np.zeros((fb.bases.shape[0], n))
    np.put_along_axis(full, fb.bases, np.maximum(fb.x, 0.0), axis=1)
    best_v = fb.values[i]
    same_point = np.all(np.abs(full - full[i]) <= 1e-9 * (1 + np.abs(full[i])), axis=1)
    tol = rtol * max(1.0, abs(best_v))
    others = fb.values[~same_point]
    second = float(others.max()) if others.size else -math.inf
    unique = not (others.size and second >= best_v - tol)
    opt = Mixture.from_solution(fb.bases[i], np.maximum(fb.x[i], 0.0), r, c, t, "LP optimum (enumeration)")
    nondeg = bool(np.all(fb.x[i] > SUPPORT_TOL))
    return AssumptionCheck(True, bool(unique), nondeg, opt, second, float(best_v - second))
