"""Confidence radii and KL divergences: the shared statistics of every policy.

Every policy takes its radius from here and its docstring cites which one. Conventions:

* `σ` is a sub-Gaussian scale. Rewards bounded in `[a, b]` are `(b − a)/2`-sub-Gaussian
  (Hoeffding's lemma), so a bounded-reward radius is the sub-Gaussian radius with that `σ`.
* A radius of `n = 0` samples is `+inf` (an unpulled arm is unconstrained).
* All functions are vectorised over numpy arrays and return float64 arrays (or numpy scalars).
* Logs are natural logs.

Radii implemented (each exactly as printed in its paper, constants included):

| function | formula | source |
|---|---|---|
| `subgaussian_radius` | `σ √(2 log(1/δ) / n)` | Chernoff, fixed n |
| `hoeffding_radius` | `(b − a) √(log(1/δ) / (2n))` | Hoeffding, fixed n |
| `anytime_radius` | `√(2σ² log(4 t² / δ) / t)` (`B(t, δ)`) | Poiani et al. 2022 §2.1 |
| `lil_radius` | `√(2σ² (log log T + log(1/δ)) / n)` | Poiani et al. 2024 code |
| `wang_beta` | `2σ √(log(L t⁴ / δ) / n)` (σ=½ gives Eq. 4's β) | Wang et al. 2023 Eq. 4 |
| `lucb1_beta` | `σ √(2 log(k₁ K t⁴ / δ) / u)` (σ=½: Kalyanakrishnan) | Kalyanakrishnan et al. 2012 |
| `ucb1_bonus` | `2σ √(2 log t / n)` (σ=½ gives UCB1's √(2 log t/n)) | Auer et al. 2002 |
| `psi_ucb_width` | `ψ⁻¹(ρ log t / n) = σ √(2ρ log t / n)` | Kandasamy et al. 2016 Eq. 3 |
| `glr_threshold` | `log(K/δ) + M log(1 + log t)` (GLR stopping, "practical") | Poiani et al. 2024 (code) |

Kandasamy et al. (2016) write concentration as `P(X̄_s − µ > ε) < ν exp(−s ψ(ε))` (their Eq. 2).
For σ-sub-Gaussian rewards `ψ(ε) = ε²/(2σ²)` (:func:`psi`, inverse :func:`psi_inv`); rewards in
`[0, 1]` (Bernoulli) are ½-sub-Gaussian, which gives Hoeffding's `ψ(ε) = 2ε²`. `ψ⁻¹(ρ log t/s)` is
then the UCB width of MF-UCB (`ρ = 4` is UCB1's bonus), and :func:`mfucb_gamma` the fidelity-switching
thresholds of their Eq. 4.

`anytime_radius(t, δ)` holds simultaneously for all `t ≥ 1` with probability `≥ 1 − δ` (a union
bound with `Σ_t δ/(2t²) ≤ δ`, two-sided), which is how IISE and successive elimination use it.
`wang_beta` keeps the factor-2 slack in the exponent of Wang et al. (2023; their proofs bound the tail
by `exp(−nβ²)` for [0, 1] rewards, where Hoeffding allows `exp(−2nβ²)`): do not "fix" it, the paper's
numbers depend on it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mf_sched._validate import check_delta

__all__ = [
    "subgaussian_radius",
    "hoeffding_radius",
    "anytime_radius",
    "lil_radius",
    "wang_beta",
    "wang_beta_numerator",
    "lucb1_beta",
    "lucb1_beta_numerator",
    "ucb1_bonus",
    "psi",
    "psi_inv",
    "psi_ucb_width",
    "mfucb_gamma",
    "glr_threshold",
    "gaussian_kl",
    "bernoulli_kl",
    "kl_divergence",
]

ArrayLike = Any


_SCALAR = (int, float)


def _scalars(*xs: Any) -> bool:
    return all(type(x) in _SCALAR for x in xs)


def _counts(n: ArrayLike, name: str = "n") -> Any:
    if type(n) in _SCALAR:
        if not n >= 0:
            raise ValueError(f"{name} must be >= 0 sample counts")
        return float(n)
    a = np.asarray(n, dtype=float)
    if a.size and not a.min() >= 0:  # catches negatives and NaN
        raise ValueError(f"{name} must be >= 0 sample counts")
    return a


def _check_delta(delta: ArrayLike) -> Any:
    """δ ∈ (0, 1): a number (:func:`mf_sched._validate.check_delta`) or an array of them."""
    if type(delta) in _SCALAR:
        return check_delta(delta)
    d = np.asarray(delta, dtype=float)
    if np.any(~(d > 0)) or np.any(d >= 1):
        raise ValueError(f"delta = {delta} is out of range; accepted: 0 < delta < 1 (every element)")
    return d


def _check_sigma(sigma: ArrayLike) -> Any:
    if type(sigma) in _SCALAR:
        if not 0 < sigma < math.inf:
            raise ValueError(f"sigma = {sigma} must be finite and > 0")
        return float(sigma)
    s = np.asarray(sigma, dtype=float)
    if np.any(~(s > 0)) or np.any(~np.isfinite(s)):
        raise ValueError(f"sigma = {sigma} must be finite and > 0")
    return s


def _safe_sqrt_ratio(num: np.ndarray, n: np.ndarray) -> np.ndarray:
    """√(num / n), with +inf where n == 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.sqrt(num / n)
    return np.where(n > 0, out, np.inf)


