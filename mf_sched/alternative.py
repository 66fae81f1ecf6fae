"""The closest alternative in the multi-fidelity model (Poiani, Degenne, Kaufmann, Metelli, Restelli 2024).

Shared by the tight lower bound (:func:`mf_sched.bounds.tight_lower_bound`), MF-GRAD's gradient and its
GLR stopping statistic (:mod:`mf_sched.policies.mf_grad`). Digest: ``papers/poiani2024-mfgrad-spec.md``
§2.2–2.4.

**Model.** Gaussian observations with a known common σ; arm ``j`` at fidelity ``m`` has mean
``θ_{j,m}`` with ``|θ_{j,m} − θ_{j,M}| ≤ ζ(m)`` (the set ``M_MF``). With non-negative weights ``w`` (pull
counts for the GLR, cost proportions ``ω/λ`` for the bound and the gradient) and means ``x`` (empirical
means, which may violate the constraints), the cost of moving arm ``j`` to a model whose top-fidelity
mean is ``η`` is::

    h_j(η) = Σ_m w_{j,m} d(x_{j,m}, clip(x_{j,m}, η − ζ(m), η + ζ(m))),     d(a, b) = (a − b)²/(2σ²)

(digest §2.3). ``h_j`` is convex and piecewise quadratic with breakpoints ``x_{j,m} ± ζ(m)``, and its
derivative ``σ² h_j'(η) = Σ_m w_{j,m}[(η − x_{j,m} − ζ(m))₊ − (x_{j,m} − ζ(m) − η)₊]`` is piecewise linear and
non-decreasing. For an answer ``i`` and a challenger ``b``::

    f(i, b) = min_{η_b ≥ η_i} h_i(η_i) + h_b(η_b)

is the cheapest alternative in ``M_MF`` in which ``b`` is at least as good as ``i`` (ties count as
alternatives, "≥" as in the authors' code). Let ``[lo_j, hi_j]`` be the set of minimisers of ``h_j``
(a point when ``w_{j,M} > 0``; an interval, possibly unbounded, when some weights are 0) and
``v_j = min h_j`` (0 when ``x_j`` satisfies the constraints). Then

* if ``hi_b ≥ lo_i`` the ordering constraint is slack and ``f(i, b) = v_i + v_b``;
* otherwise it binds and ``f(i, b) = min_η h_i(η) + h_b(η)``, a one-dimensional convex problem.

Both minimisations are solved exactly by sorting the breakpoints and evaluating the derivative at all
of them with prefix sums: ``O(M log M)`` per problem, vectorised over arms and challengers (the digest's
"faster, same answer" method, §2.2). On the segment where the derivative changes sign the root is the
fixed point ``η = Σ_active w·target / Σ_active w`` of the authors' code (their ``fixed_point_list``),
read off the prefix sums; it is clipped to its segment, and a flat segment (empty active set) is never
divided by.

**Answer level.** ``Z(w, x) = max_i min_{b≠i} f(i, b)`` (the authors' ``solve_stopping``: the maximum
over all answers, digest A4). Evaluating every pair costs ``O(K² M log M)``; :func:`best_response`
evaluates the answer ``top`` with the highest projected top-fidelity mean and then only the answers
that can still beat it: for ``i ≠ top``, ``min_b f(i, b) ≤ f(i, top) = v_i + v_top``, so ``i`` is
evaluated only when ``v_i + v_top`` exceeds the best value found (digest §7.3). When ``x`` satisfies the
constraints every ``v`` is 0 and one answer is evaluated: ``O(K M log M)`` per call.

**The authors' single-fidelity bug (digest A6) is not reproduced**: when the ordering constraint is
slack the value is ``v_i + v_b`` (often 0), never "no value", so with ``M = 1`` the statistic is the
classical GLR (counts (10, 10, 10), means (1.0, 0.9, 0.0), σ = 1 give arm 0 with 0.025, see the tests).

Example (the 5x2 instance at the optimal cost proportions, digest §2.6):

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
    "project",
    "answer_values",
    "best_response",
    "response_upper_bound",
    "alternative_means",
]


@dataclass(frozen=True)
class Projection:
    """Per-arm projection on the model: minimisers ``[lo, hi]`` of ``h_j`` and its minimum ``value``."""

    lo: np.ndarray
    hi: np.ndarray
    value: np.ndarray


@dataclass(frozen=True)
class BestResponse:
    """The closest alternative: ``value = min_b f(answer, b)``, maximised over answers (or for a given one).

    Attributes:
        value: ``Z = max_i min_{b≠i} f(i, b)`` (or ``min_b f(answer, b)`` when the answer was given).
        answer: the maximising answer ``î`` (lowest index among ties with the projected leader first).
        challenger: its minimising challenger ``b̂`` (lowest index among ties); −1 when ``K = 1``.
        eta_answer, eta_challenger: top-fidelity values ``θ_{î,M}``, ``θ_{b̂,M}`` of the alternative; the
            other fidelities are ``clip(x, η − ζ, η + ζ)`` (:func:`alternative_means`).
        values: ``f(answer, b)`` for every arm ``b`` (``+inf`` at ``b = answer``).
        projection: every arm's own projection point (``lo_j``; ``x_{j,M}`` for an arm that satisfies the
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
    """Row-wise zeros of the piecewise linear non-decreasing ``D(η) = A(η) η − B(η)`` given by its events
    (breakpoint ``pos``, slope change ``dA``, intercept change ``dB``; (P, n) arrays) and the slope and
    intercept ``A0, B0`` left of every breakpoint.

    Returns the first zero ``lo`` (and, if ``hi``, the last zero; else None). The zero lies on the segment
    after the last breakpoint where ``D < 0`` (``≤ 0`` for the last zero); there ``D`` is the line
    ``A η − B``, whose root ``B/A`` is the fixed point "weighted mean of the active targets" of the
    authors' code; it is clipped to the segment to absorb rounding. ``−inf`` / ``+inf`` where ``D``
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
    """``2σ² h_j(η)`` row-wise (``eta`` finite)."""
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

    def __init__(self, w: np.ndarray, x: np.ndarray, z: np.ndarray, sigma: float) -> None:
        K, M = x.shape
        self.c = c = float(x[:, -1].sum()) / K  # translation invariance: centre the means (precision)
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

    def pair_min(self, i: int, idx: np.ndarray, sigma: float) -> tuple[np.ndarray, np.ndarray]:
        """``min_η h_i(η) + h_b(η)`` for the answer ``i`` against the arms ``idx`` (centred η, value)."""
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
    """Project every arm on the model on its own: minimisers ``[lo_j, hi_j]`` and ``v_j = min_η h_j(η)``.

    >>> p = project([[1.0, 1.0]], [[0.9, 0.5]], [0.1, 0.0], sigma=1.0)   # inconsistent: 0.9 − 0.1 > 0.5
    >>> round(float(p.lo[0]), 3), round(float(p.value[0]), 4)            # meet halfway at η = 0.65
    (0.65, 0.0225)
    """
    w, x, z = _check(w, x, zeta)
    pr = _Problem(w, x, z, sigma)
    return Projection(pr.proj.lo + pr.c, pr.proj.hi + pr.c, pr.proj.value)


def _answer(pr: _Problem, i: int, sigma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``f(i, b)`` for every ``b`` (``+inf`` at ``b = i``) and the alternative's centred ``(η_i, η_b)``."""
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
    """``f(i, b)`` for every arm ``b`` (``+inf`` at ``b = i``) and the alternative's ``(η_i, η_b)`` per ``b``.

    Where the ordering constraint is slack the minimisers are not unique when some weights are 0; the
    representatives are a common point of ``[lo_i, hi_i] ∩ [lo_b, hi_b]`` when these meet (the one
    nearest the midpoint of the two top-fidelity means), else ``η_i = hi_i`` and ``η_b = lo_b``.

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
    """The closest alternative ``max_i min_{b≠i} f(i, b)`` (or ``min_b f(answer, b)`` for a given answer).

    Args:
        w: K×M non-negative weights (pull counts, or cost proportions divided by the costs).
        x: K×M means (may violate the model).
        zeta: the bias bounds ζ(m), length M.
        sigma: the Gaussian noise standard deviation.
        answer: evaluate this answer only (e.g. the true best arm for the lower bound).
        check: validate the inputs (policies that already hold valid float arrays pass False).

    The single-fidelity case is the classical GLR statistic (here for the answer 0; digest A6):

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


