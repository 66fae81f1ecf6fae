"""Hardness of constrained best mixed arm identification: the gaps Δ_0, Δ_J, Δ_a and the error exponents
of Tang, Jain, Nayyar, Nuzzo (2024), Section 4 (eqs. 9–15).

Definitions (σ-weighted squared distances of the unknown arms' means; known arms and slacks fixed):

* `Δ_J²` (eq. 9): the smallest move of `(r, c)` that keeps `I*` feasible and makes the basis `J`
  feasible with a value at least that of `I*`;
* `Δ_a² = min {Δ_J² : a ∈ J}` (eq. 10), sorted `0 = Δ_(1) = … = Δ_(L+1) < Δ_(L+2) ≤ …`;
* `Δ_0²` (eq. 11): the smallest move of the costs that makes `A_{I*}` singular or its BFS infeasible.

The paper defines them as infima (§4.1) and gives no algorithm; the computations are ours:

* `Δ_0²` in **closed form**: with `I* = S ∪ T` (arms, slacks of the non-binding constraints) and
  `B` the binding constraints, `p_i` reaches 0 exactly when `c̄_B` lies on the affine hull of the
  other arms' binding-cost points, and `s_l` reaches 0 when `c̄_{B∪{l}}` lies on the affine hull of
  the arms' points; the least move of points onto a common hyperplane through a fixed point is the
  smallest eigenvalue `G` of `Σ_{unknown} v vᵀ` restricted to the directions orthogonal to the
  known arms' vectors. (The `det = 0` branch of eq. 11 is never strictly closer.)
* `Δ_J²` **numerically**: for fixed arm weights `p` (of `J`'s arms) and `q` (of `I*`'s arms)
  the constraints are linear in `(r̃, c̃)` and separate by row, so the inner minimum is a projection
  in closed form (reward: onto a half-space; each cost row: onto ≤ 2 hyper-planes/half-spaces, by
  enumerating active sets). The outer infimum over `(p, q)` (dimension ≤ 2L, non-convex) is taken on
  a grid of the closed simplices (vertices and faces included) and refined locally (Powell) for the
  bases that decide each `Δ_a`. Grid values are upper bounds; the refined values agree with a direct
  SLSQP minimisation of eq. (9) in the tests.

Exponents: Theorem 2 (lower bound, any consistent algorithm, `K0 = K` only):
`limsup −(1/N) log P(error) ≤ ½ min{Δ_0², Δ_(L+2)²}` (eq. 13), USLP's `1/(2K)` of it (eq. 14);
Theorem 1 / eq. (15) for SFSR: `liminf −(1/N) log P(error) ≥ min{Δ_0²/K, Δ_(L+i)²/i}/(3((L+1)/2 + log K))`
(the proof's `3(L/2 + log K0)` in eqs. 34–35 is a typo for `3((L+1)/2 + log K0)`; eq. 29's `n_k Δ_a`
is `n_k Δ_a²`).

>>> h = hardness([0.5, 1.0, 0.3], [[0.5], [1.5], [0.9]], [1.0], sigma_reward=1.0, sigma_cost=0.5)
>>> round(h.delta0_sq, 6)            # arm 0 (cost 0.5) or arm 1 (cost 1.5) moving to c̄: (0.5/0.5)² = 1
1.0
>>> h.optimal_support, h.delta_arm_sq[:2].tolist()
((0, 1), [0.0, 0.0])
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import minimize

from mf_sched.constrained.mixture import (
    _candidate_bases,
    _solve_bases,
    _standard_form,
    check_assumption,
    check_problem,
    json_number,
)

__all__ = ["Hardness", "hardness", "delta0_sq", "basis_gap_sq", "simplex_grid"]

_TOL = 1e-12


def simplex_grid(m: int, resolution: int) -> np.ndarray:
    """All points of the closed `m`-simplex whose coordinates are multiples of `1/resolution`.

    >>> simplex_grid(2, 2).tolist()
    [[0.0, 1.0], [0.5, 0.5], [1.0, 0.0]]
    """
    if m == 1:
        return np.ones((1, 1))
    pts = [c for c in itertools.product(range(resolution + 1), repeat=m - 1) if sum(c) <= resolution]
    a = np.array(pts, dtype=float)
    return np.column_stack([a, resolution - a.sum(axis=1)]) / resolution


def _scaled(rewards: Any, costs: Any, thresholds: Any, sigma_reward: float, sigma_cost: Any, known: Any = ()):
    """(r/σ_r, c/σ_c, c̄/σ_c, known-arm mask): in these units every σ is 1."""
    r, c, t = check_problem(rewards, costs, thresholds)
    kn = np.zeros(r.size, dtype=bool)
    kn[list(known)] = True
    sc = np.broadcast_to(np.asarray(sigma_cost, dtype=float), (t.size,))
    if not (sigma_reward > 0 and np.all(sc > 0)):
        raise ValueError("sigma_reward and sigma_cost must be > 0")
    return r / sigma_reward, c / sc, t / sc, kn


def _G(vectors: np.ndarray, known: np.ndarray) -> float:
    """min over unit n ⟂ known vectors of Σ_{unknown} (nᵀv)² (+inf when no such n / no dimension)."""
    d = vectors.shape[1]
    if d == 0:
        return math.inf
    kv = vectors[known]
    if kv.size:
        _, s, vt = np.linalg.svd(kv)
        rank = int(np.sum(s > 1e-12 * max(1.0, s.max())))
        Q = vt[rank:].T
    else:
        Q = np.eye(d)
    if Q.shape[1] == 0:
        return math.inf
    U = vectors[~known]
    M = Q.T @ (U.T @ U) @ Q
    return float(max(np.linalg.eigvalsh(M)[0], 0.0))


def delta0_sq(
    rewards: Any,
    costs: Any,
    thresholds: Any,
    *,
    sigma_cost: Any = 1.0,
    known: Sequence[int] = (),
    support: Sequence[int] | None = None,
) -> float:
    """`Δ_0²` of eq. (11) in closed form (`+inf` when `I*` has no unknown arm).

    >>> round(delta0_sq([1.0, 0.0], [[1.5], [0.5]], [1.0], sigma_cost=0.5), 6)   # I* = {0, 1}
    1.0
    """
    r, c, t, kn = _scaled(rewards, costs, thresholds, 1.0, sigma_cost, known)
    K, L = c.shape
    if support is None:
        opt = check_assumption(r, c, t).optimum
        if not opt.feasible:
            raise ValueError("the instance is infeasible: Δ_0 is defined for feasible instances (Assumption 1)")
        support = opt.support
    S = [a for a in support if a < K]
    T = [i - K for i in support if i >= K]
    B = [l for l in range(L) if l not in T]
    best = math.inf
    for i in S:
        rest = [a for a in S if a != i]
        if rest:
            v = c[np.ix_(rest, B)] - t[B]
            best = min(best, _G(v, kn[rest]))
    for l in T:
        rows = B + [l]
        v = c[np.ix_(S, rows)] - t[rows]
        best = min(best, _G(v, kn[S]))
    return best


# ---------------------------------------------------------------------------------------------- Δ_J
class _BasisProblem:
    """Vectorised inner minimum of eq. (9) for one basis J, as a function of the weights (p, q)."""

    def __init__(self, r, c, t, known, J, I, K, L) -> None:
        self.SJ = [a for a in J if a < K]
        self.SI = [a for a in I if a < K]
        self.eqJ = np.array([K + l not in J for l in range(L)])
        self.eqI = np.array([K + l not in I for l in range(L)])
        self.arms = sorted(set(self.SJ) | set(self.SI))
        pos = {a: i for i, a in enumerate(self.arms)}
        u = len(self.arms)
        self.PJ = np.zeros((len(self.SJ), u))
        self.PJ[np.arange(len(self.SJ)), [pos[a] for a in self.SJ]] = 1
        self.PI = np.zeros((len(self.SI), u))
        self.PI[np.arange(len(self.SI)), [pos[a] for a in self.SI]] = 1
        self.r = r[self.arms]
        self.c = c[self.arms]  # (u, L)
        self.t = t
        self.unk = ~known[self.arms]

    def values(self, p: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Inner minimum for each row of p (n, |S_J|) and q (n, |S_I|)."""
        a = p @ self.PJ
        b = q @ self.PI
        w = a - b
        wr = w @ self.r
        wu2 = (w * w * self.unk).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            total = np.where(wr >= 0, 0.0, np.where(wu2 > _TOL, wr * wr / wu2, np.inf))
        aU, bU = a * self.unk, b * self.unk
        aa, bb, ab = (aU * aU).sum(1), (bU * bU).sum(1), (aU * bU).sum(1)
        for l in range(self.t.size):
            e1 = self.t[l] - a @ self.c[:, l]
            e2 = self.t[l] - b @ self.c[:, l]
            total = total + _row_projection(e1, e2, aa, bb, ab, bool(self.eqJ[l]), bool(self.eqI[l]))
        return total


