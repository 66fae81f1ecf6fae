"""The decision rules of MF-GP-UCB (Kandasamy et al. 2016) as pure functions, for use and checks on their own.

Paper: K. Kandasamy, G. Dasarathy, J. Oliva, J. Schneider, B. Póczos, *Gaussian Process Bandit Optimisation with
Multi-fidelity Evaluations*, NeurIPS 2016: Algorithm 1 and Appendix B, with the constants of the authors' released
code (`kirthevasank/mf-gp-ucb`). :class:`~mf_sched.policies.mf_gp_ucb.MFGPUCB` calls them; the numbered items
below are those of its module docstring ("resolved ambiguities").

* :func:`fidelity_rule`: the fidelity `m_t` from the widths `β_t^{1/2}σ^(m)(x_t)` and `γ` (Algorithm 1, step 2).
* :func:`gamma_update`: the γ adaptation (item 3).
* :func:`zeta_update`: the ζ adaptation after a ζ-check (item 4); :data:`ZETA_SLACK` is its slack.
* :func:`initial_counts`: how many initial points the capital `Λ_0` pays for, at which fidelities (item 5).
* :func:`initial_scales`: the prior mean, unit, noise, γ and ζ that the initial values set (App. B; item 2).
* :func:`hyper_box`: the box the kernel hyper-parameters are fitted in, and their starting point (item 6).

Not registered (the module name starts with an underscore); the public names are re-exported by
:mod:`mf_sched.policies.mf_gp_ucb`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mf_sched._validate import check_int
from mf_sched.continuous import gp as _gp
from mf_sched.continuous.space import as_number

__all__ = [
    "ZETA_SLACK",
    "MAX_INIT_POINTS",
    "fidelity_rule",
    "gamma_update",
    "zeta_update",
    "initial_counts",
    "initial_scales",
    "hyper_box",
]

#: slack of the ζ-check (code: 0.9 of the current increment)
ZETA_SLACK = 0.9
#: the code's cap on the fidelity-1 initial design
MAX_INIT_POINTS = 200


def positive(name: str, v: Any, low: float = 0.0, strict: bool = True) -> float:
    """`v` as a float, checked to be `> low` (`>= low` when not `strict`).

    Args:
        name: the argument's name, for the error message.
        v: the value given (a finite real number; a bool is refused).
        low: the bound.
        strict: whether `v` must exceed `low` (else it may equal it).

    Returns:
        `v` as a float.

    Raises:
        ValueError: `v` is not a finite number or is out of range (the message names `name` and the range).
    """
    f = as_number(name, v)
    if not (f > low if strict else f >= low):
        raise ValueError(f"{name} = {v} is out of range; accepted: a finite number {'>' if strict else '>='} {low}")
    return f


def fidelity_rule(widths: Sequence[float] | np.ndarray, gamma: Sequence[float] | np.ndarray) -> int:
    """The fidelity `m_t` to query at `x_t` (Kandasamy et al. 2016, Algorithm 1 step 2; Fig. 6 caption):
    the first `m < M` whose confidence width `β_t^{1/2} σ_{t−1}^(m)(x_t)` is still `≥ γ^(m)`, else the
    highest fidelity `M` (0-based here: `0 … M−1`; a width equal to `γ` stays at the cheap fidelity).

    Args:
        widths: `β_t^{1/2} σ_{t−1}^(m)(x_t)` for `m = 0 … M−2` (a value for the top fidelity may follow
            and is ignored); at least `len(gamma)` values.
        gamma: the thresholds `γ^(0 … M−2)`, in the units of `widths`.

    Returns:
        The 0-based fidelity, in `0 … len(gamma)`.

    Example:
        >>> fidelity_rule([0.2, 9.0], gamma=[0.2, 0.1])  # 0.2 ≥ 0.2: fidelity 0 is still uncertain here
        0
        >>> fidelity_rule([0.18, 0.1], gamma=[0.2, 0.1])
        1
        >>> fidelity_rule([0.18, 0.098], gamma=[0.2, 0.1])  # known well enough at every cheap fidelity
        2
    """
    gamma = np.asarray(gamma, dtype=float)
    if len(widths) < gamma.shape[0]:
        raise ValueError(f"widths has {len(widths)} values; accepted: at least len(gamma) = {gamma.shape[0]}")
    for m in range(gamma.shape[0]):
        if widths[m] >= gamma[m]:
            return m
    return int(gamma.shape[0])


def gamma_update(
    gamma: Sequence[float] | np.ndarray, counter: int, m: int, costs: Sequence[float] | np.ndarray, factor: float = 5.0
) -> tuple[np.ndarray, int]:
    """One step of the γ adaptation after an iteration at fidelity `m` (Kandasamy et al. 2016, App. B,
    with the authors' released code's constants; module docstring, item 3).

    `counter` counts consecutive iterations below the highest fidelity. An iteration at the highest
    fidelity resets it; after `λ^(m+1)/λ^(m)` of them ending at `m`, `γ^(m) ← factor·γ^(m)`, every
    `γ` is raised to at least the new `γ^(m)` and the counter restarts. `factor = 1` turns the
    adaptation off (nothing changes, the counter included).

    Args:
        gamma: the thresholds `γ^(0 … M−2)` (not modified).
        counter: consecutive sub-`M` iterations before this one.
        m: the fidelity of this iteration (`0 … M−1`, 0-based).
        costs: the costs `λ^(0 … M−1)`.
        factor: the multiplier (code: 5; `≥ 1`).

    Returns:
        The new thresholds (a new array) and the new counter.

    Example:
        >>> g, c = [0.1, 0.3], 0
        >>> for _ in range(10):  # λ(1)/λ(0) = 10 consecutive iterations at fidelity 0
        ...     g, c = gamma_update(g, c, 0, costs=[1.0, 10.0, 100.0])
        >>> g.tolist(), c
        ([0.5, 0.5], 0)
        >>> gamma_update(g, 7, 2, costs=[1.0, 10.0, 100.0])[1]  # the top fidelity resets the counter
        0
    """
    gamma = np.array(gamma, dtype=float)
    costs = np.asarray(costs, dtype=float)
    if costs.shape[0] != gamma.shape[0] + 1:
        raise ValueError(f"costs has {costs.shape[0]} values; accepted: len(gamma) + 1 = {gamma.shape[0] + 1}")
    m = check_int("m", m, 0, gamma.shape[0])
    if factor == 1.0:
        return gamma, counter
    if m == gamma.shape[0]:
        return gamma, 0
    counter += 1
    if counter >= costs[m + 1] / costs[m]:
        gamma[m] *= factor
        return np.maximum(gamma, gamma[m]), 0
    return gamma, counter


def zeta_update(
    zeta: Sequence[float] | np.ndarray,
    m: int,
    y_high: float,
    y_low: float,
    factor: float = 2.0,
    slack: float = ZETA_SLACK,
) -> np.ndarray:
    """The ζ adaptation after a ζ-check (Kandasamy et al. 2016, App. B, with the authors' released code's
    rule; module docstring, item 4).

    A value `y_high` at fidelity `m+1` and `y_low = f^(m)(x)` at the same point: if the signed gap
    `y_high − y_low` exceeds `slack·(ζ^(m) − ζ^(m+1))`, that increment becomes `factor·gap`, every
    increment is raised to at least it, and ζ is their cumulative sum from the top (`ζ^(M) = 0`), so it
    stays decreasing. A smaller (or negative) gap changes nothing.

    Args:
        zeta: `ζ^(0 … M−1)` (not modified).
        m: the lower fidelity of the check (`0 … M−2`).
        y_high: the value at fidelity `m+1`.
        y_low: the value at fidelity `m`.
        factor: the increment multiplier (code: 2).
        slack: the fraction of the current increment a gap may reach unnoticed (code: 0.9).

    Returns:
        The new ζ (a new array).

    Example:
        >>> zeta_update([0.3, 0.2, 0.1, 0.0], 2, y_high=1.0, y_low=0.95).tolist()  # 0.05 ≤ 0.9·0.1
        [0.3, 0.2, 0.1, 0.0]
        >>> zeta_update([0.3, 0.2, 0.1, 0.0], 1, y_high=1.0, y_low=0.8).round(12).tolist()  # 0.2 > 0.09
        [1.2, 0.8, 0.4, 0.0]
    """
    zeta = np.array(zeta, dtype=float)
    m = check_int("m", m, 0, zeta.shape[0] - 2)
    inc = zeta[:-1] - zeta[1:]
    gap = y_high - y_low
    if gap > slack * inc[m]:
        inc[m] = factor * gap
        inc = np.maximum(inc, inc[m])
        zeta = np.concatenate([np.cumsum(inc[::-1])[::-1], [0.0]])
    return zeta


def initial_counts(
    costs: Sequence[float] | np.ndarray, dim: int, init_capital: float | None, *, single_fidelity: bool
) -> tuple[float, int, int]:
    """How the initialisation capital `Λ_0` is spent (Kandasamy et al. 2016, App. B, with the authors' released
    code's counts; the module docstring of :mod:`mf_sched.policies.mf_gp_ucb`, item 5).

    With several fidelities, `n_2 = ⌊Λ_0/(2λ^(M))⌋` points at the second fidelity and
    `n_1 = min(200, 10·M·d, ⌊(Λ_0 − n_2 λ^(2))/λ^(1)⌋)` at the first, then `n_2 ← min(n_1, n_2)` (the
    second-fidelity points are the first `n_2` of the first-fidelity ones). A single-fidelity run (GP-UCB, or
    `M = 1`) spends it at the top fidelity: `n_1 = ⌊Λ_0/λ^(M)⌋`, `n_2 = 0`.

    Args:
        costs: the ladder's costs `λ^(1) < … < λ^(M)` (0-based list of `M` positive numbers).
        dim: the encoded dimension `d` of the search space (at least 1).
        init_capital: `Λ_0`, a number `> 0`; None: the code's default `10·λ^(M)`.
        single_fidelity: spend the capital at the top fidelity only.

    Returns:
        `(Λ_0, n_1, n_2)`: the capital and the numbers of points at the first (or, single-fidelity, the top)
        fidelity and at the second.

    Raises:
        ValueError: the capital does not pay for one point (naming `init_capital` and the least it must be).

    Example:
        >>> capital, n1, n2 = initial_counts([1.0, 10.0], 2, None, single_fidelity=False)  # Currin
        >>> float(capital), n1, n2  # Λ_0 = 10·λ^(M); n_1 = min(200, 10·2·2, ⌊(100 − 5·10)/1⌋)
        (100.0, 40, 5)
        >>> initial_counts([1.0, 10.0], 2, 35.0, single_fidelity=True)
        (35.0, 3, 0)
    """
    costs = np.asarray(costs, dtype=float)
    M, D = costs.shape[0], dim
    lam0 = 10.0 * costs[-1] if init_capital is None else positive("init_capital", init_capital)
    if single_fidelity:
        n1, n2 = int(math.floor(lam0 / costs[-1] + 1e-9)), 0
        if n1 < 1:
            raise ValueError(
                f"init_capital = {lam0} is out of range; accepted: >= λ(M) = {costs[-1]} (one initial point)"
            )
    else:
        n2 = int(math.floor(0.5 * lam0 / costs[-1] + 1e-9))
        n1 = min(MAX_INIT_POINTS, 10 * M * D, int(math.floor((lam0 - n2 * costs[1]) / costs[0] + 1e-9)))
        n2 = min(n1, n2)
        if n1 < 1:
            raise ValueError(
                f"init_capital = {lam0} is out of range; it must pay for at least one fidelity-0 point "
                f"after {n2} fidelity-1 point(s) (accepted: >= {n2 * costs[1] + costs[0]})"
            )
    return lam0, n1, n2


def initial_scales(values: np.ndarray, n_fidelities: int) -> tuple[float, float, float, np.ndarray, np.ndarray]:
    """The constants that the initial values `Y_0` set (Kandasamy et al. 2016, App. B, with the authors'
    released code; module docstring of :mod:`mf_sched.policies.mf_gp_ucb`, "Practice" and item 2).

    With `r` the range of `Y_0` (`max(|max Y_0|, 1)` when they are all equal: `y` is then measured in its own
    units): the GPs' constant prior mean `max Y_0 + 2r`, their unit `r`, the noise variance
    `η² = 10⁻⁴ var Y_0` expressed in the GPs' units (`η²/r²`, at least `10⁻¹⁰`), the thresholds
    `γ^(m) = 0.01 r` and the biases `ζ^(m) = 0.01 r (M − m)` (1-based `m`; `ζ^(M) = 0`).

    Args:
        values: the initial values `Y_0` (at least one, finite, any fidelities).
        n_fidelities: the number of fidelities `M` (at least 1).

    Returns:
        `(prior_mean, r, noise, gamma, zeta)`: the prior mean and `r` in units of `y`, the noise variance in
        units of `r²`, `γ^(1..M−1)` and `ζ^(1..M)` in units of `y`.

    Example:
        >>> mean, r, noise, gamma, zeta = initial_scales(np.array([0.0, 1.0, 4.0]), 3)
        >>> mean, r, round(noise, 10), gamma.tolist(), zeta.tolist()  # noise: 1e-4 · var(Y_0) / r²
        (12.0, 4.0, 1.80556e-05, [0.04, 0.04], [0.08, 0.04, 0.0])
    """
    y = np.asarray(values, dtype=float)
    M = n_fidelities
    hi, lo = float(y.max()), float(y.min())
    rng = hi - lo
    if not rng > 0:  # all initial values equal: measure y in its own units
        rng = max(abs(hi), 1.0)
    noise = max(1e-4 * float(np.var(y)) / rng**2, 1e-10)
    return hi + 2.0 * rng, rng, noise, np.full(M - 1, 0.01 * rng), 0.01 * rng * (M - 1 - np.arange(M, dtype=float))


def hyper_box(kernel: str, dim: int, fit_noise: bool) -> tuple[np.ndarray, np.ndarray]:
    """Where the kernel hyper-parameters are searched, and where the search starts (the authors' released
    code; module docstring of :mod:`mf_sched.policies.mf_gp_ucb`, item 6).

    In the GPs' units (`y` centred on the prior mean and divided by the range `r`, points in the unit cube):
    signal variance `s ∈ [1, 10]` starting at 1, bandwidths `h ∈ √d·[10⁻³, 10]` starting at `0.2√d`, and with
    a fitted noise its variance `η² ∈` the default box of :func:`~mf_sched.continuous.gp.theta_bounds`,
    starting at `10⁻⁴`. Hyper-parameters are handled as logarithms (:func:`~mf_sched.continuous.gp.n_theta`
    gives their number and order).

    Args:
        kernel: one of :data:`~mf_sched.continuous.gp.KERNELS`.
        dim: the encoded dimension `d` of the search space (at least 1).
        fit_noise: whether a white-noise variance is fitted too (`noise_var="fit"`).

    Returns:
        `(bounds, theta)`: the `(p, 2)` log-bounds and the `(p,)` starting log hyper-parameters.

    Example:
        >>> bounds, theta = hyper_box("se", 4, fit_noise=False)
        >>> np.exp(bounds).round(4).tolist(), np.exp(theta).round(4).tolist()
        ([[1.0, 10.0], [0.002, 20.0]], [1.0, 0.4])
    """
    D = dim
    bounds = _gp.theta_bounds(
        kernel, D, fit_noise, signal=(1.0, 10.0), bandwidth=(1e-3 * math.sqrt(D), 10.0 * math.sqrt(D))
    )
    p = _gp.n_theta(kernel, D, fit_noise)
    default_theta = np.empty(p)
    default_theta[0] = 0.0  # s = 1 (in units of the range)
    default_theta[1:] = math.log(0.2 * math.sqrt(D))
    if fit_noise:
        default_theta[-1] = math.log(1e-4)
    return bounds, default_theta