def subgaussian_radius(n: ArrayLike, delta: ArrayLike, sigma: ArrayLike) -> np.ndarray:
    """One-sided radius `σ √(2 log(1/δ)/n)` for the mean of `n` σ-sub-Gaussian samples.

    `P(µ̂ − µ ≥ radius) ≤ δ` for a fixed `n`.

    Args:
        n: the number of samples behind the mean, `≥ 0` (a number or an array; `0` gives `+inf`).
        delta: the failure probability `δ` for this one `n`, `0 < δ < 1` (a number or an array).
        sigma: the sub-Gaussian scale `σ` of one sample, finite and > 0 (a number or an array).

    >>> float(subgaussian_radius(8, 0.05, 1.0))  # doctest: +ELLIPSIS
    0.865...
    """
    n = _counts(n)
    d = _check_delta(delta)
    s = _check_sigma(sigma)
    return _safe_sqrt_ratio(2.0 * s**2 * np.log(1.0 / d), np.asarray(n, dtype=float))


def hoeffding_radius(n: ArrayLike, delta: ArrayLike, low: float = 0.0, high: float = 1.0) -> np.ndarray:
    """One-sided Hoeffding radius `(b − a) √(log(1/δ)/(2n))` for rewards in `[a, b]`.

    Identical to :func:`subgaussian_radius` with `σ = (b − a)/2`.

    Args:
        n: the number of samples behind the mean, `≥ 0` (a number or an array; `0` gives `+inf`).
        delta: the failure probability `δ` for this one `n`, `0 < δ < 1` (a number or an array).
        low: the smallest value a reward can take, `a`; the default range is `[0, 1]`.
        high: the largest value a reward can take, `b`; must be greater than `low`.

    >>> float(hoeffding_radius(50, 0.1))  # doctest: +ELLIPSIS
    0.151...
    """
    if not high > low:
        raise ValueError(f"high = {high} must be greater than low = {low}")
    return subgaussian_radius(n, delta, (high - low) / 2.0)


def anytime_radius(t: ArrayLike, delta: ArrayLike, sigma: ArrayLike) -> np.ndarray:
    """Poiani et al. (2022) §2.1: `B(t, δ) = √(2σ² log(4t²/δ) / t)`.

    Valid for all `t ≥ 1` at once with probability `≥ 1 − δ` (union bound over `t`).
    IISE calls it with `δ/(KM)`, successive elimination with `δ/K`.

    Args:
        t: the number of samples behind the mean, `≥ 0` (a number or an array; `0` gives `+inf`).
        delta: the failure probability `δ` over all `t` at once, `0 < δ < 1` (a number or an array).
        sigma: the sub-Gaussian scale `σ` of one sample, finite and > 0 (a number or an array).

    >>> float(anytime_radius(100, 0.001, 1.0))  # doctest: +ELLIPSIS
    0.591...
    """
    if _scalars(t, delta, sigma) and t >= 1 and 0 < delta < 1 and 0 < sigma < math.inf:
        return math.sqrt(2.0 * sigma * sigma * math.log(4.0 * t * t / delta) / t)
    t = _counts(t, "t")
    d = _check_delta(delta)
    s = _check_sigma(sigma)
    t = np.asarray(t, dtype=float)
    with np.errstate(divide="ignore"):
        num = 2.0 * s**2 * np.log(4.0 * t**2 / d)
    return _safe_sqrt_ratio(num, t)


