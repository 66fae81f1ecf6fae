"""The cost lower bound of Wang et al. (2023) / Poiani et al. (2022), and the multi-fidelity gaps it is built on.

Cost-complexity lower bound for fixed-confidence multi-fidelity best-arm identification — Wang et al.
(2023), Theorem 3.1, equivalently Poiani et al. (2022), Theorem 1 (Gaussian form), applied instance-wise
with `M_k = {m : Δ_k^(m) > 0}`. Wang et al.'s Theorem 3.1 is stated for *some* instance; we apply it
instance-wise through the same change-of-measure argument, as Poiani et al. (2022, §3) state theirs:

```text
E[Λ] ≥ log(1/(2.4δ)) · Σ_k  min_{m : Δ_k^(m) > 0}  λ(m) / KL(ν_k^(m), ν(θ_k^(m)))
```

with `b1` the best and `b2` the second-best arm (by true mean `µ^(M)`) and

* `k ≠ b1`: `Δ_k^(m) = µ_{b1}^(M) − ζ(m) − µ_k^(m)`, target mean `θ_k^(m) = µ_{b1}^(M) − ζ(m)`;
* `k = b1`: `Δ_{b1}^(m) = µ_{b1}^(m) − ζ(m) − µ_{b2}^(M)`, target `θ = µ_{b2}^(M) + ζ(m)`;

the KL is that of the simulated family: Gaussian `Δ²/(2σ²)` (so `LB = 2σ² H log(1/(2.4δ))` with
`H = Σ_k min_m λ(m)/Δ_k^(m)²`, Wang Remark 3.2), Bernoulli `kl(µ, θ)`. The set always contains
`m = M` (`Δ^(M) > 0` for a unique best arm). The theorem needs `δ ≤ 0.15` (Poiani); for
`δ ≥ 1/2.4` the factor is ≤ 0 and the bound is 0.

This bound is known to be loose (it ignores the cost of finding the right fidelity); Poiani et al.
(2024) give the tight one, :func:`~mf_sched.sim.tight_bound.tight_lower_bound` (see its docstring).
For a sub-Gaussian *proxy* (Yahtzee's truncated noise) the Gaussian formula with the proxy σ is reported
but is not a true lower bound for the real noise (Theorem 1 of Poiani et al. 2022 assumes Gaussian arms);
:attr:`LowerBound.note` says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mf_sched._validate import check_fraction
from mf_sched.confidence import bernoulli_kl, gaussian_kl

__all__ = ["LowerBound", "gaps", "cost_lower_bound", "instance_lower_bound"]


@dataclass(frozen=True)
class LowerBound:
    """A computed cost lower bound.

    Attributes:
        value: the bound `log(1/(2.4δ)) · Σ_k min_m λ(m)/KL` (0 when `δ ≥ 1/2.4`).
        per_arm: the per-arm terms `min_m λ(m)/KL` (without the log factor).
        fidelity: the minimising fidelity `m*_k` of every arm (0-based).
        log_factor: `log(1/(2.4δ))`.
        complexity: `Σ_k per_arm`, the bound divided by the log factor (`2σ² H` for Gaussians).
        kind: the KL family used: `"gaussian"` or `"bernoulli"`.
        sigma: the Gaussian σ (or sub-Gaussian proxy) the KL used; None for Bernoulli.
        note: caveats (proxy noise, δ > 0.15), joined by `"; "`; empty when there are none.
        extra: by-products of the computation: `best_arm` (`b1`) and `second_arm` (`b2`), 0-based.
    """

    value: float
    per_arm: np.ndarray
    fidelity: np.ndarray
    log_factor: float
    complexity: float
    kind: str
    sigma: float | None = None
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The bound as JSON-safe numbers, with the per-arm fidelities counted (`optimal_fidelity_counts[m]` arms
        have their minimum at fidelity `m`) instead of listed."""
        return {
            "value": self.value,
            "log_factor": self.log_factor,
            "complexity": self.complexity,
            "kind": self.kind,
            "sigma": self.sigma,
            "optimal_fidelity_counts": np.bincount(self.fidelity, minlength=int(self.fidelity.max()) + 1).tolist(),
            "note": self.note,
        }


