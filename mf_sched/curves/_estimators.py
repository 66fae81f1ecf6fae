"""The estimators behind :func:`~mf_sched.curves.calibration.calibrate`, per rung of a ladder.

* quantile bounds: :func:`bound_count`, :func:`quantile_bound` (the `q`-quantile of the gaps and its exact
  percentile-bootstrap or distribution-free order-statistic upper bound), :func:`narrowest_band` and
  :func:`non_increasing_envelope`;
* the estimates: ζ̂ (:func:`estimate_zeta`, the bias bound of Kandasamy et al. 2016 §2), γ̂
  (:func:`estimate_gamma`, the order-aware spread of Poiani et al. 2022 §5), σ̂ (:func:`estimate_sigma`, the
  seed-to-seed spread), λ (:func:`estimate_costs`) and Poiani et al.'s Assumption 1
  (:func:`cost_bias_convexity`, Eq. 5);
* their acceptance test: held-out coverage (:class:`Coverage`, :func:`holdout_coverage`).

These names are imported from :mod:`mf_sched.curves.calibration`, where they are documented and whose module
docstring explains the estimators and the conventions they follow.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mf_sched._validate import check_fraction, check_int
from mf_sched.curves.learning_curves import RungValues

_METHODS = ("bootstrap", "order")


# ------------------------------------------------------------------------------------------ quantile bounds
def _check_method(method: Any) -> str:
    if method not in _METHODS:
        raise ValueError(f"method = {method!r} is unknown; accepted: {', '.join(map(repr, _METHODS))}")
    return str(method)


def bound_count(n: int, quantile: float, confidence: float, method: str = "bootstrap") -> tuple[int, int]:
    """Order-statistic indices (1-based) of the point quantile `k = ⌈q n⌉` and of its upper bound `j`.

    `"bootstrap"`: the smallest `j` with `P(Binomial(n, j/n) ≥ k) ≥ c` — the probability that a
    bootstrap resample's `k`-th order statistic is at most `x_(j)`, so `x_(j)` is the exact
    `c`-quantile of the bootstrap distribution. `"order"`: the smallest `j` with
    `P(Binomial(n, q) ≤ j − 1) ≥ c` (distribution-free; ValueError when `j > n`).

    Args:
        n: the number of values, `≥ 1`.
        quantile: the fraction `q` of the values the point quantile covers, `0 < q < 1`.
        confidence: the level `c` of the upper bound, `0.5 < c < 1`.
        method: `"bootstrap"` (exact percentile bootstrap) or `"order"` (distribution-free order statistic).

    Returns:
        `(k, j)`, both in `1..n`, `k ≤ j`.

    >>> bound_count(100, 0.9, 0.95), bound_count(100, 0.9, 0.95, "order")
    ((90, 94), (90, 96))
    """
    q = check_fraction("quantile", quantile)
    c = check_fraction("confidence", confidence, 0.5)
    _check_method(method)
    if n < 1:
        raise ValueError("no values to take a quantile of")
    k = max(1, math.ceil(q * n - 1e-9))
    from scipy import stats  # lazy: scipy.stats is slow to import

    if method == "bootstrap":
        p = stats.binom.sf(k - 1, n, np.arange(1, n + 1) / n)
        return k, int(np.argmax(p >= c - 1e-12)) + 1
    j = int(stats.binom.ppf(c, n, q)) + 1
    while j <= n and stats.binom.cdf(j - 1, n, q) < c:
        j += 1  # pragma: no cover - guards ppf rounding
    if j > n:
        need = math.ceil(math.log1p(-c) / math.log(q))
        raise ValueError(
            f"{n} values are too few for a distribution-free {c:g}-confidence bound on the {q:g}-quantile; "
            f"at least {need} are needed (or use method='bootstrap')"
        )
    return k, j


def quantile_bound(x: Any, quantile: float, confidence: float, method: str = "bootstrap") -> tuple[float, float]:
    """The `quantile`-quantile of `x` (inverted CDF) and an upper confidence bound on it.

    `method="bootstrap"`: the exact percentile-bootstrap bound (the `confidence`-quantile of the
    bootstrap distribution of the sample quantile, computed in closed form). `method="order"`: the
    distribution-free order-statistic bound; raises ValueError when `x` has too few values for it.
    NaN values are ignored (see :func:`bound_count`).

    Args:
        x: the values (any shape, flattened); at least one must not be NaN.
        quantile: the fraction `q` of the values the point quantile covers, `0 < q < 1`.
        confidence: the level `c` of the upper bound, `0.5 < c < 1`.
        method: `"bootstrap"` (exact percentile bootstrap) or `"order"` (distribution-free order statistic).

    Returns:
        `(point, bound)`: the order statistics `x_(k)` and `x_(j)` of :func:`bound_count`.

    >>> x = np.arange(1, 101) / 100
    >>> quantile_bound(x, 0.9, 0.95)
    (0.9, 0.94)
    >>> quantile_bound(x, 0.9, 0.95, method="order")
    (0.9, 0.96)
    >>> quantile_bound(x[:10], 0.95, 0.95, method="order")
    Traceback (most recent call last):
    ...
    ValueError: 10 values are too few for a distribution-free 0.95-confidence bound ...; at least 59 are needed ...
    """
    a = np.asarray(x, dtype=float).ravel()
    s = np.sort(a[~np.isnan(a)])
    k, j = bound_count(s.size, quantile, confidence, method)
    return float(s[k - 1]), float(s[j - 1])


def narrowest_band(x: Any, quantile: float, confidence: float, method: str = "bootstrap") -> tuple[float, ...]:
    """The narrowest interval holding a `quantile` fraction of `x` (`⌈q n⌉` values), and the narrowest
    holding the bound's count `j` of :func:`bound_count`. Returns `(low, high, low_bound, high_bound)`.

    Args:
        x: the values (any shape, flattened; NaN ignored).
        quantile: the fraction `q` of the values the point quantile covers, `0 < q < 1`.
        confidence: the level `c` of the upper bound, `0.5 < c < 1`.
        method: `"bootstrap"` (exact percentile bootstrap) or `"order"` (distribution-free order statistic).

    >>> narrowest_band([-0.3, -0.25, -0.2, -0.1, 0.0, -0.22], 0.5, 0.9)   # 3 values; the bound: 5
    (-0.25, -0.2, -0.3, -0.1)
    """
    a = np.asarray(x, dtype=float).ravel()
    s = np.sort(a[~np.isnan(a)])
    k, j = bound_count(s.size, quantile, confidence, method)
    out = []
    for cnt in (k, j):
        w = s[cnt - 1 :] - s[: s.size - cnt + 1]
        i = int(np.argmin(w))
        out += [float(s[i]), float(s[i + cnt - 1])]
    return tuple(out)


def non_increasing_envelope(x: Any) -> np.ndarray:
    """The smallest non-increasing sequence above `x`: `e(m) = max_{m' ≥ m} x(m')`.

    Args:
        x: one value per rung (1-D).

    >>> non_increasing_envelope([0.3, 0.1, 0.2, 0.0]).tolist()
    [0.3, 0.2, 0.2, 0.0]
    """
    a = np.asarray(x, dtype=float)
    return np.maximum.accumulate(a[::-1])[::-1].copy()


def estimate_zeta(
    gaps: np.ndarray, quantile: float, confidence: float, method: str = "bootstrap"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per rung (columns of `gaps`, configurations × rungs, NaN = missing): the point quantile, its
    upper bound, and the number of configurations used. The last column is the target: ζ = 0 there.

    Args:
        gaps: `|b_k(m)|`, configurations × rungs (:meth:`~mf_sched.curves.learning_curves.RungValues.gaps`);
            NaN where a configuration lacks the rung or the target. Every rung but the last needs one value.
        quantile: the fraction `q` of the values the point quantile covers, `0 < q < 1`.
        confidence: the level `c` of the upper bound, `0.5 < c < 1`.
        method: `"bootstrap"` (exact percentile bootstrap) or `"order"` (distribution-free order statistic).

    Returns:
        `(point, bound, n)`: per rung, the point quantile, its upper bound (neither enveloped) and the
        number of configurations with a gap.

    >>> g = np.array([[0.3, 0.1, 0.0], [0.2, 0.05, 0.0], [0.1, 0.0, 0.0]])
    >>> [a.tolist() for a in estimate_zeta(g, 0.5, 0.9)]
    [[0.2, 0.05, 0.0], [0.3, 0.1, 0.0], [3, 3, 3]]
    """
    g = np.asarray(gaps, dtype=float)
    R = g.shape[1]
    point, ucb = np.zeros(R), np.zeros(R)
    n = np.sum(~np.isnan(g), axis=0)
    for m in range(R - 1):
        if n[m] == 0:
            raise ValueError(f"rung {m} has no configuration with both it and the last rung")
        point[m], ucb[m] = quantile_bound(g[:, m], quantile, confidence, method)
    return point, ucb, n