def lil_radius(n: ArrayLike, total: ArrayLike, delta: ArrayLike, sigma: ArrayLike) -> np.ndarray:
    """The *practical* elimination radius `√(2σ² (log log T + log(1/δ)) / n)` of the IISE baseline in the
    code of Poiani et al. (2024, `riccardopoiani/adv-mf-bai`, `IISE.compute_ci`).

    `n` is the number of samples behind the mean, `T` the total number of pulls made so far (all arms,
    all fidelities) and `δ` the per-(arm, fidelity) confidence (IISE passes `δ/(KM)`). It is a
    law-of-the-iterated-logarithm *heuristic*: unlike :func:`anytime_radius` it carries no proof of
    validity for all `n` at once, so a policy using it is not covered by its paper's δ-correctness
    theorem. `log log T` is taken as 0 for `T < e` (the code's value is negative at `T = 2` and
    undefined at `T = 1`; both policies here evaluate it only after a full round, `T ≥ K ≥ 2`).

    Args:
        n: the number of samples behind the mean, `≥ 0` (a number or an array; `0` gives `+inf`).
        total: `T`, the number of pulls made so far over all arms and fidelities, `≥ 0` (`log log T` is 0 for
            `T < e`).
        delta: the per-(arm, fidelity) confidence `δ`, `0 < δ < 1` (IISE passes `δ/(KM)`).
        sigma: the sub-Gaussian scale `σ` of one sample, finite and > 0 (a number or an array).

    >>> float(lil_radius(100, 500, 0.01 / 20, 0.1))  # doctest: +ELLIPSIS
    0.0434...
    """
    n = _counts(n)
    T = np.asarray(_counts(total, "total"), dtype=float)
    d = _check_delta(delta)
    s = _check_sigma(sigma)
    with np.errstate(divide="ignore"):
        loglog = np.log(np.log(np.maximum(T, math.e)))
    num = 2.0 * s**2 * (loglog + np.log(1.0 / d))
    return _safe_sqrt_ratio(num, np.asarray(n, dtype=float))


def wang_beta(n: ArrayLike, t: ArrayLike, delta: float, L: float, sigma: ArrayLike = 0.5) -> np.ndarray:
    """Wang et al. (2023) Eq. 4: `β(n, t, δ) = √(log(L t⁴ / δ) / n)` for rewards in [0, 1].

    Generalised to σ-sub-Gaussian rewards as `2σ √(log(L t⁴/δ)/n)`; `σ = 1/2` (rewards in [0, 1])
    gives the paper's formula exactly. `L ≥ 4KM` is what Theorem 3.4 needs.

    Args:
        n: the number of samples of the (arm, fidelity) cell, `≥ 0` (a number or an array; `0` gives `+inf`).
        t: the LUCB round, `≥ 0` (rounds below 1 count as 1).
        delta: the confidence `δ` of the whole identification, `0 < δ < 1`.
        L: the union-bound factor, `> 0`; Theorem 3.4 needs `L ≥ 4KM` (`K` arms, `M` fidelities).
        sigma: the sub-Gaussian scale `σ` of one reward, finite and > 0; the default `½` (rewards in `[0, 1]`)
            is the paper's formula.

    >>> float(wang_beta(10, 1, 0.1, L=4 * 5 * 3))  # doctest: +ELLIPSIS
    0.799...
    """
    if _scalars(n, t, delta, L, sigma) and n > 0 and t >= 0 and 0 < delta < 1 and L > 0 and 0 < sigma < math.inf:
        return 2.0 * sigma * math.sqrt(math.log(L * max(t, 1.0) ** 4 / delta) / n)
    n = _counts(n)
    return _safe_sqrt_ratio(wang_beta_numerator(t, delta, L, sigma), np.asarray(n, dtype=float))


