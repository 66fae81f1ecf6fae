"""What a GP-UCB-style policy does around its GPs on a search space: the initial design, the acquisition
optimiser and the pending points of parallel workers.

The GP policies (:class:`~mf_sched.policies.mf_gp_ucb.MFGPUCB`, :class:`~mf_sched.policies.gp_ucb.GPUCB`) work in
the encoded unit cube `[0, 1]^D` of a :class:`~mf_sched.continuous.space.SearchSpace`. The choices below follow
Kandasamy et al. (2016, App. B) and the authors' released code (`kirthevasank/mf-gp-ucb`):

* :func:`initial_design`: `"random"` (uniform, the paper's text), `"kmeans"` (the code: k-means++ centroids of
  `max(200, 10n)` uniform candidates) or `"lhs"` (a Latin hypercube), snapped to the space.
* :func:`maximize_acquisition`: DIRECT on the unit cube (`locally_biased=False`, `eps = 10⁻⁴`, as the code) with
  integer and categorical coordinates snapped inside the acquisition function, then an L-BFGS-B polish of the
  float coordinates; :func:`direct_budget` is the code's number of DIRECT evaluations,
  `⌈7·min(5, D)²·√min(t, 1000)⌉`.
* :func:`condition_on_pending`: the GP-BUCB step (Desautels, Krause and Burdick 2014; not in Kandasamy et al.):
  points being evaluated enter the GP with their posterior mean as the observation, so that the mean is unchanged
  and the standard deviation around them shrinks, and `W` workers spread out instead of repeating one point.

Example:
    >>> from mf_sched.continuous.space import Float, Int, SearchSpace
    >>> space = SearchSpace([Float("x", -1.0, 1.0), Int("k", 1, 5)])
    >>> def phi(u):  # highest at x = -0.5, k = 4; only called at snapped points (k an integer)
    ...     p = space.decode(u)
    ...     return -((p["x"] + 0.5) ** 2) - abs(p["k"] - 4)
    >>> z, value = maximize_acquisition(phi, space, maxfun=200)
    >>> p = space.decode(z)
    >>> round(p["x"], 4), p["k"], bool(abs(value) < 1e-8)
    (-0.5, 4, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.optimize import direct, minimize

from mf_sched.continuous import gp as _gp
from mf_sched.continuous.space import SearchSpace

__all__ = ["DESIGNS", "initial_design", "direct_budget", "maximize_acquisition", "condition_on_pending"]

#: the accepted names of the initial designs
DESIGNS: tuple[str, ...] = ("random", "lhs", "kmeans")


def initial_design(space: SearchSpace, n: int, design: str, rng: np.random.Generator) -> np.ndarray:
    """`n` initial points in the encoded unit cube, snapped to the space (so they may repeat where the space
    is discrete).

    Args:
        space: the search space.
        n: the number of points (at least 1).
        design: `"random"` (uniform), `"lhs"` (a Latin hypercube, scipy's `qmc.LatinHypercube`) or `"kmeans"`
            (k-means++ centroids of `max(200, 10n)` uniform candidates; one point is the centre of the cube).
        rng: the generator every random draw comes from (`"lhs"` and `"kmeans"` draw their seeds from it).

    Returns:
        An `(n, D)` array of encoded points.

    Example:
        >>> from mf_sched.continuous.space import Float, Int, SearchSpace
        >>> space = SearchSpace([Float("x", 0.0, 1.0), Int("k", 1, 3)])
        >>> Z = initial_design(space, 4, "lhs", np.random.default_rng(0))
        >>> Z.shape, sorted({space.decode(z)["k"] for z in Z}) <= [1, 2, 3]
        ((4, 2), True)
    """
    if design not in DESIGNS:
        raise ValueError(f"design = {design!r}; accepted: {', '.join(DESIGNS)}")
    D = space.dim
    if design == "random":
        Z = rng.random((n, D))
    elif design == "lhs":
        from scipy.stats import qmc

        Z = qmc.LatinHypercube(d=D, seed=int(rng.integers(2**31))).random(n)
    else:
        from scipy.cluster.vq import kmeans2

        if n == 1:
            Z = np.full((1, D), 0.5)
        else:
            cand = rng.random((max(200, 10 * n), D))
            Z, _ = kmeans2(cand, n, minit="++", seed=int(rng.integers(2**31)))
            Z = np.clip(Z, 0.0, 1.0)
    return space.snap(Z)


def direct_budget(t: int, dim: int) -> int:
    """The authors' code's number of DIRECT evaluations at iteration `t`: `⌈7·min(5, D)²·√min(t, 1000)⌉`.

    Args:
        t: the iteration, 1-based.
        dim: the encoded dimension `D` of the search space.

    Returns:
        The number of evaluations.

    Example:
        >>> direct_budget(1, 2), direct_budget(100, 6), direct_budget(10**6, 6)
        (28, 1750, 5534)
    """
    return int(math.ceil(7 * min(5, dim) ** 2 * math.sqrt(min(t, 1000))))


def maximize_acquisition(
    phi: Callable[[np.ndarray], float], space: SearchSpace, *, maxfun: int, polish: bool = True
) -> tuple[np.ndarray, float]:
    """Maximise an acquisition function over the encoded unit cube of `space`.

    DIRECT (`scipy.optimize.direct`, `locally_biased=False`, `eps = 10⁻⁴`, at most `maxfun` evaluations) sees
    `phi` of the snapped point wherever the space has integer or categorical coordinates; its optimum is
    clipped to the cube and snapped; then, with `polish`, L-BFGS-B (at most 50 iterations) moves the float
    coordinates only, and its point is kept when it is finite and strictly better.

    Args:
        phi: the acquisition function of an encoded point (shape `(D,)`), to maximise; it is only called at
            snapped points.
        space: the search space.
        maxfun: DIRECT's number of function evaluations (at least 1; :func:`direct_budget` gives the code's).
        polish: polish the float coordinates with L-BFGS-B.

    Returns:
        The encoded point found and `phi` there.
    """
    needs_snap = not bool(space.continuous.all())

    def neg(z: np.ndarray) -> float:
        return -phi(space.snap(z) if needs_snap else z)

    D = space.dim
    res = direct(neg, [(0.0, 1.0)] * D, maxfun=maxfun, maxiter=max(maxfun, 1000), locally_biased=False, eps=1e-4)
    z = space.snap(np.clip(np.asarray(res.x, dtype=float), 0.0, 1.0))
    val = phi(z)
    cont = space.continuous
    if polish and cont.any():
        base = z.copy()

        def neg_c(u: np.ndarray) -> float:
            w = base.copy()
            w[cont] = u
            return -phi(w)

        r = minimize(neg_c, z[cont], method="L-BFGS-B", bounds=[(0.0, 1.0)] * int(cont.sum()), options={"maxiter": 50})
        if np.all(np.isfinite(r.x)) and -float(r.fun) > val:
            z = base.copy()
            z[cont] = np.clip(r.x, 0.0, 1.0)
            val = -float(r.fun)
    return z, val


def condition_on_pending(
    post: _gp.Posterior,
    X: np.ndarray,
    y: np.ndarray,
    pending: np.ndarray,
    *,
    kernel: str,
    theta: np.ndarray,
    noise_var: float | None,
) -> _gp.Posterior:
    """The posterior after observing each pending point at its posterior mean (GP-BUCB, Desautels et al. 2014).

    Args:
        post: the posterior of the GP fitted on `(X, y)`.
        X: `(n, D)` the GP's data points (encoded).
        y: `(n,)` the GP's data values, in the GP's units.
        pending: `(k, D)` the points being evaluated (encoded; `k ≥ 1`).
        kernel: the GP's kernel (one of :data:`~mf_sched.continuous.gp.KERNELS`).
        theta: the GP's log hyper-parameters (kept, not refitted).
        noise_var: the GP's observation-noise variance, or None when `theta` ends with a fitted one.

    Returns:
        The posterior conditioned on `(X, y)` and on `(pending, µ(pending))`: the same mean, a smaller standard
        deviation at and near the pending points.
    """
    mu, _ = post.predict(pending)
    return _gp.fit_posterior(
        np.vstack([X, pending]), np.concatenate([y, mu]), kernel=kernel, theta=theta, noise_var=noise_var
    )