def estimate_gamma(
    bias: np.ndarray, quantile: float, confidence: float, method: str = "bootstrap"
) -> dict[str, np.ndarray]:
    """The order-aware spread per rung: the narrowest band of signed biases holding a `quantile` fraction
    of the configurations (:func:`narrowest_band`), and its width γ (point and bound).

    Poiani et al. (2022) §5 define `γ_m = max_i ξ_{i,m} − min_i ξ_{i,m}`, the range over *all* arms; the
    quantile version is the range over the most typical `q` fraction, which is what can be estimated.
    For a fidelity that only underestimates (all biases `≤ 0`) the band is about `[−ζ, 0]` and γ ≈ ζ,
    matching the paper's `γ_m ≤ ξ_m` for underestimating fidelities.

    Returns `low`/`high` (point band), `low_bound`/`high_bound` (the bound's band),
    `gamma_point = high − low` and `gamma_ucb = high_bound − low_bound`.

    Args:
        bias: signed biases `b_k(m)`, configurations × rungs
            (:meth:`~mf_sched.curves.learning_curves.RungValues.bias`); NaN where missing. Every rung but the
            last needs one value.
        quantile: the fraction `q` of the values the point quantile covers, `0 < q < 1`.
        confidence: the level `c` of the upper bound, `0.5 < c < 1`.
        method: `"bootstrap"` (exact percentile bootstrap) or `"order"` (distribution-free order statistic).

    >>> b = np.array([[-0.3, 0.0], [-0.2, 0.0], [-0.1, 0.0], [-0.25, 0.0]])
    >>> {k: v.round(2).tolist() for k, v in estimate_gamma(b, 0.5, 0.6).items()}["gamma_point"]
    [0.05, 0.0]
    """
    b = np.asarray(bias, dtype=float)
    R = b.shape[1]
    out = {k: np.zeros(R) for k in ("low", "high", "low_bound", "high_bound")}
    for m in range(R - 1):
        col = b[:, m]
        if np.all(np.isnan(col)):
            raise ValueError(f"rung {m} has no configuration with both it and the last rung")
        out["low"][m], out["high"][m], out["low_bound"][m], out["high_bound"][m] = narrowest_band(
            col, quantile, confidence, method
        )
    out["gamma_point"] = out["high"] - out["low"]
    out["gamma_ucb"] = out["high_bound"] - out["low_bound"]
    return out