def wang_beta_numerator(t: ArrayLike, delta: float, L: float, sigma: ArrayLike = 0.5) -> Any:
    """`4σ² log(L t⁴/δ)`: :func:`wang_beta` is `√(this / n)` (for array `n`, computed exactly so), which
    lets a policy evaluate the radius of single cells without a numpy call per cell.

    Args:
        t: the LUCB round, `≥ 0` (rounds below 1 count as 1); a number or an array.
        delta: the confidence `δ` of the whole identification, `0 < δ < 1`.
        L: the union-bound factor, `> 0`; Theorem 3.4 needs `L ≥ 4KM` (`K` arms, `M` fidelities).
        sigma: the sub-Gaussian scale `σ` of one reward, finite and > 0; the default `½` (rewards in `[0, 1]`)
            is the paper's formula.

    >>> import math
    >>> num = wang_beta_numerator(3, 0.1, L=60)
    >>> math.sqrt(num / 7) == float(wang_beta(np.array([7]), 3, 0.1, L=60)[0])
    True
    """
    t = _counts(t, "t")
    d = _check_delta(delta)
    s = _check_sigma(sigma)
    if not L > 0:
        raise ValueError(f"L = {L} must be > 0")
    return 4.0 * s**2 * np.log(L * np.maximum(t, 1.0) ** 4 / d)


def lucb1_beta(
    u: ArrayLike, t: ArrayLike, delta: float, n_arms: int, sigma: ArrayLike = 0.5, k1: float = 1.25
) -> np.ndarray:
    """Kalyanakrishnan et al. (2012), LUCB1: `β(u, t) = √( log(k₁ K t⁴/δ) / (2u) )` for [0, 1] rewards.

    Generalised to σ-sub-Gaussian rewards as `σ √(2 log(k₁ K t⁴/δ) / u)` (σ = 1/2 recovers the paper),
    with `k₁ = 5/4` as in the paper's Theorem 6.

    Args:
        u: the number of samples of the arm, `≥ 0` (a number or an array; `0` gives `+inf`).
        t: the LUCB round, `≥ 0` (rounds below 1 count as 1).
        delta: the confidence `δ` of the whole identification, `0 < δ < 1`.
        n_arms: the number of arms `K`, `≥ 1`.
        sigma: the sub-Gaussian scale `σ` of one reward, finite and > 0; the default `½` (rewards in `[0, 1]`)
            is the paper's formula.
        k1: the constant `k₁` inside the log; the default `5/4` is the paper's (Theorem 6).

    >>> float(lucb1_beta(4, 2, 0.1, n_arms=10))  # doctest: +ELLIPSIS
    0.974...
    """
    u = _counts(u, "u")
    return _safe_sqrt_ratio(lucb1_beta_numerator(t, delta, n_arms, sigma, k1), np.asarray(u, dtype=float))


def lucb1_beta_numerator(t: ArrayLike, delta: float, n_arms: int, sigma: ArrayLike = 0.5, k1: float = 1.25) -> Any:
    """`2σ² log(k₁ K t⁴/δ)`: :func:`lucb1_beta` is `√(this / u)`, computed exactly so.

    Args:
        t: the LUCB round, `≥ 0` (rounds below 1 count as 1); a number or an array.
        delta: the confidence `δ` of the whole identification, `0 < δ < 1`.
        n_arms: the number of arms `K`, `≥ 1`.
        sigma: the sub-Gaussian scale `σ` of one reward, finite and > 0; the default `½` (rewards in `[0, 1]`)
            is the paper's formula.
        k1: the constant `k₁` inside the log; the default `5/4` is the paper's (Theorem 6).

    >>> import math
    >>> num = lucb1_beta_numerator(2, 0.1, n_arms=10)
    >>> math.sqrt(num / 4) == float(lucb1_beta(4, 2, 0.1, n_arms=10))
    True
    """
    t = _counts(t, "t")
    d = _check_delta(delta)
    s = _check_sigma(sigma)
    if n_arms < 1:
        raise ValueError(f"n_arms = {n_arms} must be >= 1")
    return 2.0 * s**2 * np.log(k1 * n_arms * np.maximum(t, 1.0) ** 4 / d)