def gaps(means: np.ndarray, zeta: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Multi-fidelity gaps (Wang et al. 2023, Eq. 1) and target means.

    Args:
        means: K×M means, `K ≥ 2` (last column: the true means `µ^(M)`, whose maximum must be unique).
        zeta: the ladder's bias bounds `ζ(m)` per fidelity (length M).

    Returns:
        `(Δ, θ, b1, b2)`: the K×M gaps `Δ[k, m]` and target means `θ[k, m]` as in the module docstring, the
        best arm `b1` and the second-best arm `b2` (0-based, by true mean).

    Example:
        >>> d, t, b1, b2 = gaps(np.array([[0.7, 0.9], [0.75, 0.8]]), np.array([0.3, 0.0]))
        >>> np.round(d, 3).tolist(), b1, b2
        ([[-0.4, 0.1], [-0.15, 0.1]], 0, 1)
    """
    mu = np.asarray(means, dtype=float)
    z = np.asarray(zeta, dtype=float)
    K = mu.shape[0]
    if K < 2:
        raise ValueError("gaps need at least two arms")
    true = mu[:, -1]
    order = np.argsort(-true, kind="stable")
    b1, b2 = int(order[0]), int(order[1])
    if true[b1] == true[b2]:
        raise ValueError(f"the best arm is not unique (arms {b1} and {b2} tie at {true[b1]})")
    theta = np.broadcast_to(true[b1] - z, mu.shape).copy()
    theta[b1] = true[b2] + z
    delta = theta - mu
    delta[b1] = mu[b1] - z - true[b2]
    return delta, theta, b1, b2


def cost_lower_bound(
    means: Any,
    costs: Any,
    zeta: Any,
    delta: float,
    *,
    kind: str = "gaussian",
    sigma: float | None = None,
    proxy: bool = False,
) -> LowerBound:
    """The Wang et al. (2023) Thm 3.1 / Poiani et al. (2022) Thm 1 cost lower bound of an instance.

    Args:
        means: K×M means (last column = true means).
        costs: the ladder's `λ` per fidelity (positive).
        zeta: the ladder's `ζ` per fidelity (non-negative).
        delta: confidence δ ∈ (0, 1).
        kind: `"gaussian"` (needs `sigma`) or `"bernoulli"`.
        sigma: the Gaussian noise standard deviation (`> 0`); required for `kind="gaussian"`, ignored for
            Bernoulli.
        proxy: True when `sigma` is a sub-Gaussian proxy rather than the real Gaussian σ.

    Wang et al.'s Table 1 instance (our recomputation of the bound: 156.36 for Bernoulli, δ = 0.05):

    >>> mu = [[.7, .8, .9], [.75, .775, .8], [.5, .6, .7], [.5, .55, .6], [.3, .45, .5]]
    >>> lb = cost_lower_bound(mu, [1, 1.1, 1.2], [0.3, 0.15, 0.0], 0.05, kind="bernoulli")
    >>> round(lb.value, 2), lb.fidelity.tolist()
    (156.36, [2, 2, 2, 2, 2])
    """
    mu = np.asarray(means, dtype=float)
    lam = np.asarray(costs, dtype=float)
    z = np.asarray(zeta, dtype=float)
    if mu.ndim != 2 or mu.shape[1] != lam.size or z.size != lam.size:
        raise ValueError("means must be K×M with M = len(costs) = len(zeta)")
    check_fraction("delta", delta)
    d, theta, b1, b2 = gaps(mu, z)
    if kind == "gaussian":
        if sigma is None or not sigma > 0:
            raise ValueError("sigma > 0 is required for the Gaussian lower bound")
        kl = gaussian_kl(mu, theta, sigma)
    elif kind == "bernoulli":
        kl = bernoulli_kl(np.clip(mu, 0, 1), np.clip(theta, 0, 1))
    else:
        raise ValueError(f"kind = {kind!r} is unknown; accepted: 'gaussian', 'bernoulli'")
    with np.errstate(divide="ignore"):
        ratio = np.where(d > 0, lam[None, :] / kl, np.inf)
    fid = np.argmin(ratio, axis=1)
    per_arm = ratio[np.arange(mu.shape[0]), fid]
    log_factor = math.log(1.0 / (2.4 * delta))
    complexity = float(per_arm.sum())
    notes = []
    if delta > 0.15:
        notes.append("Theorem 1 of Poiani et al. assumes delta <= 0.15")
    if proxy:
        notes.append("sigma is a sub-Gaussian proxy: not a true lower bound for the real noise")
    return LowerBound(
        value=max(0.0, log_factor) * complexity,
        per_arm=per_arm,
        fidelity=fid,
        log_factor=log_factor,
        complexity=complexity,
        kind=kind,
        sigma=sigma,
        note="; ".join(notes),
        extra={"best_arm": b1, "second_arm": b2},
    )


def instance_lower_bound(instance: Any, delta: float) -> LowerBound:
    """:func:`cost_lower_bound` for an :class:`~mf_sched.sim.instance.Instance`, with the family it simulates
    (truncated Gaussian: the Gaussian formula with the sub-Gaussian proxy, flagged in `note`).

    Args:
        instance: the instance (its means, ladder costs and ζ, and noise family).
        delta: confidence δ ∈ (0, 1).

    Returns:
        The bound, as :func:`cost_lower_bound` returns it.
    """
    noise = instance.noise
    if noise.kind == "bernoulli":
        return cost_lower_bound(instance.means, instance.ladder.costs, instance.ladder.zeta, delta, kind="bernoulli")
    if noise.kind == "gaussian":
        return cost_lower_bound(
            instance.means, instance.ladder.costs, instance.ladder.zeta, delta, kind="gaussian", sigma=noise.sigma
        )
    sigma = noise.sigma_proxy if noise.sigma_proxy is not None else noise.sigma
    return cost_lower_bound(
        instance.means,
        instance.ladder.costs,
        instance.ladder.zeta,
        delta,
        kind="gaussian",
        sigma=sigma,
        proxy=noise.sigma_proxy is not None,
    )