def estimate_sigma(rv: RungValues) -> dict[str, np.ndarray]:
    """Seed-to-seed spread per rung: `pooled` (dof-weighted), `median` of the per-configuration
    standard deviations, and `n_configs` with at least two seeds. NaN where no configuration has two.

    Args:
        rv: the runs read at the rungs; configurations with fewer than two seeds at a rung take no part there.

    >>> from mf_sched.curves.learning_curves import LearningCurves
    >>> c = LearningCurves(config=[0, 0, 0, 0], seed=[0, 0, 1, 1], fidelity=[1, 2, 1, 2],
    ...                    metric=[0.1, 0.5, 0.3, 0.5])
    >>> estimate_sigma(c.values_at([1, 2]))["pooled"].round(4).tolist()
    [0.1414, 0.0]
    """
    var, dof = rv.seed_variance()
    tot = dof.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        pooled = np.sqrt(np.where(tot > 0, np.nansum(np.where(dof > 0, var * dof, 0.0), axis=0) / tot, np.nan))
    sd = np.sqrt(np.where(dof > 0, var, np.nan))
    n = np.sum(dof > 0, axis=0)
    med = np.array([np.median(sd[dof[:, m] > 0, m]) if n[m] else np.nan for m in range(sd.shape[1])])
    return {"pooled": pooled, "median": med, "n_configs": n}