def ucb1_bonus(n: ArrayLike, t: ArrayLike, sigma: ArrayLike = 0.5) -> np.ndarray:
    """Auer, Cesa-Bianchi, Fischer (2002), UCB1: `√(2 log t / n)` for [0, 1] rewards.

    Generalised as `2σ √(2 log t / n)` (σ = 1/2 recovers the paper). `t` is the total number of pulls
    so far (at least 1).

    Args:
        n: the number of pulls of the arm, `≥ 0` (a number or an array; `0` gives `+inf`).
        t: the total number of pulls so far, `≥ 0` (values below 1 count as 1, a bonus of 0 for pulled arms).
        sigma: the sub-Gaussian scale `σ` of one reward, finite and > 0; the default `½` (rewards in `[0, 1]`)
            is the paper's formula.

    >>> float(ucb1_bonus(5, 100))  # doctest: +ELLIPSIS
    1.35...
    """
    if _scalars(n, t, sigma) and n > 0 and t >= 0 and 0 < sigma < math.inf:
        return 2.0 * sigma * math.sqrt(2.0 * math.log(max(t, 1.0)) / n)
    n = _counts(n)
    t = _counts(t, "t")
    s = _check_sigma(sigma)
    num = 8.0 * s**2 * np.log(np.maximum(t, 1.0))
    return _safe_sqrt_ratio(num, np.asarray(n, dtype=float))


def psi(eps: ArrayLike, sigma: ArrayLike = 0.5) -> np.ndarray:
    """Kandasamy et al. (2016) Eq. 2 for σ-sub-Gaussian rewards: `ψ(ε) = ε² / (2σ²)`.

    Gaussian rewards with standard deviation σ use that σ; rewards in [0, 1] (Bernoulli) use σ = ½, i.e.
    Hoeffding's `ψ(ε) = 2ε²` (the paper's lower-bound proof).

    Args:
        eps: the deviation `ε`, `≥ 0` (a number or an array).
        sigma: the sub-Gaussian scale `σ` of one reward, finite and > 0; the default `½` is that of rewards in
            `[0, 1]`.

    >>> round(float(psi(0.1, sigma=0.5)), 12), round(float(psi(0.1, sigma=1.0)), 12)
    (0.02, 0.005)
    """
    s = _check_sigma(sigma)
    e = np.asarray(eps, dtype=float)
    if e.size and not e.min() >= 0:
        raise ValueError(f"eps = {eps} must be >= 0 (ψ is defined on [0, ∞))")
    return e * e / (2.0 * s**2)


def psi_inv(y: ArrayLike, sigma: ArrayLike = 0.5) -> np.ndarray:
    """Inverse of :func:`psi`: `ψ⁻¹(y) = σ √(2y)` (`+inf` maps to `+inf`).

    Args:
        y: the value of `ψ` to invert, `≥ 0` (a number or an array; `+inf` allowed).
        sigma: the sub-Gaussian scale `σ` of one reward, finite and > 0; the default `½` is that of rewards in
            `[0, 1]`.

    >>> float(psi_inv(psi(0.3, 0.2), 0.2))  # doctest: +ELLIPSIS
    0.3...
    """
    s = _check_sigma(sigma)
    v = np.asarray(y, dtype=float)
    if v.size and not v.min() >= 0:
        raise ValueError(f"y = {y} must be >= 0 (ψ⁻¹ is defined on [0, ∞))")
    return s * np.sqrt(2.0 * v)


def psi_ucb_width(n: ArrayLike, t: ArrayLike, rho: float, sigma: ArrayLike = 0.5) -> np.ndarray:
    """Kandasamy et al. (2016) Eq. 3: the UCB width `ψ⁻¹(ρ log t / n) = σ √(2ρ log t / n)` of `n` samples
    at round `t` (`+inf` for `n = 0`; `log t` taken as 0 for `t ≤ 1`).

    `ρ = 4` gives UCB1's bonus :func:`ucb1_bonus`; MF-UCB's experiments use `ρ = 2`.

    Args:
        n: the number of samples of the arm at this fidelity, `≥ 0` (a number or an array; `0` gives `+inf`).
        t: the round, `≥ 0` (values `≤ 1` give a width of 0 for sampled arms).
        rho: the exploration parameter `ρ`, a finite number > 0 (`4`: UCB1's bonus; the paper's experiments: 2).
        sigma: the sub-Gaussian scale `σ` of one reward, finite and > 0; the default `½` is that of rewards in
            `[0, 1]`.

    >>> float(psi_ucb_width(5, 100, rho=4.0)) == float(ucb1_bonus(5, 100))
    True
    >>> psi_ucb_width([0, 4], 10, rho=2.0, sigma=1.0).tolist()[0]
    inf
    """
    n = _counts(n)
    t = _counts(t, "t")
    s = _check_sigma(sigma)
    if not (isinstance(rho, (int, float, np.floating)) and math.isfinite(rho) and rho > 0):
        raise ValueError(f"rho = {rho} is out of range; accepted: a finite number > 0")
    num = 2.0 * rho * s**2 * np.log(np.maximum(t, 1.0))
    return _safe_sqrt_ratio(num, np.asarray(n, dtype=float))