def _row_projection(e1, e2, aa, bb, ab, eq1: bool, eq2: bool) -> np.ndarray:
    """min ‖δ‖² s.t. aᵀδ (= if eq1 else ≤) e1 and bᵀδ (= if eq2 else ≤) e2, given the Gram entries."""
    tol = 1e-10
    inf = np.full(e1.shape, np.inf)
    ok1 = np.abs(e1) <= tol if eq1 else e1 >= -tol
    ok2 = np.abs(e2) <= tol if eq2 else e2 >= -tol
    best = np.where(ok1 & ok2, 0.0, inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        # g1 active only: δ = e1 a/‖a‖²; then bᵀδ = e1 ab/aa must satisfy g2 (an inequality)
        if not eq2:
            c1 = np.where(aa > _TOL, e1 * e1 / aa, np.where(np.abs(e1) <= tol, 0.0, np.inf))
            g2 = np.where(aa > _TOL, e1 * ab / aa, 0.0)
            best = np.minimum(best, np.where(g2 <= e2 + tol, c1, np.inf))
        if not eq1:
            c2 = np.where(bb > _TOL, e2 * e2 / bb, np.where(np.abs(e2) <= tol, 0.0, np.inf))
            g1 = np.where(bb > _TOL, e2 * ab / bb, 0.0)
            best = np.minimum(best, np.where(g1 <= e1 + tol, c2, np.inf))
        # both active
        det = aa * bb - ab * ab
        reg = det > 1e-12 * np.maximum(aa * bb, _TOL)
        cboth = (bb * e1 * e1 - 2 * ab * e1 * e2 + aa * e2 * e2) / det
        best = np.minimum(best, np.where(reg, cboth, np.inf))
        # parallel (or vanishing) directions: consistent only if e1, e2 agree along the common direction
        par = ~reg
        k = np.where(aa > _TOL, ab / aa, 0.0)  # b ≈ k a
        cons = np.where(aa > _TOL, np.abs(e2 - k * e1) <= 1e-9 * (1 + np.abs(e2)), np.abs(e1) + np.abs(e2) <= tol)
        cpar = np.where(aa > _TOL, e1 * e1 / aa, 0.0)
        best = np.minimum(best, np.where(par & cons, cpar, np.inf))
    return best


def _pinned(A: np.ndarray, b: np.ndarray, cols: list[int]) -> np.ndarray | None:
    ok, x = _solve_bases(A, b, np.array([cols], dtype=np.intp))
    if not ok[0] or np.any(x[0] < -1e-10):
        return None
    return np.maximum(x[0], 0.0)


def _weights_grid(S: list[int], J: Sequence[int], known: np.ndarray, A, b, K: int, res: int) -> np.ndarray | None:
    """Candidate weights of the arms of basis J: a simplex grid, or the pinned BFS if all are known."""
    if all(known[a] for a in S):
        x = _pinned(A, b, sorted(J))
        if x is None:
            return None
        xs = dict(zip(sorted(J), x))
        return np.array([[xs[a] for a in S]])
    return simplex_grid(len(S), res)


def _stick(t: np.ndarray) -> np.ndarray:
    out, rest = [], 1.0
    for v in t:
        out.append(rest * v)
        rest *= 1 - v
    return np.array(out + [rest])


def _unstick(p: np.ndarray) -> np.ndarray:
    t, rest = [], 1.0
    for v in p[:-1]:
        t.append(0.0 if rest <= 1e-15 else min(max(v / rest, 0.0), 1.0))
        rest -= v
    return np.array(t)


def basis_gap_sq(
    J: Sequence[int],
    rewards: Any,
    costs: Any,
    thresholds: Any,
    *,
    sigma_reward: float = 1.0,
    sigma_cost: Any = 1.0,
    known: Sequence[int] = (),
    support: Sequence[int] | None = None,
    resolution: int | None = None,
    refine: bool = True,
) -> float:
    """`Δ_J²` of eq. (9) for one basis `J` (standard-form indices; see the module docstring).

    >>> # I* = {0, 1} (value 0.75); {0, slack} (arm 0 alone) ties when r_0 rises and r_1 drops by 0.25
    >>> round(basis_gap_sq([0, 3], [0.5, 1.0, 0.3], [[0.5], [1.5], [0.9]], [1.0]), 4)
    0.125
    """
    r, c, t, kn = _scaled(rewards, costs, thresholds, sigma_reward, sigma_cost, known)
    K, L = c.shape
    if support is None:
        support = check_assumption(r, c, t).optimum.support
    return _basis_gap(tuple(sorted(J)), r, c, t, kn, tuple(support), resolution, refine)[1]


def _basis_gap(J, r, c, t, kn, I, resolution, refine) -> tuple[float, float]:
    """(grid value, refined value) of Δ_J² in scaled units."""
    K, L = c.shape
    if set(J) == set(I):
        return 0.0, 0.0
    if len(J) != L + 1:
        raise ValueError(f"a basis has L + 1 = {L + 1} indices, got {list(J)}")
    prob = _BasisProblem(r, c, t, kn, J, I, K, L)
    if not any(~kn[a] for a in prob.arms):
        return math.inf, math.inf
    _, A, b = _standard_form(r, c, t)
    mJ, mI = len(prob.SJ), len(prob.SI)
    if mJ == 0:
        return math.inf, math.inf
    res = resolution or {1: 1, 2: 60, 3: 14, 4: 7}.get(max(mJ, mI), 5)
    P = _weights_grid(prob.SJ, J, kn, A, b, K, res)
    Q = _weights_grid(prob.SI, I, kn, A, b, K, res)
    if P is None or Q is None:
        return math.inf, math.inf
    ip, iq = np.meshgrid(np.arange(P.shape[0]), np.arange(Q.shape[0]), indexing="ij")
    vals = prob.values(P[ip.ravel()], Q[iq.ravel()])
    k = int(np.argmin(vals))
    grid_val = float(vals[k])
    if not refine:
        return grid_val, grid_val
    freeJ = P.shape[0] > 1 and mJ > 1
    freeI = Q.shape[0] > 1 and mI > 1
    p0, q0 = P[ip.ravel()[k]], Q[iq.ravel()[k]]
    if not (freeJ or freeI) or not math.isfinite(grid_val):
        return grid_val, grid_val
    x0 = np.concatenate([_unstick(p0) if freeJ else [], _unstick(q0) if freeI else []])

    def f(z: np.ndarray) -> float:
        z = np.clip(z, 0.0, 1.0)
        p = _stick(z[: mJ - 1]) if freeJ else p0
        q = _stick(z[mJ - 1 if freeJ else 0 :]) if freeI else q0
        v = float(prob.values(p[None, :], q[None, :])[0])
        return v if math.isfinite(v) else 1e12

    out = minimize(f, x0, method="Powell", bounds=[(0.0, 1.0)] * x0.size, options={"xtol": 1e-9, "ftol": 1e-12})
    return grid_val, min(grid_val, float(out.fun))


@dataclass(frozen=True)
class Hardness:
    """Gaps and exponents of one instance (see the module docstring; all σ-weighted).

    Attributes:
        optimal_support: `I*`.
        delta0_sq: `Δ_0²`.
        bases: the candidate bases (n, L+1) and `delta_basis_sq` their `Δ_J²` (0 for `I*`).
        delta_arm_sq: `Δ_a²` for every standard-form index `a` (arms, then slacks).
        sorted_sq: `Δ_(1)² ≤ … ≤ Δ_(K+L)²`.
        lower_bound_exponent: `½ min{Δ_0², Δ_(L+2)²}` (Thm 2; None with known arms).
        uslp_exponent_bound: USLP's upper bound on its exponent, `lower_bound_exponent / K` (eq. 14).
        sfsr_exponent: SFSR's guaranteed exponent, eq. (15).
        h_sfsr: `max{K/Δ_0², max_i i/Δ_(L+i)²}` (the hardness constant of Theorem 1's bound, our reading of §4.2).
    """

    K: int
    L: int
    K0: int
    optimal_support: tuple[int, ...]
    delta0_sq: float
    bases: np.ndarray
    delta_basis_sq: np.ndarray
    delta_arm_sq: np.ndarray
    sorted_sq: np.ndarray
    lower_bound_exponent: float | None
    uslp_exponent_bound: float | None
    sfsr_exponent: float
    h_sfsr: float

    def sfsr_error_bound(self, N: int) -> float:
        """Theorem 1's explicit bound (eqs. 33–35 with Ψ(K0, L)) on SFSR's error probability at budget N."""
        from mf_sched.policies.sfsr import sfsr_psi

        K, L, K0 = self.K, self.L, self.K0
        psi = sfsr_psi(K0, L)
        i = np.arange(2, K + 1)
        m = float(np.min(self.sorted_sq[L + 1 : L + K] / i))
        a = (K - 1) * 3 ** (L * (L + 1) / 2) * math.exp(-(N - K0) * self.delta0_sq / (3 * psi * K))
        b = K * (K + 1) / 2 * math.comb(K + L - 1, L) * 3 ** ((L + 1) ** 2) * math.exp(-(N - K0) / (3 * psi) * m)
        return a + b

    def to_dict(self) -> dict[str, Any]:
        num = json_number

        return {
            "optimal_support": list(self.optimal_support),
            "delta0_sq": num(self.delta0_sq),
            "delta_arm_sq": [num(x) for x in self.delta_arm_sq],
            "delta_L_plus_2_sq": num(float(self.sorted_sq[self.L + 1])),
            "lower_bound_exponent": num(self.lower_bound_exponent),
            "uslp_exponent_bound": num(self.uslp_exponent_bound),
            "sfsr_exponent": num(self.sfsr_exponent),
            "h_sfsr": num(self.h_sfsr),
        }


def hardness(
    rewards: Any,
    costs: Any,
    thresholds: Any,
    *,
    sigma_reward: float = 1.0,
    sigma_cost: Any = 1.0,
    known: Sequence[int] = (),
    resolution: int | None = None,
    refine_per_arm: int = 2,
) -> Hardness:
    """All gaps of an instance that satisfies Assumption 1 (ValueError otherwise).

    `refine_per_arm`: for each index `a`, the bases with the smallest grid values among those
    containing `a` that are refined locally (the others keep their grid value, an upper bound).
    """
    r, c, t, kn = _scaled(rewards, costs, thresholds, sigma_reward, sigma_cost, known)
    K, L = c.shape
    chk = check_assumption(r, c, t)
    if not chk.feasible or not chk.ok:
        raise ValueError(f"the gaps need Assumption 1: {chk.summary()}")
    I = chk.optimum.support
    bases = _candidate_bases(K + L, L + 1, None)
    _, A, b = _standard_form(r, c, t)
    ok, _ = _solve_bases(A, b, bases)
    grid = np.full(bases.shape[0], np.inf)
    for i in np.flatnonzero(ok):
        grid[i] = _basis_gap(tuple(bases[i]), r, c, t, kn, I, resolution, refine=False)[0]
    final = grid.copy()
    todo: set[int] = set()
    for a in range(K + L):
        rows = np.flatnonzero((bases == a).any(axis=1) & np.isfinite(grid))
        todo.update(rows[np.argsort(grid[rows], kind="stable")[:refine_per_arm]].tolist())
    for i in sorted(todo):
        final[i] = _basis_gap(tuple(bases[i]), r, c, t, kn, I, resolution, refine=True)[1]
    d_arm = np.full(K + L, np.inf)
    for j in range(L + 1):
        np.minimum.at(d_arm, bases[:, j], final)
    d0 = delta0_sq(r, c, t, sigma_cost=1.0, known=np.flatnonzero(kn).tolist(), support=I)
    srt = np.sort(d_arm)
    lb = 0.5 * min(d0, float(srt[L + 1])) if not kn.any() else None
    i = np.arange(2, K + 1)
    tail = srt[L + 1 : L + K]
    sfsr = min(d0 / K, float(np.min(tail / i))) / (3 * ((L + 1) / 2 + math.log(K)))
    with np.errstate(divide="ignore"):
        h = max(K / d0 if d0 > 0 else math.inf, float(np.max(i / tail)))
    return Hardness(
        K=K,
        L=L,
        K0=int((~kn).sum()),
        optimal_support=tuple(I),
        delta0_sq=d0,
        bases=bases,
        delta_basis_sq=final,
        delta_arm_sq=d_arm,
        sorted_sq=srt,
        lower_bound_exponent=lb,
        uslp_exponent_bound=None if lb is None else lb / K,
        sfsr_exponent=sfsr,
        h_sfsr=h,
    )