def estimate_costs(rv: RungValues, cost: str = "auto") -> tuple[np.ndarray, str]:
    """λ(m) per rung and where it comes from: `"resource"` (the rungs themselves) or `"time"` (the
    median measured elapsed cost of the runs at the rung). `"auto"`: time when every rung has a
    measured cost, else resource.

    Args:
        rv: the runs read at the rungs (their `cost` is used with `"time"`).
        cost: `"resource"`, `"time"` or `"auto"`. With `"time"` every rung needs a measured cost and the
            medians must be positive and increasing.

    Returns:
        `(costs, source)`: λ per rung and `"resource"` or `"time"`.

    >>> from mf_sched.curves.learning_curves import LearningCurves
    >>> c = LearningCurves(config=[0, 0, 1, 1], fidelity=[1, 2, 1, 2], metric=[0., 0., 0., 0.],
    ...                    cost=[10, 30, 12, 28])
    >>> [x.tolist() if hasattr(x, "tolist") else x for x in estimate_costs(c.values_at([1, 2]))]
    [[11.0, 29.0], 'time']
    """
    if cost not in ("auto", "resource", "time"):
        raise ValueError(f"cost = {cost!r} is unknown; accepted: 'auto', 'resource', 'time'")
    finite = np.isfinite(rv.cost)
    have = finite.reshape(-1, rv.M).any(axis=0)
    if cost == "auto":
        cost = "time" if have.all() else "resource"
    if cost == "resource":
        return rv.rungs.astype(float).copy(), "resource"
    if not have.all():
        m = int(np.flatnonzero(~have)[0])
        raise ValueError(f"cost='time' needs measured elapsed costs, but no run has one at rung {m} ({rv.rungs[m]:g})")
    lam = np.array([np.median(rv.cost[..., m][finite[..., m]]) for m in range(rv.M)])
    for m in range(rv.M):
        if not lam[m] > 0:
            raise ValueError(f"the median elapsed cost at rung {m} ({rv.rungs[m]:g}) is {lam[m]:g}; it must be > 0")
        if m and not lam[m] > lam[m - 1]:
            raise ValueError(
                f"the median elapsed cost is not increasing: {lam[m]:g} at rung {m} ({rv.rungs[m]:g}) vs "
                f"{lam[m - 1]:g} at rung {m - 1}; use cost='resource' or rungs further apart"
            )
    return lam, "time"


def cost_bias_convexity(costs: Sequence[float], zeta: Sequence[float]) -> tuple[bool, list[float]]:
    """Poiani et al. 2022, Assumption 1 (Eq. 5): the points `(−ζ_m, √λ_m)` form a convex chain, i.e. the
    slopes `(√λ_{m+1} − √λ_m) / (ζ_m − ζ_{m+1})` are non-decreasing. Returns (holds, slopes); a rung
    whose ζ does not decrease gives an infinite slope.

    Args:
        costs: λ per rung, increasing.
        zeta: ζ per rung (the ladder's, non-increasing, 0 at the target).

    >>> ok, slopes = cost_bias_convexity([1, 4, 16], [0.4, 0.1, 0.0]); ok, np.round(slopes, 3).tolist()
    (True, [3.333, 20.0])
    >>> cost_bias_convexity([1, 4, 16], [0.4, 0.39, 0.0])[0]
    False
    """
    sq = np.sqrt(np.asarray(costs, dtype=float))
    z = np.asarray(zeta, dtype=float)
    dz = z[:-1] - z[1:]
    with np.errstate(divide="ignore"):
        slopes = np.where(dz > 0, (sq[1:] - sq[:-1]) / np.where(dz > 0, dz, 1.0), np.inf)
    ok = bool(np.all(np.diff(slopes) >= -1e-12)) if slopes.size > 1 else True
    ok = ok and bool(np.all(np.isfinite(slopes[:-1]))) if slopes.size > 1 else ok
    return ok, slopes.tolist()


