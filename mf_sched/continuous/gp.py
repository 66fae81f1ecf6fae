"""Gaussian-process regression for the GP policies (MF-GP-UCB, GP-UCB).

Fitting is scikit-learn's :class:`~sklearn.gaussian_process.GaussianProcessRegressor` (a well-kept
implementation: kernel algebra, log marginal likelihood and its gradient, the Cholesky solve).
scikit-learn is an optional dependency, imported lazily: install `mf-sched[gp]`. This module imports
without it; the first fit raises :class:`ImportError` naming the extra.

What this module adds:

* **Kernels** `"se"` (squared exponential with one bandwidth — the released code of Kandasamy et al.
  2016), `"se-ard"` (one bandwidth per coordinate), `"matern52"` and `"matern52-ard"`: a signal
  variance `s` times a unit correlation, plus optionally a fitted white-noise variance.
  Hyper-parameters are handled as `theta = log([s, h_1, …, h_p, (η²)])` (scikit-learn's order).
* **Hyper-parameter search** that is deterministic and global on a small box: DIRECT
  (:func:`scipy.optimize.direct`, 200 evaluations of the log marginal likelihood on the log-box, as in
  the authors' code) followed by L-BFGS-B with the analytic gradient from the DIRECT optimum and from
  the previous hyper-parameters (warm start); the best of the three is kept.
* **A fast posterior path** (:class:`Posterior`): the acquisition optimiser evaluates the posterior one
  point at a time thousands of times per decision; scikit-learn's `predict` costs ≈ 100 µs of input
  checking per call, so the fitted factor `L` and weights `α` are taken from scikit-learn once and
  the mean `k(x)ᵀα` and standard deviation `√(s − ‖L⁻¹k(x)‖²)` (of the latent `f`, noise
  excluded) are computed directly (`benchmarks/gp_ask_latency.py` times both; the tests check that
  they agree with `GaussianProcessRegressor.predict` to 1e-10).

Example:
    >>> import numpy as np
    >>> X = np.array([[0.1], [0.5], [0.9]]); y = np.array([0.0, 1.0, 0.0])
    >>> post = fit_posterior(X, y, kernel="se", theta=np.log([1.0, 0.2]), noise_var=1e-6)
    >>> mu, sd = post.predict_one(np.array([0.5]))
    >>> round(mu, 4), round(sd, 4)
    (1.0, 0.001)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.linalg import solve_triangular
from scipy.optimize import direct, minimize

__all__ = [
    "KERNELS",
    "require_sklearn",
    "n_theta",
    "theta_bounds",
    "fit_posterior",
    "sklearn_kernel",
    "Posterior",
]

#: accepted kernel names
KERNELS: tuple[str, ...] = ("se", "se-ard", "matern52", "matern52-ard")

#: function evaluations of the DIRECT stage of the hyper-parameter search (the authors' code uses 200)
HYPER_DIRECT_EVALS = 200


def require_sklearn() -> Any:
    """Import `sklearn.gaussian_process` or raise ImportError naming the `gp` extra."""
    try:
        import sklearn.gaussian_process as skgp
    except ImportError:  # pragma: no cover - exercised in environments without scikit-learn
        raise ImportError("the GP policies (mf-gp-ucb, gp-ucb) need scikit-learn: pip install 'mf-sched[gp]'") from None
    return skgp


def check_kernel(kernel: str) -> str:
    if kernel not in KERNELS:
        raise ValueError(f"kernel = {kernel!r} is unknown; accepted: {', '.join(KERNELS)}")
    return kernel


def n_lengthscales(kernel: str, D: int) -> int:
    return D if kernel.endswith("-ard") else 1


def n_theta(kernel: str, D: int, fit_noise: bool) -> int:
    """Length of `theta`: signal variance, bandwidth(s) and, when fitted, the noise variance.

    Args:
        kernel: one of :data:`KERNELS` (an `-ard` kernel has one bandwidth per dimension).
        D: the input dimension, `≥ 1`.
        fit_noise: whether the observation-noise variance is fitted (one more entry).
    """
    return 1 + n_lengthscales(kernel, D) + int(fit_noise)


def theta_bounds(kernel: str, D: int, fit_noise: bool, *, signal: tuple[float, float], bandwidth: tuple[float, float],
                 noise: tuple[float, float] = (1e-8, 1.0)) -> np.ndarray:  # fmt: skip
    """`(p, 2)` array of log-bounds for `theta` from value ranges of each kind.

    Args:
        kernel: one of :data:`KERNELS`.
        D: the input dimension, `≥ 1`.
        fit_noise: whether the observation-noise variance is fitted (a last row for it).
        signal: `(low, high)` of the signal variance, both > 0.
        bandwidth: `(low, high)` of every length-scale, both > 0 (in the units of the inputs).
        noise: `(low, high)` of the noise variance, both > 0; read only with `fit_noise`.
    """
    rows = [np.log(signal)] + [np.log(bandwidth)] * n_lengthscales(kernel, D)
    if fit_noise:
        rows.append(np.log(noise))
    return np.array(rows, dtype=float)


def sklearn_kernel(kernel: str, D: int, theta: np.ndarray, bounds: np.ndarray | None, fit_noise: bool) -> Any:
    """The scikit-learn kernel (`ConstantKernel · base [+ WhiteKernel]`) for hyper-parameters `theta`
    in dimension `D`: what :func:`fit_posterior` fits, for checks against scikit-learn's own
    `GaussianProcessRegressor`.

    Args:
        kernel: one of :data:`KERNELS`.
        D: the input dimension, `≥ 1`.
        theta: the log hyper-parameters, in the order of :func:`theta_bounds`.
        bounds: their search box, `(p, 2)` log-bounds; `None`: fixed hyper-parameters.
        fit_noise: `theta` ends with the log noise variance (a `WhiteKernel` is added).
    """
    skgp = require_sklearn()
    K = skgp.kernels
    th = np.exp(np.asarray(theta, dtype=float))
    b = None if bounds is None else np.exp(np.asarray(bounds, dtype=float))
    nl = n_lengthscales(kernel, D)
    fixed = "fixed"
    cb = fixed if b is None else (float(b[0, 0]), float(b[0, 1]))
    ls = th[1 : 1 + nl]
    ls_arg: Any = float(ls[0]) if nl == 1 else ls.copy()
    lb = fixed if b is None else ((float(b[1, 0]), float(b[1, 1])) if nl == 1 else b[1 : 1 + nl].copy())
    if kernel.startswith("se"):
        corr = K.RBF(length_scale=ls_arg, length_scale_bounds=lb)
    else:
        corr = K.Matern(length_scale=ls_arg, length_scale_bounds=lb, nu=2.5)
    k = K.ConstantKernel(float(th[0]), constant_value_bounds=cb) * corr
    if fit_noise:
        nb = fixed if b is None else (float(b[-1, 0]), float(b[-1, 1]))
        k = k + K.WhiteKernel(noise_level=float(th[-1]), noise_level_bounds=nb)
    return k


_make_kernel = sklearn_kernel  # the former private name, kept as an alias


def _hyper_optimizer(obj_func: Callable[..., Any], initial_theta: np.ndarray, bounds: np.ndarray) -> tuple[Any, float]:
    """DIRECT on the log-box, then L-BFGS-B (analytic gradient) from the DIRECT optimum and the warm start."""

    def f(th: np.ndarray) -> float:
        v = float(obj_func(th, eval_gradient=False))
        return v if math.isfinite(v) else 1e300

    res = direct(f, [tuple(b) for b in bounds], maxfun=HYPER_DIRECT_EVALS, locally_biased=False)
    starts = [
        np.asarray(res.x, dtype=float),
        np.clip(np.asarray(initial_theta, dtype=float), bounds[:, 0], bounds[:, 1]),
    ]
    best_x, best_f = starts[0], f(starts[0])
    cf = f(starts[1])
    if cf < best_f:
        best_x, best_f = starts[1], cf

    def fg(th: np.ndarray) -> tuple[float, np.ndarray]:
        v, g = obj_func(th, eval_gradient=True)
        if not (np.isfinite(v) and np.all(np.isfinite(g))):
            return 1e300, np.zeros_like(th)
        return float(v), np.asarray(g, dtype=float)

    for x0 in starts:
        r = minimize(fg, x0, jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": 200})
        if np.all(np.isfinite(r.x)) and float(r.fun) < best_f:
            best_x, best_f = np.asarray(r.x, dtype=float), float(r.fun)
    return best_x, best_f


class Posterior:
    """The posterior of one GP (fixed hyper-parameters) with a fast evaluation path.

    Build it with :func:`fit_posterior`. All quantities are in the units of the `y` it was fitted on;
    the standard deviation is that of the latent function (observation noise excluded).

    Args:
        X: the `(n, D)` training inputs (`n` may be 0: the prior).
        kernel: one of :data:`KERNELS`.
        theta: the log hyper-parameters (signal variance, length-scale(s), then the noise variance when fitted).
        L: the lower Cholesky factor `(n, n)` of the training covariance (noise included); `None` when `n = 0`.
        alpha: `(K + σ²I)⁻¹ y`, shape `(n,)`; `None` when `n = 0`.

    Attributes:
        theta: the log hyper-parameters used.
        n: number of training points.
    """

    def __init__(
        self,
        X: np.ndarray,
        kernel: str,
        theta: np.ndarray,
        L: np.ndarray | None,
        alpha: np.ndarray | None,
    ) -> None:
        self.kernel = kernel
        self.theta = np.asarray(theta, dtype=float).copy()
        self.n = int(X.shape[0])
        D = X.shape[1]
        nl = n_lengthscales(kernel, D)
        self.s = float(np.exp(self.theta[0]))
        self._h = np.exp(self.theta[1 : 1 + nl])
        self._matern = kernel.startswith("matern")
        if self.n:
            self._Xs = X / self._h
            self._sq = np.einsum("ij,ij->i", self._Xs, self._Xs)
            self._alpha = np.asarray(alpha, dtype=float)
            self._Linv = solve_triangular(L, np.eye(self.n), lower=True, check_finite=False)

    def _corr(self, r2: np.ndarray) -> np.ndarray:
        if self._matern:
            r = np.sqrt(r2)
            return (1.0 + math.sqrt(5.0) * r + (5.0 / 3.0) * r2) * np.exp(-math.sqrt(5.0) * r)
        return np.exp(-0.5 * r2)

    def predict_one(self, z: np.ndarray) -> tuple[float, float]:
        """Posterior mean and standard deviation at one point `z` (shape `(D,)`).

        Args:
            z: the point, in the encoding of the training inputs, shape `(D,)`.
        """
        if not self.n:
            return 0.0, math.sqrt(self.s)
        zs = z / self._h
        r2 = np.maximum(self._sq + float(zs @ zs) - 2.0 * (self._Xs @ zs), 0.0)
        k = self.s * self._corr(r2)
        v = self._Linv @ k
        var = self.s - float(v @ v)
        return float(k @ self._alpha), math.sqrt(var) if var > 0.0 else 0.0

    def predict(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior means and standard deviations at the rows of `Z` (shape `(m, D)`).

        Args:
            Z: the points, in the encoding of the training inputs, shape `(m, D)` (one point `(D,)` is accepted).
        """
        Z = np.atleast_2d(np.asarray(Z, dtype=float))
        if not self.n:
            return np.zeros(Z.shape[0]), np.full(Z.shape[0], math.sqrt(self.s))
        Zs = Z / self._h
        r2 = np.maximum(self._sq[None, :] + np.einsum("ij,ij->i", Zs, Zs)[:, None] - 2.0 * (Zs @ self._Xs.T), 0.0)
        Kz = self.s * self._corr(r2)
        V = Kz @ self._Linv.T
        var = self.s - np.einsum("ij,ij->i", V, V)
        return Kz @ self._alpha, np.sqrt(np.maximum(var, 0.0))