def response_upper_bound(w: np.ndarray, x: np.ndarray, zeta: np.ndarray, sigma: float, stale: BestResponse) -> float:
    """A cheap upper bound on ``Z(w, x) = max_i min_{b≠i} f(i, b)`` from a (possibly stale) best response.

    Every term is the cost of an admissible alternative at the current ``(w, x)``, built from the stale
    one's points: for its answer ``T``, ``min_b f(T, b) ≤ h_T(η_T) + h_B(η_B)`` (``B``, ``η_B ≥ η_T`` the
    stale challenger and alternative); for ``i ≠ T``, ``min_b f(i, b) ≤ h_i(e_i) + h_b(e_b)`` for any
    ``b`` whose stale projection point ``e_b ≥ e_i`` (the cheapest such ``b`` is taken), or ``b = T`` at
    ``max(e_i, e_T)``. ``O(K log K + KM)``. MF-GRAD evaluates the exact statistic only when this bound
    reaches the threshold, so it stops exactly when evaluating the statistic after every sample would.
    Inputs are trusted (valid K×M float arrays, ``K ≥ 2``).

    >>> w = np.array([[5.0, 5.0], [5.0, 5.0]]); x = np.array([[0.4, 0.5], [0.5, 0.6]]); z = np.array([0.1, 0.0])
    >>> r = best_response(w, x, z, 0.1)
    >>> bool(abs(response_upper_bound(w, x, z, 0.1, r) - r.value) < 1e-12)
    True
    """
    K = x.shape[0]
    T, B = stale.answer, stale.challenger
    e = stale.projection
    rows = np.array([T, B])
    hTB = _h(w[rows], x[rows], zeta, np.array([stale.eta_answer, stale.eta_challenger]))
    ub = float(hTB[0] + hTB[1])
    h_e = _h(w, x, zeta, e)  # every arm at its stale projection point
    order = np.argsort(-e, kind="stable")
    before = np.empty(K)
    before[0] = np.inf
    np.minimum.accumulate(h_e[order][:-1], out=before[1:])  # cheapest arm ranked strictly higher
    best_b = np.empty(K)
    best_b[order] = before
    eT = np.array([e[T]])
    h_T = _h(w[T][None, :], x[T][None, :], zeta, np.maximum(e, eT[0]))  # arm T moved to max(e_i, e_T)
    cand = h_e + np.minimum(best_b, h_T)
    cand[T] = -np.inf
    return max(ub, float(cand.max())) / (2.0 * sigma * sigma)


def alternative_means(x: object, zeta: object, eta: float) -> np.ndarray:
    """The means ``clip(x_m, η − ζ(m), η + ζ(m))`` of one arm moved to top-fidelity value ``η``.

    >>> np.round(alternative_means([0.4, 0.5], [0.1, 0.0], 0.55), 12).tolist()
    [0.45, 0.55]
    """
    x = np.asarray(x, dtype=float)
    z = np.asarray(zeta, dtype=float)
    return np.clip(x, eta - z, eta + z)