# ------------------------------------------------------------------------------------------ coverage
@dataclass
class Coverage:
    """Held-out coverage of the estimates (see :func:`holdout_coverage`); arrays are per rung.

    Attributes:
        split: `"configs"` or `"tasks"`.
        repeats: number of random splits.
        zeta: mean over splits of the fraction of held-out configurations with gap `≤ ζ̂(m)` (the
            enveloped upper bound, what a ladder gets).
        zeta_worst: the smallest such fraction over the splits.
        zeta_point: the same with the point quantile instead of the bound (what the bound buys).
        gamma: mean fraction of held-out configurations whose signed bias lies in the estimated
            interval (the γ̂ bound's ends).
        n_train: mean number of configurations on the training side.
        n_test: mean number of configurations on the test side.
    """

    split: str
    repeats: int
    zeta: np.ndarray
    zeta_worst: np.ndarray
    zeta_point: np.ndarray
    gamma: np.ndarray
    n_train: float
    n_test: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary (arrays as lists)."""
        return {
            "split": self.split,
            "repeats": self.repeats,
            "zeta": self.zeta.tolist(),
            "zeta_worst": self.zeta_worst.tolist(),
            "zeta_point": self.zeta_point.tolist(),
            "gamma": self.gamma.tolist(),
            "n_train": self.n_train,
            "n_test": self.n_test,
        }


def _split(rv: RungValues, split: str, test_fraction: float, rng: np.random.Generator) -> tuple[Any, Any]:
    C = rv.n_configs
    if split == "tasks":
        tasks = np.unique(rv.config_task)
        n_test = min(max(1, round(test_fraction * tasks.size)), tasks.size - 1)
        test_tasks = rng.choice(tasks, n_test, replace=False)
        test = np.isin(rv.config_task, test_tasks)
    else:
        n_test = min(max(1, round(test_fraction * C)), C - 1)
        test = np.zeros(C, dtype=bool)
        test[rng.choice(C, n_test, replace=False)] = True
    return ~test, test


def holdout_coverage(
    rv: RungValues,
    *,
    quantile: float = 0.95,
    confidence: float = 0.95,
    method: str = "bootstrap",
    split: str = "configs",
    repeats: int = 20,
    test_fraction: float = 0.5,
    seed: int | None = 0,
) -> Coverage:
    """Estimate on one part of the configurations (or tasks), measure coverage on the other.

    `split="tasks"` holds out whole tasks (needs at least two): the question a user with a new dataset
    asks. Only configurations that have the last rung take part.

    Args:
        rv: the runs read at the rungs; at least 4 configurations must have the last rung.
        quantile: the fraction `q` of the configurations ζ̂ should cover, `0 < q < 1`.
        confidence: the level `c` of the upper bound, `0.5 < c < 1`.
        method: `"bootstrap"` (exact percentile bootstrap) or `"order"` (distribution-free order statistic).
        split: `"configs"` (hold out configurations at random) or `"tasks"` (hold out whole tasks).
        repeats: number of random splits, `≥ 1`; the coverage is averaged over them.
        test_fraction: fraction of the configurations (or tasks) held out in each split, `0 < f < 1`; at least
            one is held out and one kept.
        seed: seed of the splits (None: fresh entropy).

    >>> from mf_sched.curves.learning_curves import LearningCurves
    >>> rng = np.random.default_rng(1)
    >>> C = 400; fin = rng.random(C); early = fin - rng.exponential(0.1, C)
    >>> c = LearningCurves(config=np.repeat(np.arange(C), 2), fidelity=np.tile([1, 2], C),
    ...                    metric=np.c_[early, fin].ravel())
    >>> cov = holdout_coverage(c.values_at([1, 2]), quantile=0.9, repeats=10)
    >>> bool(cov.zeta[0] > 0.88), bool(cov.zeta_point[0] <= cov.zeta[0])
    (True, True)
    """
    q = check_fraction("quantile", quantile)
    c = check_fraction("confidence", confidence, 0.5)
    t = check_fraction("test_fraction", test_fraction)
    if split not in ("configs", "tasks"):
        raise ValueError(f"split = {split!r} is unknown; accepted: 'configs', 'tasks'")
    check_int("repeats", repeats)
    bias = rv.bias()
    has_top = ~np.isnan(bias[:, -1])
    rv = rv.subset(has_top)
    bias = bias[has_top]
    if split == "tasks" and np.unique(rv.config_task).size < 2:
        raise ValueError("split='tasks' needs configurations from at least two tasks; use split='configs'")
    if rv.n_configs < 4:
        raise ValueError(f"{rv.n_configs} configurations are too few to split; at least 4 are needed")
    gaps = np.abs(bias)
    rng = np.random.default_rng(seed)
    R = rv.M
    cov, cov_pt, cov_g = np.zeros((repeats, R)), np.zeros((repeats, R)), np.zeros((repeats, R))
    n_train = n_test = 0
    for i in range(repeats):
        train, test = _split(rv, split, t, rng)
        n_train += int(train.sum())
        n_test += int(test.sum())
        point, ucb, _ = estimate_zeta(gaps[train], q, c, method)
        zeta = non_increasing_envelope(ucb)
        g = estimate_gamma(bias[train], q, c, method)
        gt, bt = gaps[test], bias[test]
        ok = ~np.isnan(gt)
        tol = 1e-12
        with np.errstate(invalid="ignore"):
            cov[i] = np.sum((gt <= zeta + tol) & ok, axis=0) / np.maximum(ok.sum(axis=0), 1)
            cov_pt[i] = np.sum((gt <= point + tol) & ok, axis=0) / np.maximum(ok.sum(axis=0), 1)
            inside = (bt >= g["low_bound"] - tol) & (bt <= g["high_bound"] + tol) & ok
            cov_g[i] = inside.sum(axis=0) / np.maximum(ok.sum(axis=0), 1)
    return Coverage(
        split=split,
        repeats=int(repeats),
        zeta=cov.mean(axis=0),
        zeta_worst=cov.min(axis=0),
        zeta_point=cov_pt.mean(axis=0),
        gamma=cov_g.mean(axis=0),
        n_train=n_train / repeats,
        n_test=n_test / repeats,
    )
