"""The closest alternative in the multi-fidelity model (Poiani, Degenne, Kaufmann, Metelli, Restelli 2024).

Shared by the tight lower bound (:func:`mf_sched.sim.tight_bound.tight_lower_bound`), MF-GRAD's gradient and its
GLR stopping statistic (:mod:`mf_sched.policies.mf_grad`). The problem is the one the authors' released code
solves (`riccardopoiani/adv-mf-bai`, `utils/lb_tool_fast_stopping.py`); the exact solver below is ours.

**Model.** Gaussian observations with a known common σ; arm `j` at fidelity `m` has mean
`θ_{j,m}` with `|θ_{j,m} − θ_{j,M}| ≤ ζ(m)` (the set `M_MF`). With non-negative weights `w` (pull
counts for the GLR, cost proportions `ω/λ` for the bound and the gradient) and means `x` (empirical
means, which may violate the constraints), the cost of moving arm `j` to a model whose top-fidelity
mean is `η` is:

```text
h_j(η) = Σ_m w_{j,m} d(x_{j,m}, clip(x_{j,m}, η − ζ(m), η + ζ(m))),     d(a, b) = (a − b)²/(2σ²)
```

(the code's `solve_stop_problem_fast`, restated). `h_j` is convex and piecewise quadratic with breakpoints
`x_{j,m} ± ζ(m)`, and its derivative `σ² h_j'(η) = Σ_m w_{j,m}[(η − x_{j,m} − ζ(m))₊ − (x_{j,m} − ζ(m) − η)₊]` is
piecewise linear and non-decreasing. For an answer `i` and a challenger `b`:

```text
f(i, b) = min_{η_b ≥ η_i} h_i(η_i) + h_b(η_b)
```

is the cheapest alternative in `M_MF` in which `b` is at least as good as `i` (ties count as
alternatives, "≥" as in the authors' code). Let `[lo_j, hi_j]` be the set of minimisers of `h_j`
(a point when `w_{j,M} > 0`; an interval, possibly unbounded, when some weights are 0) and
`v_j = min h_j` (0 when `x_j` satisfies the constraints). Then

* if `hi_b ≥ lo_i` the ordering constraint is slack and `f(i, b) = v_i + v_b`;
* otherwise it binds and `f(i, b) = min_η h_i(η) + h_b(η)`, a one-dimensional convex problem.

Both minimisations are solved exactly by sorting the breakpoints and evaluating the derivative at all
of them with prefix sums: `O(M log M)` per problem, vectorised over arms and challengers (exact; it gives the
same answer as the authors' search over candidate points, faster). On the segment where the derivative changes sign the
root is the fixed point `η = Σ_active w·target / Σ_active w` of the authors' code (their `fixed_point_list`),
read off the prefix sums; it is clipped to its segment, and a flat segment (empty active set) is never
divided by.

**Answer level.** `Z(w, x) = max_i min_{b≠i} f(i, b)` (the authors' `solve_stopping`: the maximum
over all answers, not only `argmax µ̂_M`). Evaluating every pair costs `O(K² M log M)`; :func:`best_response`
evaluates the answer `top` with the highest projected top-fidelity mean and then only the answers
that can still beat it: for `i ≠ top`, `min_b f(i, b) ≤ f(i, top) = v_i + v_top`, so `i` is
evaluated only when `v_i + v_top` exceeds the best value found. When `x` satisfies the
constraints every `v` is 0 and one answer is evaluated: `O(K M log M)` per call.

**A single-fidelity bug of the authors' code is not reproduced** (their one-sided solver finds no admissible
candidate when the ordering constraint is slack, returns "no value" and the caller skips the pair): when it is
slack the value is `v_i + v_b` (often 0), never "no value", so with `M = 1` the statistic is the
classical GLR (counts (10, 10, 10), means (1.0, 0.9, 0.0), σ = 1 give arm 0 with 0.025, see the tests).

Example (the 5x2 instance of Poiani et al. 2024 at the optimal cost proportions; `C* = 14 + 4√10` in closed
form, our derivation):

    >>> import numpy as np
    >>> mu = np.array([[0.4, 0.5]] * 4 + [[0.5, 0.6]])
    >>> w_c = (np.sqrt(10) - 2) / 12                       # each challenger's cost share, at fidelity 1
    >>> omega = np.array([[w_c, 0.0]] * 4 + [[0.0, 1 - 4 * w_c]])
    >>> r = best_response(omega / [0.5, 5.0], mu, [0.1, 0.0], sigma=0.1)
    >>> r.answer, round(1 / r.value, 4), round(14 + 4 * float(np.sqrt(10)), 4)
    (4, 26.6491, 26.6491)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "Projection",
    "BestResponse",
    "IncrementalResponse",
    "project",
    "answer_values",
    "best_response",
    "response_upper_bound",
    "ResponseUpperBound",
    "alternative_means",
]


@dataclass(frozen=True)
class Projection:
    """Per-arm projection on the model: minimisers `[lo, hi]` of `h_j` and its minimum `value`."""

    lo: np.ndarray
    hi: np.ndarray
    value: np.ndarray


@dataclass(frozen=True)
class BestResponse:
    """The closest alternative: `value = min_b f(answer, b)`, maximised over answers (or for a given one).

    Attributes:
        value: `Z = max_i min_{b≠i} f(i, b)` (or `min_b f(answer, b)` when the answer was given).
        answer: the maximising answer `î` (lowest index among ties with the projected leader first).
        challenger: its minimising challenger `b̂` (lowest index among ties); −1 when `K = 1`.
        eta_answer: top-fidelity value `θ_{î,M}` of the answer in the alternative; the other fidelities are `clip(x, η
            − ζ, η + ζ)` (:func:`alternative_means`).
        eta_challenger: top-fidelity value `θ_{b̂,M}` of the challenger in the alternative.
        values: `f(answer, b)` for every arm `b` (`+inf` at `b = answer`).
        projection: every arm's own projection point (`lo_j`; `x_{j,M}` for an arm that satisfies the
            constraints), used by :func:`response_upper_bound`.
    """

    value: float
    answer: int
    challenger: int
    eta_answer: float
    eta_challenger: float
    values: np.ndarray
    projection: np.ndarray


def _solve(pos: np.ndarray, dA: np.ndarray, dB: np.ndarray, A0: np.ndarray, B0: np.ndarray, hi: bool):
    """Row-wise zeros of the piecewise linear non-decreasing `D(η) = A(η) η − B(η)` given by its events
    (breakpoint `pos`, slope change `dA`, intercept change `dB`; (P, n) arrays) and the slope and
    intercept `A0, B0` left of every breakpoint.

    Returns the first zero `lo` (and, if `hi`, the last zero; else None). The zero lies on the segment
    after the last breakpoint where `D < 0` (`≤ 0` for the last zero); there `D` is the line
    `A η − B`, whose root `B/A` is the fixed point "weighted mean of the active targets" of the
    authors' code; it is clipped to the segment to absorb rounding. `−inf` / `+inf` where `D`
    vanishes on a whole half-line (all weights zero)."""
    P, n = pos.shape
    order = np.argsort(pos, axis=1, kind="stable")
    flat = order + (np.arange(P) * n)[:, None]
    p = pos.ravel()[flat]
    A = np.cumsum(dA.ravel()[flat], axis=1)
    A += A0[:, None]
    B = np.cumsum(dB.ravel()[flat], axis=1)
    B += B0[:, None]
    D = A * p - B  # D at each breakpoint (continuous, so ties between breakpoints do not matter)
    out = []
    for strict in (False, True) if hi else (False,):
        s = np.count_nonzero(D <= 0 if strict else D < 0, axis=1)  # segment: 0 (left of all) .. n
        j = np.maximum(s - 1, 0)
        first = s == 0
        flat_j = j + np.arange(P) * n
        a = np.where(first, A0, A.ravel()[flat_j])
        b = np.where(first, B0, B.ravel()[flat_j])
        left = np.where(first, -np.inf, p.ravel()[flat_j])
        right = np.where(s == n, np.inf, p.ravel()[np.minimum(s, n - 1) + np.arange(P) * n])
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.minimum(np.maximum(b / a, left), right)
        # a == 0: D is flat on the segment (all weights zero when it is unbounded; else rounding)
        out.append(np.where(a > 0, r, right if strict else left))
    return out[0], (out[1] if hi else None)


def _h(w: np.ndarray, x: np.ndarray, zeta: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """`2σ² h_j(η)` row-wise (`eta` finite)."""
    e = eta[:, None]
    up = np.maximum(e - (x + zeta), 0.0)
    dn = np.maximum((x - zeta) - e, 0.0)
    return (w * (up * up + dn * dn)).sum(axis=1)


def _check(w: object, x: object, zeta: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    w = np.asarray(w, dtype=float)
    x = np.asarray(x, dtype=float)
    z = np.asarray(zeta, dtype=float)
    if x.ndim != 2 or w.shape != x.shape or z.shape != (x.shape[1],):
        raise ValueError(f"weights {w.shape} and means {x.shape} must both be K×M, and zeta of length M ({z.shape})")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(w)) and np.all(np.isfinite(z))):
        raise ValueError("weights, means and zeta must be finite (no NaN or inf)")
    if w.size and w.min() < 0:
        raise ValueError("weights must be >= 0")
    if z.min() < 0:
        raise ValueError("zeta must be >= 0")
    return w, x, z


class _Problem:
    """Every arm's events and projection for one (weights, means) pair, centred for precision."""

    __slots__ = ("w", "x", "z", "c", "pos", "dA", "dB", "A0", "B0", "sign", "proj")

    def __init__(self, w: np.ndarray, x: np.ndarray, z: np.ndarray, sigma: float, centre: float | None = None) -> None:
        K, M = x.shape
        # translation invariance: centre the means (precision), unless a fixed centre is given
        self.c = c = float(x[:, -1].sum()) / K if centre is None else float(centre)
        xc = x - c
        low = xc - z
        up = xc + z
        self.w, self.x, self.z = w, xc, z
        # events of D_j = σ² h_j': at x + ζ the "up" term starts (slope +w), at x − ζ the "down" term ends
        self.pos = np.concatenate((up, low), axis=1)
        self.dA = np.concatenate((w, -w), axis=1)
        wl = w * low
        self.dB = np.concatenate((w * up, -wl), axis=1)
        self.A0 = w.sum(axis=1)
        self.B0 = wl.sum(axis=1)
        self.sign = np.concatenate((np.ones(M), -np.ones(M)))
        xm = xc[:, -1]
        # arms whose means satisfy the constraints and whose top fidelity has weight: projection = x_M
        easy = w[:, -1] > 0
        if M > 1:
            easy &= ((low[:, :-1] <= xm[:, None]) & (up[:, :-1] >= xm[:, None])).all(axis=1)
        if easy.all():
            self.proj = Projection(xm, xm, np.zeros(K))
            return
        lo = xm.copy()
        hi = xm.copy()
        v = np.zeros(K)
        idx = np.flatnonzero(~easy)
        # with weight on the top fidelity (ζ_M = 0) h_j is strictly convex: a single minimiser
        need_hi = bool((w[idx, -1] <= 0).any())
        l_, h_ = _solve(self.pos[idx], self.dA[idx], self.dB[idx], self.A0[idx], self.B0[idx], need_hi)
        lo[idx] = l_
        hi[idx] = h_ if need_hi else l_
        eta = np.where(np.isfinite(l_), l_, 0.0)  # lo = −inf only when all weights are 0 (value 0)
        v[idx] = _h(w[idx], xc[idx], z, eta) / (2.0 * sigma * sigma)
        self.proj = Projection(lo, hi, v)

    def update_rows(self, rows: np.ndarray, w: np.ndarray, x: np.ndarray, sigma: float) -> None:
        """Replace the weights and (uncentred) means of `rows` and recompute their events and projections
        in place (the centre `c` is kept: the model is translation invariant). `proj` must own its arrays."""
        M = x.shape[1]
        xc = x - self.c
        low = xc - self.z
        up = xc + self.z
        self.w[rows] = w
        self.x[rows] = xc
        self.pos[rows] = np.concatenate((up, low), axis=1)
        self.dA[rows] = np.concatenate((w, -w), axis=1)
        wl = w * low
        self.dB[rows] = np.concatenate((w * up, -wl), axis=1)
        self.A0[rows] = w.sum(axis=1)
        self.B0[rows] = wl.sum(axis=1)
        xm = xc[:, -1]
        easy = w[:, -1] > 0
        if M > 1:
            easy &= ((low[:, :-1] <= xm[:, None]) & (up[:, :-1] >= xm[:, None])).all(axis=1)
        lo = xm.copy()
        hi = xm.copy()
        v = np.zeros(rows.size)
        hard = np.flatnonzero(~easy)
        if hard.size:
            r = rows[hard]
            need_hi = bool((w[hard, -1] <= 0).any())
            l_, h_ = _solve(self.pos[r], self.dA[r], self.dB[r], self.A0[r], self.B0[r], need_hi)
            lo[hard] = l_
            hi[hard] = h_ if need_hi else l_
            eta = np.where(np.isfinite(l_), l_, 0.0)
            v[hard] = _h(w[hard], xc[hard], self.z, eta) / (2.0 * sigma * sigma)
        self.proj.lo[rows] = lo
        self.proj.hi[rows] = hi
        self.proj.value[rows] = v

    def pair_min(self, i: int, idx: np.ndarray, sigma: float) -> tuple[np.ndarray, np.ndarray]:
        """`min_η h_i(η) + h_b(η)` for the answer `i` against the arms `idx` (centred η, value)."""
        P = idx.size
        pos = np.concatenate((np.repeat(self.pos[i : i + 1], P, axis=0), self.pos[idx]), axis=1)
        dA = np.concatenate((np.repeat(self.dA[i : i + 1], P, axis=0), self.dA[idx]), axis=1)
        dB = np.concatenate((np.repeat(self.dB[i : i + 1], P, axis=0), self.dB[idx]), axis=1)
        A0 = self.A0[i] + self.A0[idx]
        eta, _ = _solve(pos, dA, dB, A0, self.B0[i] + self.B0[idx], False)
        # 2σ² (h_i + h_b)(η) from the events: Σ |dA| (s (η − q))₊², s = +1 for "up", −1 for "down"
        q = pos - eta[:, None]
        q *= np.concatenate((self.sign, self.sign))
        np.minimum(q, 0.0, out=q)
        val = (np.abs(dA) * q * q).sum(axis=1)
        return eta, val / (2.0 * sigma * sigma)


