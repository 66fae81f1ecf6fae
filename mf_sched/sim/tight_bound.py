"""The tight cost lower bound of Poiani, Degenne, Kaufmann, Metelli and Restelli (2024) and its solvers.

`E[cost] ≥ C*(µ) · kl(δ, 1 − δ)` for Gaussian multi-fidelity instances, where `C*(µ)⁻¹ = max_ω F(ω, µ)` is the
value of a max-min problem over the cost shares `ω` (:func:`tight_lower_bound` states it and the two methods
that solve it). The inner minimisation, the closest alternative model, is exact
(:mod:`mf_sched.sim.alternative`); the outer maximisation is Kelley's cutting planes (here, the reference) or
an `M`-dimensional decomposition (`mf_sched.sim._tight_decomp`), both certified by a relative gap.
:func:`instance_tight_lower_bound` applies it to an :class:`~mf_sched.sim.instance.Instance` and caches `C*`.

The looser bound of Wang et al. (2023) / Poiani et al. (2022) is
:func:`~mf_sched.sim.cost_bound.cost_lower_bound`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from mf_sched._validate import check_fraction
from mf_sched.confidence import bernoulli_kl
from mf_sched.sim.alternative import alternative_means, answer_values

__all__ = ["TightLowerBound", "tight_lower_bound", "instance_tight_lower_bound"]


@dataclass(frozen=True)
class TightLowerBound:
    """The tight cost lower bound of Poiani et al. (2024) for a Gaussian multi-fidelity instance.

    Attributes:
        value: `C*(µ) · kl(δ, 1 − δ)`, a lower bound on the expected cost of any δ-correct algorithm
            (0 when `δ ≥ 1/2`).
        complexity: `C*(µ) = 1 / max_ω F(ω, µ)`, the optimal cost per unit of information.
        log_factor: `kl(δ, 1 − δ) = (1 − 2δ) log((1 − δ)/δ)`; `value / log(1/δ)` tends to `C*`.
        cost_proportions: `ω*` (K×M, sums to 1): the optimal share of the *cost* spent on each (arm,
            fidelity); not unique in general.
        pull_proportions: `π* ∝ ω*/λ`: the matching share of *pulls*.
        best_arm: `i* = argmax µ_{·,M}`.
        gap: relative gap between `C*` and the exact value of `ω*`, `1 − C*·F(ω*)`, certified by
            the method (the true `C*` lies between the two).
        iterations: iterations of the method (one LP each).
        sigma: the Gaussian σ used (or the sub-Gaussian proxy, said in `note`).
        note: caveats, joined by `"; "` (gap not reached, means outside the model, proxy noise, `δ ≥ 1/2`);
            empty when there are none.
        method: `"cutting-plane"` or `"decomposition"` (see :func:`tight_lower_bound`).
        timed_out: True when the time limit stopped the method (the value is still a valid bound).
    """

    value: float
    complexity: float
    log_factor: float
    cost_proportions: np.ndarray
    pull_proportions: np.ndarray
    best_arm: int
    gap: float
    iterations: int
    sigma: float
    note: str = ""
    method: str = "cutting-plane"
    timed_out: bool = False

    def optimal_fidelity(self, atol: float = 1e-6) -> list[list[int]]:
        """Per arm, the fidelities (0-based) that receive at least `atol` of the cost at `ω*`.

        Args:
            atol: the smallest cost share (of the total, in `[0, 1]`) that counts as "receives cost".

        Returns:
            One list of 0-based fidelities per arm (empty for an arm that gets less than `atol` everywhere).
        """
        return [np.flatnonzero(row >= atol).tolist() for row in self.cost_proportions]

    def to_dict(self) -> dict[str, Any]:
        """Every field, JSON-safe (the proportions as nested lists)."""
        return {
            "value": self.value,
            "complexity": self.complexity,
            "log_factor": self.log_factor,
            "cost_proportions": self.cost_proportions.tolist(),
            "pull_proportions": self.pull_proportions.tolist(),
            "best_arm": self.best_arm,
            "gap": self.gap,
            "iterations": self.iterations,
            "sigma": self.sigma,
            "note": self.note,
            "method": self.method,
            "timed_out": self.timed_out,
        }


def _cuts(omega: np.ndarray, mu: np.ndarray, lam: np.ndarray, z: np.ndarray, sigma: float, best: int):
    """`f_b(ω)` for every challenger `b` and the coefficients of the cut `f_b(ω') ≤ ⟨g_b, ω'⟩`.

    `g_b` is `d(µ, θ^b)/λ` on arms `i*` and `b` for the closest alternative `θ^b ∈ Alt_{i*,b}` at
    `ω`: the linear function that `θ^b` attains, valid everywhere and exact at `ω` (Danskin)."""
    w = omega / lam[None, :]
    f, eta_i, eta_b = answer_values(best, w, mu, z, sigma)
    others = np.flatnonzero(np.arange(mu.shape[0]) != best)
    f, eta_i, eta_b = f[others], eta_i[others], eta_b[others]
    inv = 1.0 / (2.0 * sigma * sigma * lam)
    th_i = alternative_means(mu[best][None, :], z, eta_i[:, None])
    th_b = alternative_means(mu[others], z, eta_b[:, None])
    g_i = (mu[best][None, :] - th_i) ** 2 * inv
    g_b = (mu[others] - th_b) ** 2 * inv
    return others, f, g_i, g_b


def _cutting_plane(
    mu: np.ndarray,
    lam: np.ndarray,
    z: np.ndarray,
    sigma: float,
    best: int,
    *,
    tol: float,
    max_iter: int,
    deadline: float | None,
    on_iteration: Callable[[int, float, float], None] | None,
) -> tuple[float, float, np.ndarray, int, bool]:
    """Kelley's cutting planes over all `K·M` cost shares (the reference method of
    :func:`tight_lower_bound`). Returns `(U, best F, its ω, iterations, timed out)` with `U ≥ max F`."""
    from scipy import optimize, sparse

    K, M = mu.shape
    n = K * M
    omega = np.full((K, M), 1.0 / n)
    others, f, g_i, g_b = _cuts(omega, mu, lam, z, sigma, best)
    scale = 1.0 / max(float(f.min()), 1e-300)  # keep the LP's numbers of order 1
    best_F, best_omega = float(f.min()), omega
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    n_cuts = 0
    col_i = best * M + np.arange(M)
    U = math.inf
    iterations = 0
    timed_out = False
    add = np.ones(others.size, dtype=bool)
    # homogeneous form: min Σ ω  s.t.  ⟨g, ω⟩ ≥ 1 for every cut; its value is 1/U (F is 1-homogeneous)
    for _ in range(max_iter):
        iterations += 1
        idx = np.flatnonzero(add)
        k = idx.size
        if k:
            rows.append(n_cuts + np.repeat(np.arange(k), 2 * M))
            cols.append(
                np.concatenate([np.broadcast_to(col_i, (k, M)), others[idx, None] * M + np.arange(M)], 1).ravel()
            )
            vals.append(-np.concatenate([g_i[idx], g_b[idx]], axis=1).ravel() * scale)
            n_cuts += k
        A_ub = sparse.csr_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n_cuts, n)
        )
        res = optimize.linprog(np.ones(n), A_ub=A_ub, b_ub=-np.ones(n_cuts), bounds=(0, None), method="highs")
        if res.status != 0:  # pragma: no cover - the LP is always feasible and bounded
            raise RuntimeError(f"cutting-plane LP failed: {res.message}")
        U = min(U, 1.0 / (float(res.fun) * scale))
        omega = np.maximum(res.x, 0.0).reshape(K, M)
        omega /= omega.sum()
        others, f, g_i, g_b = _cuts(omega, mu, lam, z, sigma, best)
        F = float(f.min())
        if F > best_F:
            best_F, best_omega = F, omega
        if on_iteration is not None:
            on_iteration(iterations, 1.0 / U, 1.0 / best_F)
        if U - best_F <= tol * U:
            break
        if deadline is not None and time.monotonic() > deadline:
            timed_out = True
            break
        add = f < U * (1.0 - 0.1 * tol)  # only the challengers whose model is still too optimistic at ω
    return U, best_F, best_omega, iterations, timed_out


#: `method="auto"` uses the reference cutting planes up to this many (arm, fidelity) pairs
_AUTO_CUTTING_PLANE = 1_000
#: ... and falls back to them when the decomposition leaves a relative gap above 1e-4, up to this many
_FALLBACK_CUTTING_PLANE = 20_000


def tight_lower_bound(
    means: Any,
    costs: Any,
    zeta: Any,
    delta: float,
    *,
    sigma: float,
    tol: float = 1e-7,
    max_iter: int = 300,
    proxy: bool = False,
    method: str = "auto",
    time_limit: float | None = None,
    progress: bool = False,
) -> TightLowerBound:
    """The tight lower bound of Poiani et al. (2024): `E[cost] ≥ C*(µ) · kl(δ, 1 − δ)` for Gaussian noise.

    `C*(µ)⁻¹ = max_{ω ∈ Σ_KM} F(ω, µ)` with `F(ω, µ) = inf_{θ ∈ Alt(µ)} Σ_{i,m} (ω_{i,m}/λ_m) d(µ_{i,m}, θ_{i,m})`
    and `Alt(µ)` the models of `M_MF` (`|θ_{i,m} − θ_{i,M}| ≤ ζ(m)`) whose best arm differs. The factor `kl(δ, 1
    − δ)` is the Garivier–Kaufmann change-of-measure bound: for every `θ ∈ Alt`, `Σ E[N_{i,m}] d(µ_{i,m}, θ_{i,m}) ≥
    kl(δ, 1 − δ)`; with `ω` the expected cost shares this is `E[cost] · F(ω, µ) ≥ kl(δ, 1 − δ)` (our derivation;
    the paper's exact statement could not be checked). Asymptotically `E[cost]/log(1/δ) ≥ C*(µ)`.

    **Algorithms.** `F = min_b f_b` where `f_b` depends only on arms `i*` and `b` and is concave in
    `ω`; the inner `f_b` are the exact one-dimensional problems of :mod:`mf_sched.sim.alternative`.

    * `method="cutting-plane"` (the reference): Kelley's cutting-plane method with one cut *per
      challenger* per iteration (a disaggregated model of each `f_b`) and one sparse LP in all `K·M`
      shares per iteration (`scipy.optimize.linprog`, HiGHS). The LP value `U` bounds `max F` from
      above. Well under a second for `K ≤ 300`; seconds at `K = 1,000`, minutes at `K = 10,000`.
    * `method="decomposition"`: an `M`-dimensional outer problem over the best arm's shares with one
      vectorised one-dimensional problem per challenger (:mod:`mf_sched.sim._tight_decomp`); about a second at
      `K = 1,000`, seconds at `K = 10,000`, tens of seconds at `K = 100,000`.
    * `method="auto"` (default): the reference up to `K·M = 1,000`, else the decomposition, falling
      back to the reference when the decomposition certifies a relative gap above 1e-4 and
      `K·M ≤ 20,000`.

    Both return a value that is never above the true `C*` (the bound stays a bound) and certify the
    relative gap `gap` between it and an allocation's exact value; both stop when it is `≤ tol`.

    Args:
        means: K×M means (last column: the true means); the best arm must be unique.
        costs: the ladder's `λ` per fidelity (positive).
        zeta: the ladder's `ζ` per fidelity (non-negative).
        delta: confidence δ ∈ (0, 1).
        sigma: Gaussian noise standard deviation (known, common).
        tol: relative optimality gap at which to stop (below ~1e-9 the LP's own tolerance dominates).
        max_iter: iteration cap; if reached, `gap` says how far from optimal `C*` may be (it is
            still a valid lower bound).
        proxy: True when `sigma` is a sub-Gaussian proxy (then the value is not a true lower bound).
        method: `"auto"`, `"decomposition"` or `"cutting-plane"` (above).
        time_limit: seconds after which to stop iterating; the value is still a valid lower bound,
            `timed_out` is True and `note` gives the gap reached.
        progress: show the iterations and the gap on stderr (for instances with `K·M ≥ 10,000`).

    The 5x2 instance (`C* = 14 + 4√10` exactly, our closed form; challengers at fidelity 1, the best arm at 2):

    >>> mu = [[0.4, 0.5]] * 4 + [[0.5, 0.6]]
    >>> lb = tight_lower_bound(mu, [0.5, 5.0], [0.1, 0.0], 0.01, sigma=0.1)
    >>> round(lb.complexity, 4), round(14 + 4 * math.sqrt(10), 4), lb.optimal_fidelity()
    (26.6491, 26.6491, [[0], [0], [0], [0], [1]])
    >>> fast = tight_lower_bound(mu, [0.5, 5.0], [0.1, 0.0], 0.01, sigma=0.1, method="decomposition")
    >>> round(fast.complexity, 4), fast.method, fast.gap <= 1e-7
    (26.6491, 'decomposition', True)
    """
    from mf_sched._progress import Progress
    from mf_sched.sim import _tight_decomp

    mu = np.asarray(means, dtype=float)
    lam = np.asarray(costs, dtype=float)
    z = np.asarray(zeta, dtype=float)
    if mu.ndim != 2 or mu.shape[1] != lam.size or z.size != lam.size:
        raise ValueError("means must be K×M with M = len(costs) = len(zeta)")
    if not (np.all(np.isfinite(mu)) and np.all(np.isfinite(lam)) and np.all(np.isfinite(z))):
        raise ValueError("means, costs and zeta must be finite")
    if lam.min() <= 0:
        raise ValueError("costs must be > 0")
    if z.min() < 0:
        raise ValueError("zeta must be >= 0")
    check_fraction("delta", delta)
    if not (sigma is not None and math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma = {sigma} is out of range; accepted: a finite number > 0")
    if not (tol > 0):
        raise ValueError(f"tol = {tol} is out of range; accepted: a number > 0")
    if method not in ("auto", "decomposition", "cutting-plane"):
        raise ValueError(f"method = {method!r} is unknown; accepted: 'auto', 'decomposition', 'cutting-plane'")
    if time_limit is not None and not (time_limit > 0):
        raise ValueError(f"time_limit = {time_limit} is out of range; accepted: a number of seconds > 0, or None")
    K, M = mu.shape
    if K < 2:
        raise ValueError("the lower bound needs at least two arms")
    top = mu[:, -1]
    best = int(np.argmax(top))
    if np.sum(top == top[best]) > 1:
        raise ValueError(f"the best arm is not unique (several arms have top-fidelity mean {top[best]})")
    n = K * M
    deadline = None if time_limit is None else time.monotonic() + time_limit
    use = method if method != "auto" else ("cutting-plane" if n <= _AUTO_CUTTING_PLANE else "decomposition")
    with Progress(None, f"tight lower bound (K={K}, M={M}), iterations", progress and n >= 10_000) as bar:

        def report(it: int, lower: float, upper: float) -> None:
            bar.update()
            bar.note(f"C* in [{lower:.6g}, {upper:.6g}]")

        lower = upper = math.nan
        omega = np.zeros((K, M))
        iterations = 0
        timed_out = False
        if use == "decomposition":
            remaining = None if deadline is None else max(deadline - time.monotonic(), 1e-3)
            r = _tight_decomp.solve(
                mu, lam, z, float(sigma), best, tol=tol, max_iter=max_iter, time_limit=remaining, on_iteration=report
            )
            lower, upper, omega, iterations, timed_out = r.lower, r.upper, r.omega, r.iterations, r.timed_out
            if method == "auto" and upper - lower > 1e-4 * upper and n <= _FALLBACK_CUTTING_PLANE and not timed_out:
                use = "cutting-plane"
        if use == "cutting-plane":
            U, F, om, its, to = _cutting_plane(
                mu, lam, z, float(sigma), best, tol=tol, max_iter=max_iter, deadline=deadline, on_iteration=report
            )
            iterations += its
            timed_out = timed_out or to
            if not (1.0 / U <= lower):  # keep the larger valid lower bound (NaN: none yet)
                lower, omega = 1.0 / U, om
                method_used = "cutting-plane"
            else:
                method_used = "decomposition"
            upper = min(upper, 1.0 / F) if math.isfinite(upper) else 1.0 / F
        else:
            method_used = "decomposition"
    pull = omega / lam[None, :]
    pull = pull / pull.sum()
    log_factor = float(bernoulli_kl(delta, 1.0 - delta))
    notes = []
    gap = (upper - lower) / upper
    if timed_out:
        notes.append(f"stopped at the time limit ({time_limit:g} s) with relative gap {gap:.2e}")
    elif gap > max(tol, 1e-6):  # below 1e-6: floating-point noise of the decomposition's stopping test
        notes.append(f"stopped after {iterations} iterations with relative gap {gap:.2e}")
    bias = np.abs(mu - top[:, None])
    if np.any(bias > z[None, :] + 1e-12):
        notes.append(
            "the means violate |µ(m) − µ(M)| ≤ ζ(m): µ is outside the model, so this is not a lower bound for it"
        )
    if proxy:
        notes.append("sigma is a sub-Gaussian proxy: not a true lower bound for the real noise")
    if delta >= 0.5:
        notes.append("kl(δ, 1 − δ) = 0 for δ >= 1/2")
    complexity = float(lower)
    return TightLowerBound(
        value=complexity * max(0.0, log_factor) if delta < 0.5 else 0.0,
        complexity=complexity,
        log_factor=log_factor,
        cost_proportions=omega,
        pull_proportions=pull,
        best_arm=best,
        gap=float(gap),
        iterations=iterations,
        sigma=float(sigma),
        note="; ".join(notes),
        method=method_used,
        timed_out=timed_out,
    )


_TIGHT_CACHE: dict[tuple[Any, ...], TightLowerBound] = {}
_TIGHT_CACHE_SIZE = 32


def instance_tight_lower_bound(
    instance: Any, delta: float, *, time_limit: float | None = None, progress: bool = False
) -> TightLowerBound | None:
    """:func:`tight_lower_bound` for an :class:`~mf_sched.sim.instance.Instance`; None for Bernoulli noise.

    The bound is derived for Gaussian observations with a known σ; for a truncated Gaussian the
    sub-Gaussian proxy is used and flagged in `note` (as for
    :func:`~mf_sched.sim.cost_bound.instance_lower_bound`). Bernoulli
    instances get None: their KL is not the Gaussian one and the Gaussian formula with σ = 1/2 would be
    an *upper* bound on their `C*` (Pinsker), not a lower bound. `C*` does not depend on δ and is
    cached per instance (means, costs, ζ, σ), so repeated summaries of one instance solve it once
    (a result cut short by `time_limit` is not cached).

    Args:
        instance: the instance (its means, ladder costs and ζ, and noise family).
        delta: confidence δ ∈ (0, 1); it only scales the cached `C*` by `kl(δ, 1 − δ)`.
        time_limit: seconds after which the solver stops (see :func:`tight_lower_bound`); None: no limit.
        progress: show the solver's iterations on stderr (see :func:`tight_lower_bound`).

    Returns:
        The bound, or None for a Bernoulli instance.
    """
    noise = instance.noise
    if noise.kind == "bernoulli":
        return None
    proxy = noise.kind != "gaussian" and noise.sigma_proxy is not None
    sigma = float(noise.sigma_proxy if proxy else noise.sigma)
    mu = np.asarray(instance.means, dtype=float)
    key = (mu.shape, mu.tobytes(), tuple(instance.ladder.costs), tuple(instance.ladder.zeta), sigma, proxy)
    lb = _TIGHT_CACHE.get(key)
    check_fraction("delta", delta)
    if lb is None:
        lb = tight_lower_bound(
            mu,
            instance.ladder.costs,
            instance.ladder.zeta,
            delta,
            sigma=sigma,
            proxy=proxy,
            time_limit=time_limit,
            progress=progress,
        )
        if not lb.timed_out:
            if len(_TIGHT_CACHE) >= _TIGHT_CACHE_SIZE:
                _TIGHT_CACHE.pop(next(iter(_TIGHT_CACHE)))
            _TIGHT_CACHE[key] = lb
    log_factor = float(bernoulli_kl(delta, 1.0 - delta))
    notes = [s for s in lb.note.split("; ") if s and not s.startswith("kl(")]
    if delta >= 0.5:
        notes.append("kl(δ, 1 − δ) = 0 for δ >= 1/2")
    return replace(
        lb, log_factor=log_factor, value=lb.complexity * log_factor if delta < 0.5 else 0.0, note="; ".join(notes)
    )