def mfucb_gamma(costs: ArrayLike, zeta: ArrayLike, sigma: ArrayLike = 0.5) -> np.ndarray:
    """Kandasamy et al. (2016) Eq. 4, the fidelity-switching thresholds of MF-UCB:
    `γ(m) = ψ⁻¹( (λ(m)/λ(m+1)) ψ(ζ(m)) )` for `m < M`.

    Returns `M − 1` values. For the quadratic ψ of sub-Gaussian rewards this is
    `√(λ(m)/λ(m+1)) ζ(m)` whatever σ (σ cancels in Eq. 4). Worked example: `λ = (1, 10)`,
    `ζ = (0.2, 0)` gives `γ(1) = 0.0632456`.

    Args:
        costs: the costs `λ(1) < … < λ(M)` of the fidelities, finite, > 0 and strictly increasing.
        zeta: the bias bounds `ζ(1), …, ζ(M)` (how far fidelity `m`'s mean may lie from the top fidelity's),
            finite and `≥ 0`, the same length as `costs`; `ζ(M)` is not used.
        sigma: the sub-Gaussian scale `σ` of one reward, finite and > 0 (validated; it cancels in the result).

    >>> np.round(mfucb_gamma([1, 10], [0.2, 0.0], sigma=1.0), 7).tolist()
    [0.0632456]
    >>> np.round(mfucb_gamma([1, 10, 1000], [0.2, 0.1, 0.0], sigma=0.2), 6).tolist()
    [0.063246, 0.01]
    """
    lam = np.asarray(costs, dtype=float)
    z = np.asarray(zeta, dtype=float)
    if lam.ndim != 1 or z.shape != lam.shape or lam.size < 1:
        raise ValueError("costs and zeta must be 1-D sequences of the same length M >= 1")
    if not (np.all(np.isfinite(lam)) and lam.min() > 0 and np.all(np.diff(lam) > 0)):
        raise ValueError(f"costs = {lam.tolist()} must be finite, > 0 and strictly increasing")
    if not (np.all(np.isfinite(z)) and z.min() >= 0):
        raise ValueError(f"zeta = {z.tolist()} must be finite and >= 0")
    return psi_inv(lam[:-1] / lam[1:] * psi(z[:-1], sigma), sigma)


_GLR_KINDS = ("practical", "theory")


def glr_threshold(t: ArrayLike, delta: float, n_arms: int, n_fidelities: int = 1, kind: str = "practical") -> Any:
    """Stopping threshold `β(t, δ)` of the multi-fidelity GLR test of MF-GRAD (Poiani et al. 2024).

    `K = n_arms`, `M = n_fidelities`; natural logs. The forms are those of the authors' released code
    (`riccardopoiani/adv-mf-bai`, `algorithms/gradient.py`); the paper's own statement could not be checked:

    * `"practical"` (every experiment of the paper): `log(K/δ) + M log(1 + log t)`. Not covered by
      the theory (a heuristic calibration, as in the Track-and-Stop literature).
    * `"theory"` (the code's commented-out form): `log(K/δ) + 2M log(1 + log(K/δ)) + 12M log(3 + log t)
      + 2M`: a union over the K − 1 wrong answers of a deviation bound on the 2M coordinates of two arms
      (Kaufmann–Koolen-style mixture martingales).

    With `M = 1` these are the single-fidelity thresholds of GRAD (the authors' GRAD comment has a
    variant with `log(4 log(1/δ) + 1)`; we use the multi-fidelity form with `M = 1` throughout).

    Args:
        t: the number of samples in the statistic, `≥ 1` (a number or an array).
        delta: the confidence `δ`, `0 < δ < 1`.
        n_arms: the number of arms `K`, `≥ 1`.
        n_fidelities: the number of fidelities `M`, `≥ 1`; the default 1 is GRAD's single-fidelity threshold.
        kind: `"practical"` (the default) or `"theory"`, the two forms above.

    >>> round(float(glr_threshold(400, 0.01, n_arms=4, n_fidelities=5)), 3)
    15.715
    >>> round(float(glr_threshold(400, 0.01, n_arms=4, n_fidelities=5, kind="theory")), 3)
    167.215
    """
    d = _check_delta(delta)
    if kind not in _GLR_KINDS:
        raise ValueError(f"kind = {kind!r} is unknown; accepted: {', '.join(_GLR_KINDS)}")
    if n_arms < 1 or n_fidelities < 1:
        raise ValueError(f"n_arms = {n_arms} and n_fidelities = {n_fidelities} must be >= 1")
    K, M = float(n_arms), float(n_fidelities)
    if type(t) in _SCALAR:
        if not t >= 1:
            raise ValueError(f"t = {t} must be >= 1 (the statistic needs samples)")
        lt = math.log(t)
        lk = math.log(K / d)
        if kind == "practical":
            return lk + M * math.log1p(lt)
        return lk + 2 * M * math.log1p(lk) + 12 * M * math.log(3 + lt) + 2 * M
    ta = np.asarray(t, dtype=float)
    if ta.size and not ta.min() >= 1:
        raise ValueError("t must be >= 1 (the statistic needs samples)")
    lt = np.log(ta)
    lk = np.log(K / d)
    if kind == "practical":
        return lk + M * np.log1p(lt)
    return lk + 2 * M * np.log1p(lk) + 12 * M * np.log(3 + lt) + 2 * M


