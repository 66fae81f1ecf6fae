"""Multi-fidelity test functions of Kandasamy et al. (2016), *GP Bandit Optimisation with Multi-fidelity
Evaluations*, Appendix D.2 (functions) and the authors' released code (costs), for benchmarks and tests.

All are **maximised**, noiseless, vectorised over rows, and defined on a box (their natural domain);
GP policies see the box through :attr:`MFFunction.space` (a :class:`~mf_sched.continuous.space.SearchSpace` of
linear :class:`~mf_sched.continuous.space.Float` dimensions, i.e. the paper's linear map to `[0, 1]^d`).
Fidelities are 0-based here (`0 .. M−1`; the paper counts `1 .. M`).

| name | d | M | costs λ | f⋆ (this module) | x⋆ (natural domain) |
|---|---|---|---|---|---|
| `currin` | 2 | 2 | 1, 10 | 13.798722 (code: 13.7986850) | (0.216667, 0) |
| `bad-currin` | 2 | 2 | 1, 10 | as `currin`; `f^(1) = −f^(2)` | as `currin` |
| `park` | 4 | 2 | 1, 10 | 25.589254 | (1, 1, 1, 1) |
| `borehole` | 8 | 2 | 1, 10 | 309.575588 (code: 309.523221) | a corner, see :func:`borehole` |
| `hartmann3` | 3 | 3 | 1, 10, 100 | 3.862780 | (0.114589, 0.555649, 0.852547) |
| `hartmann6` | 6 | 4 | 1, 10, 100, 1000 | 3.322368 | (0.201690, 0.150011, 0.476874, 0.275332, 0.311652, 0.657301) |

The maxima were computed for this module (multi-start L-BFGS-B on the formulas below); the released
code's values for Currin and Borehole are slightly below the true suprema, which would clip small
regrets to 0, so we use ours. :attr:`MFFunction.zeta` holds `sup_x |f^(M)(x) −
f^(m)(x)|` (also computed, rounded up in the third significant digit): valid bias bounds for a
:class:`~mf_sched.ladder.FidelityLadder`.

Resolved details (the paper's text wins over the released code):

* **Currin at x₂ = 0**: `exp(−1/(2x₂))` is taken as its limit 0 (factor 1); the low fidelity evaluates
  `x₁ ± 0.05` outside `[0, 1]` as the formula stands, and `max(0, x₂ − 0.05)` as printed.
* **Park's low fidelity**: the appendix prints `… − 2x₁² + x₂² + x₃² + 0.5`; Xiong et al. (2013) and the
  SFU library have `− 2x₁`. Default `low_fidelity="paper"` (the text); `"sfu"` gives the other.
  The first term uses the stable form `(√(x₁² + (x₂ + x₃²)x₄) − x₁)/2`, equal to the printed
  `(x₁/2)(√(1 + (x₂ + x₃²)x₄/x₁²) − 1)` for `x₁ > 0` and continuous at `x₁ = 0`. Park's costs are
  not in the code; we use `(1, 10)` like the other two-fidelity problems.
* **Hartmann lower fidelities**: `α^(m) = α + (M − m)δ`, `δ = (0.01, −0.01, −0.1, 0.1)` (text). The
  released code scales δ by 0.1 for Hartmann-6; `hartmann6(delta_scale=0.1)` reproduces it.
  `max f^(1) > f⋆` for both Hartmann functions: their low fidelities are biased upwards.
* **Costs** `λ(m) = 10^(m−1)` are the released code's (the figures' titles carry them; the extracted
  text does not).

Example:
    >>> f = get_function("currin")
    >>> (f.dim, f.M, f.costs)
    (2, 2, (1.0, 10.0))
    >>> round(float(f([0.216667, 0.0], fidelity=1)), 4)
    13.7987
    >>> bool(abs(f(f.x_star) - f.f_star) < 1e-9)
    True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from mf_sched.continuous.space import SearchSpace
from mf_sched.ladder import FidelityLadder

__all__ = [
    "MFFunction",
    "currin",
    "bad_currin",
    "park",
    "borehole",
    "hartmann3",
    "hartmann6",
    "get_function",
    "FUNCTION_NAMES",
]

Fn = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True, eq=False)
class MFFunction:
    """A multi-fidelity test function: `M` approximations `f^(0..M−1)` of `f = f^(M−1)` on a box.

    Attributes:
        name: registry name (see :func:`get_function`).
        bounds: `(d, 2)` array of the box `[low, high]` per dimension (natural units).
        costs: `λ(m)` per fidelity.
        f_star: `max f^(M−1)` over the box.
        x_star: a maximiser (natural units).
        zeta: `sup |f^(M−1) − f^(m)|` per fidelity (last entry 0).
        fidelities: the vectorised functions `X (n, d) → (n,)`, lowest fidelity first.
    """

    name: str
    bounds: np.ndarray
    costs: tuple[float, ...]
    f_star: float
    x_star: tuple[float, ...]
    zeta: tuple[float, ...]
    fidelities: tuple[Fn, ...]

    @property
    def dim(self) -> int:
        """Number of input dimensions `d`."""
        return int(self.bounds.shape[0])

    @property
    def M(self) -> int:
        """Number of fidelities."""
        return len(self.fidelities)

    @property
    def space(self) -> SearchSpace:
        """The box as a search space of linear float dimensions `x0 … x{d−1}`."""
        return SearchSpace.box(self.bounds[:, 0].tolist(), self.bounds[:, 1].tolist())

    @property
    def ladder(self) -> FidelityLadder:
        """Costs and the true bias bounds :attr:`zeta` as a :class:`~mf_sched.ladder.FidelityLadder`."""
        return FidelityLadder(costs=self.costs, zeta=self.zeta)

    def _as_rows(self, x: Any) -> tuple[np.ndarray, bool]:
        if isinstance(x, Mapping):
            x = self.space.to_array(x)
        X = np.asarray(x, dtype=float)
        one = X.ndim == 1
        X = X.reshape(1, -1) if one else X
        if X.ndim != 2 or X.shape[1] != self.dim:
            raise ValueError(f"{self.name}: points must have {self.dim} coordinates, got shape {np.shape(x)}")
        return X, one

    def __call__(self, x: Any, fidelity: int | None = None) -> Any:
        """`f^(fidelity)` at `x` (natural units; a vector, a `(n, d)` array, or a mapping
        `x0 … x{d−1}`); `fidelity=None` means the highest. A float for one point, else an array."""
        m = self.M - 1 if fidelity is None else int(fidelity)
        if not 0 <= m < self.M:
            raise ValueError(f"{self.name}: fidelity {fidelity} is out of range; accepted: 0..{self.M - 1}")
        X, one = self._as_rows(x)
        y = self.fidelities[m](X)
        return float(y[0]) if one else y

    def unit(self, z: Any, fidelity: int | None = None) -> Any:
        """Evaluate at unit-cube coordinates `z` (the linear map of the paper).

        Args:
            z: a point `(d,)` or points `(n, d)` of the unit cube, mapped linearly onto :attr:`bounds`.
            fidelity: the fidelity index, `0 .. M − 1`; `None`: the highest.
        """
        Z = np.asarray(z, dtype=float)
        lo, hi = self.bounds[:, 0], self.bounds[:, 1]
        return self(lo + Z * (hi - lo), fidelity)

    def simple_regret(self, value: float) -> float:
        """`f⋆ − value` (the regret of a fidelity-`M` value).

        Args:
            value: a value of the highest-fidelity function `f^(M)`.
        """
        return float(self.f_star - value)


def _unit_box(d: int) -> np.ndarray:
    return np.tile([0.0, 1.0], (d, 1))


# ------------------------------------------------------------------------------------------ Currin
def _currin_hi(X: np.ndarray) -> np.ndarray:
    x1, x2 = X[:, 0], X[:, 1]
    pos = x2 > 0
    # exp(−1/(2 x2)) → 0 as x2 ↓ 0: the factor is 1 there (its limit; App. D.2's formula is undefined at 0)
    e = np.zeros_like(x2)
    e[pos] = np.exp(-1.0 / (2.0 * x2[pos]))
    num = 2300 * x1**3 + 1900 * x1**2 + 2092 * x1 + 60
    den = 100 * x1**3 + 500 * x1**2 + 4 * x1 + 20
    return (1.0 - e) * num / den


def _currin_lo(X: np.ndarray) -> np.ndarray:
    x1, x2 = X[:, 0], X[:, 1]
    up = x2 + 0.05
    down = np.maximum(0.0, x2 - 0.05)
    tot = np.zeros(X.shape[0])
    for a in (x1 + 0.05, x1 - 0.05):
        for b in (up, down):
            tot += _currin_hi(np.column_stack([a, b]))
    return tot / 4.0


def currin() -> MFFunction:
    """Currin exponential, d = 2, M = 2, costs (1, 10) (Xiong et al. 2013; paper App. D.2)."""
    return MFFunction(
        "currin",
        _unit_box(2),
        (1.0, 10.0),
        13.798722044728,
        (0.2166667, 0.0),
        (0.972, 0.0),
        (_currin_lo, _currin_hi),
    )


def bad_currin() -> MFFunction:
    """Currin with the deliberately wrong low fidelity `f^(1) = −f^(2)` (paper App. D.3, Fig. 9)."""
    return MFFunction(
        "bad-currin",
        _unit_box(2),
        (1.0, 10.0),
        13.798722044728,
        (0.2166667, 0.0),
        (27.598, 0.0),
        (lambda X: -_currin_hi(X), _currin_hi),
    )


# ------------------------------------------------------------------------------------------ Park
def _park_hi(X: np.ndarray) -> np.ndarray:
    x1, x2, x3, x4 = X.T
    c = (x2 + x3**2) * x4
    # (x1/2)(sqrt(1 + c/x1²) − 1) = (sqrt(x1² + c) − x1)/2 for x1 > 0, continuous at x1 = 0
    return (np.sqrt(x1**2 + c) - x1) / 2.0 + (x1 + 3 * x4) * np.exp(1 + np.sin(x3))


def park(low_fidelity: str = "paper") -> MFFunction:
    """Park (1991) function 1, d = 4, M = 2, costs (1, 10).

    Args:
        low_fidelity: `"paper"` (the appendix's `− 2x₁²`) or `"sfu"` (Xiong et al.'s `− 2x₁`).
    """
    if low_fidelity not in ("paper", "sfu"):
        raise ValueError(f"low_fidelity = {low_fidelity!r}; accepted: 'paper', 'sfu'")
    sq = low_fidelity == "paper"

    def lo(X: np.ndarray) -> np.ndarray:
        x1, x2, x3 = X[:, 0], X[:, 1], X[:, 2]
        return (1 + np.sin(x1) / 10) * _park_hi(X) - 2 * (x1**2 if sq else x1) + x2**2 + x3**2 + 0.5

    zeta = 3.092 if sq else 2.658
    return MFFunction(
        "park", _unit_box(4), (1.0, 10.0), 25.589254158607, (1.0, 1.0, 1.0, 1.0), (zeta, 0.0), (lo, _park_hi)
    )


# ------------------------------------------------------------------------------------------ Borehole
_BOREHOLE_BOX = np.array(
    [
        [0.05, 0.15],  # r_w
        [100.0, 50000.0],  # r
        [63070.0, 115600.0],  # T_u
        [990.0, 1110.0],  # H_u
        [63.1, 116.0],  # T_l
        [700.0, 820.0],  # H_l
        [1120.0, 1680.0],  # L
        [9855.0, 12045.0],  # K_w
    ]
)


def _borehole(X: np.ndarray, num: float, one: float) -> np.ndarray:
    rw, r, Tu, Hu, Tl, Hl, L, Kw = X.T
    lg = np.log(r / rw)
    return num * Tu * (Hu - Hl) / (lg * (one + 2 * L * Tu / (lg * rw**2 * Kw) + Tu / Tl))


def borehole() -> MFFunction:
    """Borehole, d = 8, M = 2, costs (1, 10); natural domain
    `(r_w, r, T_u, H_u, T_l, H_l, L, K_w)` ∈ the box of App. D.2. `f^(1)` is everywhere below `f^(2)`.
    The maximiser is the corner `(0.15, 100, 115600, 1110, 116, 700, 1120, 12045)`."""
    return MFFunction(
        "borehole",
        _BOREHOLE_BOX.copy(),
        (1.0, 10.0),
        309.575587660408,
        (0.15, 100.0, 115600.0, 1110.0, 116.0, 700.0, 1120.0, 12045.0),
        (63.23, 0.0),
        (lambda X: _borehole(X, 5.0, 1.5), lambda X: _borehole(X, 2 * np.pi, 1.0)),
    )


# ------------------------------------------------------------------------------------------ Hartmann
_H_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
_H_DELTA = np.array([0.01, -0.01, -0.1, 0.1])
_H3_A = np.array([[3, 10, 30], [0.1, 10, 35], [3, 10, 30], [0.1, 10, 35]], dtype=float)
_H3_P = 1e-4 * np.array([[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547], [381, 5743, 8828]], dtype=float)
_H6_A = np.array(
    [
        [10, 3, 17, 3.5, 1.7, 8],
        [0.05, 10, 17, 0.1, 8, 14],
        [3, 3.5, 1.7, 10, 17, 8],
        [17, 8, 0.05, 10, 0.1, 14],
    ],
    dtype=float,
)
_H6_P = 1e-4 * np.array(
    [
        [1312, 1696, 5569, 124, 8283, 5886],
        [2329, 4135, 8307, 3736, 1004, 9991],
        [2348, 1451, 3522, 2883, 3047, 6650],
        [4047, 8828, 8732, 5743, 1091, 381],
    ],
    dtype=float,
)


def _hartmann(A: np.ndarray, P: np.ndarray, alpha: np.ndarray) -> Fn:
    def f(X: np.ndarray) -> np.ndarray:
        e = np.exp(-np.einsum("ij,nij->ni", A, (X[:, None, :] - P[None]) ** 2))
        return e @ alpha

    return f


def _hartmann_family(A: np.ndarray, P: np.ndarray, M: int, delta: np.ndarray) -> tuple[Fn, ...]:
    return tuple(_hartmann(A, P, _H_ALPHA + (M - 1 - m) * delta) for m in range(M))


def hartmann3() -> MFFunction:
    """Hartmann-3, d = 3, M = 3, costs (1, 10, 100); `α^(m) = α + (M − m)δ` (paper App. D.2)."""
    return MFFunction(
        "hartmann3",
        _unit_box(3),
        (1.0, 10.0, 100.0),
        3.862779787333,
        (0.1145889, 0.5556489, 0.852547),
        (0.1995, 0.0998, 0.0),
        _hartmann_family(_H3_A, _H3_P, 3, _H_DELTA),
    )


def hartmann6(delta_scale: float = 1.0) -> MFFunction:
    """Hartmann-6, d = 6, M = 4, costs (1, 10, 100, 1000).

    Args:
        delta_scale: multiplies the perturbation δ of the lower fidelities: 1 is the paper's text
            (default), 0.1 the released code.
    """
    s = float(delta_scale)
    if not s >= 0:
        raise ValueError(f"delta_scale = {delta_scale} must be >= 0")
    zeta = {1.0: (0.3001, 0.2001, 0.1001, 0.0), 0.1: (0.03001, 0.02001, 0.01001, 0.0)}.get(s)
    if zeta is None:
        # sup |f^(M) − f^(m)| = (M − m)·sup|Σ δ_i e_i| scales linearly with δ
        zeta = tuple(round(z * s, 6) + (1e-6 if z else 0.0) for z in (0.3, 0.2, 0.1, 0.0))
    return MFFunction(
        "hartmann6",
        _unit_box(6),
        (1.0, 10.0, 100.0, 1000.0),
        3.322368011416,
        (0.2016895, 0.1500107, 0.476874, 0.2753324, 0.3116516, 0.6573005),
        zeta,
        _hartmann_family(_H6_A, _H6_P, 4, s * _H_DELTA),
    )


_FACTORIES: dict[str, Callable[..., MFFunction]] = {
    "currin": currin,
    "bad-currin": bad_currin,
    "park": park,
    "borehole": borehole,
    "hartmann3": hartmann3,
    "hartmann6": hartmann6,
}

#: names accepted by :func:`get_function`
FUNCTION_NAMES: tuple[str, ...] = tuple(_FACTORIES)


def get_function(name: str, **options: Any) -> MFFunction:
    """The test function `name`, built by its factory with `options`.

    Args:
        name: one of :data:`FUNCTION_NAMES`.
        **options: keyword arguments of the function's factory (e.g. `park(low_fidelity=…)`,
            `hartmann6(delta_scale=…)`); the other functions take none.

    >>> get_function("hartmann6", delta_scale=0.1).zeta
    (0.03001, 0.02001, 0.01001, 0.0)
    >>> get_function("rosenbrock")
    Traceback (most recent call last):
    ...
    ValueError: unknown test function 'rosenbrock'; accepted: currin, bad-currin, park, borehole, hartmann3, hartmann6
    """
    try:
        factory = _FACTORIES[name]
    except KeyError:
        raise ValueError(f"unknown test function {name!r}; accepted: {', '.join(FUNCTION_NAMES)}") from None
    return factory(**options)