def project(w: object, x: object, zeta: object, sigma: float) -> Projection:
    """Project every arm on the model on its own: minimisers `[lo_j, hi_j]` and `v_j = min_η h_j(η)`.

    >>> p = project([[1.0, 1.0]], [[0.9, 0.5]], [0.1, 0.0], sigma=1.0)   # inconsistent: 0.9 − 0.1 > 0.5
    >>> round(float(p.lo[0]), 3), round(float(p.value[0]), 4)            # meet halfway at η = 0.65
    (0.65, 0.0225)
    """
    w, x, z = _check(w, x, zeta)
    pr = _Problem(w, x, z, sigma)
    return Projection(pr.proj.lo + pr.c, pr.proj.hi + pr.c, pr.proj.value)


def _answer(pr: _Problem, i: int, sigma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`f(i, b)` for every `b` (`+inf` at `b = i`) and the alternative's centred `(η_i, η_b)`."""
    proj, x = pr.proj, pr.x
    K = x.shape[0]
    f = proj.value[i] + proj.value
    eta_i = np.empty(K)
    eta_b = np.empty(K)
    bind = proj.hi < proj.lo[i]
    bind[i] = False
    n_bind = int(np.count_nonzero(bind))
    if n_bind:
        idx = np.flatnonzero(bind)
        e, val = pr.pair_min(i, idx, sigma)
        f[idx] = val
        eta_i[idx] = e
        eta_b[idx] = e
    if n_bind < K - 1:
        # slack ordering constraint: a common minimiser when the two sets meet (the one nearest the
        # midpoint of the top-fidelity means), else the facing ends
        slack = ~bind
        slack[i] = False
        idx = np.flatnonzero(slack)
        lo_c = np.maximum(proj.lo[i], proj.lo[idx])
        hi_c = np.minimum(proj.hi[i], proj.hi[idx])
        mid = np.clip(0.5 * (x[i, -1] + x[idx, -1]), lo_c, hi_c)
        meet = lo_c <= hi_c
        eta_i[idx] = np.where(meet, mid, proj.hi[i])
        eta_b[idx] = np.where(meet, mid, proj.lo[idx])
    f[i] = np.inf
    eta_i[i] = eta_b[i] = np.nan
    return f, eta_i, eta_b


def answer_values(
    i: int, w: object, x: object, zeta: object, sigma: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`f(i, b)` for every arm `b` (`+inf` at `b = i`) and the alternative's `(η_i, η_b)` per `b`.

    Where the ordering constraint is slack the minimisers are not unique when some weights are 0; the
    representatives are a common point of `[lo_i, hi_i] ∩ [lo_b, hi_b]` when these meet (the one
    nearest the midpoint of the two top-fidelity means), else `η_i = hi_i` and `η_b = lo_b`.

    >>> f, ei, eb = answer_values(1, [[1.0, 1.0], [1.0, 1.0]], [[0.4, 0.5], [0.5, 0.6]], [0.1, 0.0], 0.1)
    >>> round(float(f[0]), 6), round(float(ei[0]), 6)     # (0.6 − η)² + 2 (η − 0.5)², minimal at η = 1.6/3
    (0.333333, 0.533333)
    """
    w, x, z = _check(w, x, zeta)
    if not 0 <= i < x.shape[0]:
        raise ValueError(f"i = {i} is out of range; accepted: 0..{x.shape[0] - 1}")
    pr = _Problem(w, x, z, sigma)
    f, ei, eb = _answer(pr, i, sigma)
    return f, ei + pr.c, eb + pr.c


def best_response(
    w: object, x: object, zeta: object, sigma: float, answer: int | None = None, *, check: bool = True
) -> BestResponse:
    """The closest alternative `max_i min_{b≠i} f(i, b)` (or `min_b f(answer, b)` for a given answer).

    Args:
        w: K×M non-negative weights (pull counts, or cost proportions divided by the costs).
        x: K×M means (may violate the model).
        zeta: the bias bounds ζ(m), length M.
        sigma: the Gaussian noise standard deviation.
        answer: evaluate this answer only (e.g. the true best arm for the lower bound).
        check: validate the inputs (policies that already hold valid float arrays pass False).

    The single-fidelity case is the classical GLR statistic (here for the answer 0):

    >>> r = best_response([[10.0], [10.0], [10.0]], [[1.0], [0.9], [0.0]], [0.0], sigma=1.0)
    >>> r.answer, r.challenger, round(r.value, 6)
    (0, 1, 0.025)
    """
    if check:
        w, x, z = _check(w, x, zeta)
        if not (np.isfinite(sigma) and sigma > 0):
            raise ValueError(f"sigma = {sigma} must be finite and > 0")
    else:
        z = zeta  # type: ignore[assignment]
    K = x.shape[0]  # type: ignore[union-attr]
    if K == 1:
        x0 = float(x[0, -1])  # type: ignore[index]
        return BestResponse(0.0, 0, -1, x0, float("nan"), np.array([np.inf]), np.array([x0]))
    pr = _Problem(w, x, z, sigma)  # type: ignore[arg-type]

    def evaluate(i: int) -> BestResponse:
        f, ei, eb = _answer(pr, i, sigma)
        b = int(np.argmin(f))
        return BestResponse(float(f[b]), i, b, float(ei[b]) + pr.c, float(eb[b]) + pr.c, f, pr.proj.lo + pr.c)

    if answer is not None:
        if not 0 <= int(answer) < K:
            raise ValueError(f"answer = {answer} is out of range; accepted: 0..{K - 1}")
        return evaluate(int(answer))
    v = pr.proj.value
    top = int(np.argmax(pr.proj.lo))
    best = evaluate(top)
    if not v.any():
        return best  # every arm consistent: any other answer has a challenger at cost 0
    bound = v + v[top]  # min_b f(i, b) <= f(i, top) = v_i + v_top for every i != top
    bound[top] = -np.inf
    cand = np.flatnonzero(bound > best.value)
    for i in cand[np.argsort(-bound[cand], kind="stable")].tolist():
        if bound[i] <= best.value:
            break
        r = evaluate(i)
        if r.value > best.value:
            best = r
    return best


class _AnswerCache:
    """`f(i, b)` for every challenger `b` of one answer `i`, each exact when computed (`ft`: when)."""

    __slots__ = ("t0", "f", "ft", "eta")

    def __init__(self, t0: int, f: np.ndarray, eta: np.ndarray) -> None:
        self.t0 = t0
        self.f = f
        self.ft = np.full(f.size, t0, dtype=np.int64)
        self.eta = eta


class IncrementalResponse:
    """:func:`best_response` for weights and means that change a few rows at a time (MF-GRAD's steps).

    The pair values `f(i, b)` of the answers evaluated recently are kept between calls. When only
    weights increase (`set_rows(..., grow=True)`: MF-GRAD's exponential-weights step only increases
    the rows it touches, up to a common factor that does not change the answer, the challenger or the
    alternative), every `f` can only increase (each `h_j` grows pointwise), so a kept value is a
    lower bound: the closest challenger is found by re-solving only the pairs whose bound is below the
    best exact value found (usually one or two), instead of all `K − 1`. A change of means (a new
    sample) or any other change of a row invalidates that row's pairs (and the whole cache of an answer
    whose row changed). Bounds within a relative `MARGIN` of the minimum are re-solved as well, so the
    result is a function of the current `(w, x)` alone (what was kept only saves work: a policy restored
    from its state decides exactly as the original). The answer level is that of :func:`best_response`;
    the means are not centred (it centres them), so values can differ from it in the last digits.

    >>> w = np.ones((3, 2)); x = np.array([[0.4, 0.5], [0.5, 0.6], [0.3, 0.35]]); z = np.array([0.1, 0.0])
    >>> ir = IncrementalResponse(w, x, z, sigma=0.1)
    >>> r = ir.solve(); s = best_response(w, x, z, 0.1)
    >>> (r.answer, r.challenger, round(r.value, 9)) == (s.answer, s.challenger, round(s.value, 9))
    True
    >>> ir.set_rows([1], w=2 * w[1:2], grow=True)            # the answer's weights grow
    >>> r = ir.solve(); s = best_response(np.array([[1, 1], [2, 2], [1, 1.]]), x, z, 0.1)
    >>> (r.answer, r.challenger, round(r.value, 9)) == (s.answer, s.challenger, round(s.value, 9))
    True
    """

    #: answers whose pair values are kept
    MAX_CACHED = 16
    #: pairs re-solved together while the lowest bound is stale
    BATCH = 8
    #: relative margin: kept bounds within it of the minimum are re-solved too (rounding)
    MARGIN = 1e-9

    def __init__(self, w: object, x: object, zeta: object, sigma: float) -> None:
        self.z = np.asarray(zeta, dtype=float)
        self.sigma = float(sigma)
        self.reset(w, x)

    def reset(self, w: object, x: object) -> None:
        """Start again from weights `w` and means `x` (K×M), forgetting every kept value."""
        w = np.array(w, dtype=float)
        x = np.array(x, dtype=float)
        self.K = x.shape[0]
        self._x = x.copy()
        # no centring: every value is then a function of the current (w, x) alone, whatever was kept
        self.pr = _Problem(w, x, self.z, self.sigma, centre=0.0)
        p = self.pr.proj
        self.pr.proj = Projection(p.lo.copy(), p.hi.copy(), p.value.copy())
        self._now = 0
        self._wt = np.zeros(self.K, dtype=np.int64)  # last growth of each row's weights
        self._xt = np.zeros(self.K, dtype=np.int64)  # last invalidating change of each row
        self._caches: dict[int, _AnswerCache] = {}
        self._dirty: dict[int, tuple[np.ndarray | None, np.ndarray | None]] = {}

    def set_rows(self, rows: object, w: object = None, x: object = None, *, grow: bool = False) -> None:
        """New weights and/or means of `rows`. `grow=True` promises that no weight decreased and the
        means did not change (kept pair values stay lower bounds)."""
        rows = np.atleast_1d(np.asarray(rows, dtype=np.int64))
        self._now += 1
        wa = None if w is None else np.asarray(w, dtype=float).reshape(rows.size, -1)
        xa = None if x is None else np.asarray(x, dtype=float).reshape(rows.size, -1)
        for j, r in enumerate(rows.tolist()):
            old = self._dirty.get(r, (None, None))
            self._dirty[r] = (old[0] if wa is None else wa[j], old[1] if xa is None else xa[j])
        if grow and x is None:
            self._wt[rows] = self._now
        else:
            self._xt[rows] = self._now
            self._wt[rows] = self._now
            for r in rows.tolist():
                self._caches.pop(r, None)

    def _refresh(self) -> None:
        if not self._dirty:
            return
        pr = self.pr
        rows = np.fromiter(self._dirty, dtype=np.int64, count=len(self._dirty))
        w = pr.w[rows].copy()
        for j, (wr, xr) in enumerate(self._dirty.values()):
            if wr is not None:
                w[j] = wr
            if xr is not None:
                self._x[rows[j]] = xr
        x = self._x[rows]
        self._dirty = {}
        pr.update_rows(rows, w, x, self.sigma)

    def _challenger(self, i: int, floor: float = -np.inf) -> tuple[float, int, float, float, np.ndarray]:
        """`(min_b f(i, b), b, η_i, η_b, values)` (centred η; `values`: `f(i, ·)`, lower bounds where
        not re-solved), re-solving as few pairs as the bounds allow. When some exact value is already
        `≤ floor` it is returned at once (the caller only needs to know that the minimum is not above)."""
        pr, sigma = self.pr, self.sigma
        proj = pr.proj
        cache = self._caches.get(i)
        if floor > -np.inf:
            slack = proj.hi >= proj.lo[i]
            slack[i] = False
            if slack.any():
                sv = np.where(slack, proj.value, np.inf)
                b = int(np.argmin(sv))
                if proj.value[i] + sv[b] <= floor:  # a slack challenger already makes f(i, ·) small enough
                    return float(proj.value[i] + sv[b]), b, float("nan"), float("nan"), sv
        if cache is None:
            f, ei, eb = _answer(pr, i, sigma)
            if len(self._caches) >= self.MAX_CACHED:
                self._caches.pop(next(iter(self._caches)))
            self._caches[i] = _AnswerCache(self._now, f, ei)
            b = int(np.argmin(f))
            return float(f[b]), b, float(ei[b]), float(eb[b]), f
        self._caches[i] = self._caches.pop(i)  # most recently used last
        F, ft = cache.f, cache.ft
        lo, hi, v = proj.lo, proj.hi, proj.value
        bind = hi < lo[i]
        bind[i] = False
        eff = v[i] + v  # slack pairs: exact
        eff[i] = np.inf
        idx = np.flatnonzero(bind)
        if idx.size:
            stale_at = np.maximum(np.maximum(self._wt[idx], self._xt[idx]), max(self._wt[i], self._xt[i]))
            eff[idx] = F[idx]
            eff[idx[ft[idx] < self._xt[idx]]] = -np.inf  # changed means: no bound, re-solved first
            while True:
                b = int(np.argmin(eff))
                is_stale = ft[idx] < stale_at
                if not bind[b] or ft[b] >= max(self._wt[b], self._xt[b], self._wt[i], self._xt[i]):
                    # an exact minimum: re-solve the kept bounds that rounding could put below it
                    m = float(eff[b])
                    stale = idx[is_stale & (eff[idx] <= m + self.MARGIN * abs(m))]
                    if stale.size == 0:
                        break
                else:
                    stale = idx[is_stale]
                    if stale.size > 2 * self.BATCH:  # few stale pairs are re-solved at once (one call)
                        stale = stale[np.argpartition(eff[stale], self.BATCH)[: self.BATCH]]
                self._solve_pairs(i, cache, stale)
                eff[stale] = F[stale]
        b = int(np.argmin(eff))
        if bind[b]:
            e = float(cache.eta[b])
            return float(eff[b]), b, e, e, eff
        lo_c = max(lo[i], lo[b])
        hi_c = min(hi[i], hi[b])
        if lo_c <= hi_c:  # as _answer: the common minimiser nearest the midpoint of the top-fidelity means
            mid = min(max(0.5 * (pr.x[i, -1] + pr.x[b, -1]), lo_c), hi_c)
            return float(eff[b]), b, float(mid), float(mid), eff
        return float(eff[b]), b, float(hi[i]), float(lo[b]), eff

    def _solve_pairs(self, i: int, cache: _AnswerCache, idx: np.ndarray) -> None:
        e, val = self.pr.pair_min(i, idx, self.sigma)
        cache.f[idx] = val
        cache.eta[idx] = e
        cache.ft[idx] = self._now

    def solve(self) -> BestResponse:
        """The closest alternative `max_i min_{b≠i} f(i, b)` at the current weights and means (as
        :func:`best_response`; `values` holds lower bounds where a pair was not re-solved)."""
        self._refresh()
        pr = self.pr
        c = pr.c
        if self.K == 1:
            x0 = float(pr.x[0, -1] + c)
            return BestResponse(0.0, 0, -1, x0, float("nan"), np.array([np.inf]), np.array([x0]))
        v = pr.proj.value
        top = int(np.argmax(pr.proj.lo))
        best = (*self._challenger(top), top)
        if v.any():
            bound = v + v[top]
            bound[top] = -np.inf
            cand = np.flatnonzero(bound > best[0])
            for i in cand[np.argsort(-bound[cand], kind="stable")].tolist():
                if bound[i] <= best[0]:
                    break
                r = (*self._challenger(i, floor=best[0]), i)
                if r[0] > best[0]:
                    best = r
        value, b, ei, eb, values, i = best
        return BestResponse(value, i, b, ei + c, eb + c, values, pr.proj.lo + c)


def response_upper_bound(w: np.ndarray, x: np.ndarray, zeta: np.ndarray, sigma: float, stale: BestResponse) -> float:
    """A cheap upper bound on `Z(w, x) = max_i min_{b≠i} f(i, b)` from a (possibly stale) best response.

    Every term is the cost of an admissible alternative at the current `(w, x)`, built from the stale
    one's points: for its answer `T`, `min_b f(T, b) ≤ h_T(η_T) + h_B(η_B)` (`B`, `η_B ≥ η_T` the
    stale challenger and alternative); for `i ≠ T`, `min_b f(i, b) ≤ h_i(e_i) + h_b(e_b)` for any
    `b` whose stale projection point `e_b ≥ e_i` (the cheapest such `b` is taken), or `b = T` at
    `max(e_i, e_T)`. `O(K log K + KM)`. MF-GRAD evaluates the exact statistic only when this bound
    reaches the threshold, so it stops exactly when evaluating the statistic after every sample would.
    Inputs are trusted (valid K×M float arrays, `K ≥ 2`).

    >>> w = np.array([[5.0, 5.0], [5.0, 5.0]]); x = np.array([[0.4, 0.5], [0.5, 0.6]]); z = np.array([0.1, 0.0])
    >>> r = best_response(w, x, z, 0.1)
    >>> bool(abs(response_upper_bound(w, x, z, 0.1, r) - r.value) < 1e-12)
    True
    """
    return ResponseUpperBound(w, x, zeta, sigma, stale).value()


class ResponseUpperBound:
    """:func:`response_upper_bound` kept up to date while rows of `(w, x)` change one at a time.

    `w` and `x` are read by reference: after changing rows of them in place, call :meth:`update` with
    those rows; :meth:`value` then equals `response_upper_bound(w, x, zeta, sigma, stale)` exactly, at
    `O(K)` per call instead of `O(K log K + KM)` (the stale answer's row costs `O(KM)`).

    >>> w = np.array([[5.0, 5.0], [5.0, 5.0]]); x = np.array([[0.4, 0.5], [0.5, 0.6]]); z = np.array([0.1, 0.0])
    >>> ub = ResponseUpperBound(w, x, z, 0.1, best_response(w, x, z, 0.1))
    >>> w[1] += 1.0; ub.update([1])
    >>> ub.value() == response_upper_bound(w, x, z, 0.1, ub.stale)
    True
    """

    def __init__(self, w: np.ndarray, x: np.ndarray, zeta: np.ndarray, sigma: float, stale: BestResponse) -> None:
        self.w, self.x, self.zeta, self.sigma, self.stale = w, x, zeta, sigma, stale
        self.e = e = stale.projection
        self.T = stale.answer
        self._pair = np.array([stale.answer, stale.challenger])
        self._etas = np.array([stale.eta_answer, stale.eta_challenger])
        self.order = np.argsort(-e, kind="stable")
        self._hTB = _h(w[self._pair], x[self._pair], zeta, self._etas)
        self._h_e = _h(w, x, zeta, e)  # every arm at its stale projection point
        self._eT = np.maximum(e, e[self.T])
        self._h_T = self._h_T_row()

    def _h_T_row(self) -> np.ndarray:
        T = self.T
        return _h(self.w[T][None, :], self.x[T][None, :], self.zeta, self._eT)  # arm T moved to max(e_i, e_T)

    def update(self, rows: object) -> None:
        """Rows of `w` or `x` changed (in place)."""
        rows = np.atleast_1d(np.asarray(rows, dtype=np.int64))
        self._h_e[rows] = _h(self.w[rows], self.x[rows], self.zeta, self.e[rows])
        changed = rows.tolist()
        T, B = self._pair.tolist()
        if T in changed or B in changed:
            self._hTB = _h(self.w[self._pair], self.x[self._pair], self.zeta, self._etas)
            if T in changed:
                self._h_T = self._h_T_row()

    def value(self) -> float:
        """The upper bound at the current `(w, x)`."""
        K = self.x.shape[0]
        ub = float(self._hTB[0] + self._hTB[1])
        order = self.order
        before = np.empty(K)
        before[0] = np.inf
        np.minimum.accumulate(self._h_e[order][:-1], out=before[1:])  # cheapest arm ranked strictly higher
        best_b = np.empty(K)
        best_b[order] = before
        cand = self._h_e + np.minimum(best_b, self._h_T)
        cand[self.T] = -np.inf
        return max(ub, float(cand.max())) / (2.0 * self.sigma * self.sigma)


def alternative_means(x: object, zeta: object, eta: float) -> np.ndarray:
    """The means `clip(x_m, η − ζ(m), η + ζ(m))` of one arm moved to top-fidelity value `η`.

    >>> np.round(alternative_means([0.4, 0.5], [0.1, 0.0], 0.55), 12).tolist()
    [0.45, 0.55]
    """
    x = np.asarray(x, dtype=float)
    z = np.asarray(zeta, dtype=float)
    return np.clip(x, eta - z, eta + z)