# ---------------------------------------------------------------------------------------------- KL
def gaussian_kl(mu: ArrayLike, lam: ArrayLike, sigma: ArrayLike) -> np.ndarray:
    """`KL(N(µ, σ²), N(λ, σ²)) = (µ − λ)² / (2σ²)`.

    Args:
        mu: the mean `µ` of the first Gaussian (a number or an array).
        lam: the mean `λ` of the second Gaussian (a number or an array).
        sigma: the common standard deviation `σ`, finite and > 0.

    >>> float(gaussian_kl(0.0, 1.0, 1.0))
    0.5
    """
    s = _check_sigma(sigma)
    mu = np.asarray(mu, dtype=float)
    lam = np.asarray(lam, dtype=float)
    return (mu - lam) ** 2 / (2.0 * s**2)


_BERN_EPS = 1e-15


def bernoulli_kl(p: ArrayLike, q: ArrayLike) -> np.ndarray:
    """`kl(p, q) = p log(p/q) + (1−p) log((1−p)/(1−q))` for Bernoulli means.

    `p` and `q` must lie in `[0, 1]` (ValueError otherwise). The limits at the boundary follow
    the convention `0 log 0 = 0`; `kl(p, q)` is `+inf` when `q ∈ {0, 1}` and `q ≠ p`.

    Args:
        p: the mean of the first Bernoulli, in `[0, 1]` (a number or an array).
        q: the mean of the second Bernoulli, in `[0, 1]` (a number or an array).

    >>> round(float(bernoulli_kl(0.5, 0.25)), 6)
    0.143841
    """
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    if np.any((p < 0) | (p > 1) | np.isnan(p)) or np.any((q < 0) | (q > 1) | np.isnan(q)):
        raise ValueError("Bernoulli means must lie in [0, 1]")
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = np.where(p > 0, p * np.log(p / q), 0.0)
        t2 = np.where(p < 1, (1 - p) * np.log((1 - p) / (1 - q)), 0.0)
    out = t1 + t2
    out = np.where(p == q, 0.0, out)
    return np.where(np.isnan(out), np.inf, out)


def kl_divergence(kind: str, mu: ArrayLike, lam: ArrayLike, sigma: ArrayLike | None = None) -> np.ndarray:
    """KL between two members of one family: `kind` is `"gaussian"` (needs `sigma`) or `"bernoulli"`.

    Args:
        kind: the family, `"gaussian"` or `"bernoulli"`.
        mu: the mean of the first distribution (in `[0, 1]` for `"bernoulli"`).
        lam: the mean of the second distribution (in `[0, 1]` for `"bernoulli"`).
        sigma: the common standard deviation, finite and > 0; required for `"gaussian"`, unused for
            `"bernoulli"`.

    >>> float(kl_divergence("gaussian", 0.0, 2.0, sigma=2.0))
    0.5
    """
    if kind == "gaussian":
        if sigma is None:
            raise ValueError("sigma is required for the Gaussian KL")
        return gaussian_kl(mu, lam, sigma)
    if kind == "bernoulli":
        return bernoulli_kl(mu, lam)
    raise ValueError(f"KL family {kind!r} is unknown; accepted: 'gaussian', 'bernoulli'")