def fit_posterior(
    X: np.ndarray,
    y: np.ndarray,
    *,
    kernel: str,
    theta: np.ndarray,
    noise_var: float | None,
    bounds: np.ndarray | None = None,
    optimize: bool = False,
) -> Posterior:
    """Condition a GP on `(X, y)`; with `optimize=True` first fit `theta` by maximising the log
    marginal likelihood within `bounds` (warm-started at `theta`).

    Args:
        X: `(n, D)` inputs (`n` may be 0: the prior).
        y: `(n,)` targets, already centred on the prior mean.
        kernel: one of :data:`KERNELS`.
        theta: log hyper-parameters (see :func:`n_theta`).
        noise_var: fixed observation-noise variance, or None when `theta` ends with a fitted one.
        bounds: `(p, 2)` log-bounds (needed with `optimize=True`).
        optimize: fit the hyper-parameters first.

    The Cholesky factorisation is retried with 10× more diagonal jitter (up to 1e6×) if it fails.
    """
    check_kernel(kernel)
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    D = X.shape[1]
    fit_noise = noise_var is None
    theta = np.asarray(theta, dtype=float)
    if theta.shape != (n_theta(kernel, D, fit_noise),):
        raise ValueError(
            f"theta has shape {theta.shape}; kernel {kernel!r} in {D} dims needs {n_theta(kernel, D, fit_noise)}"
        )
    if X.shape[0] == 0:
        return Posterior(X, kernel, theta, None, None)
    skgp = require_sklearn()
    from sklearn.exceptions import ConvergenceWarning

    base_alpha = 1e-10 if fit_noise else float(noise_var)
    opt = optimize and X.shape[0] >= 2
    last_err: Exception | None = None
    for jitter in (1.0, 10.0, 1e2, 1e3, 1e4, 1e5, 1e6):
        gp = skgp.GaussianProcessRegressor(
            kernel=sklearn_kernel(kernel, D, theta, bounds if opt else None, fit_noise),
            alpha=base_alpha * jitter,
            optimizer=_hyper_optimizer if opt else None,
            normalize_y=False,
            copy_X_train=True,
        )
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                gp.fit(X, y)
        except (np.linalg.LinAlgError, ValueError) as e:
            last_err = e
            continue
        fitted = np.asarray(gp.kernel_.theta, dtype=float) if opt else theta
        return Posterior(X, kernel, fitted, gp.L_, gp.alpha_)
    raise np.linalg.LinAlgError(f"GP fit failed even with 1e6x diagonal jitter: {last_err}")
