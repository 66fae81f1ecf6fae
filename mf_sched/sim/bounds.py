"""Instance-dependent lower bounds, so that every benchmark can report "cost used / lower bound".

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
(2024) give the tight one, :func:`tight_lower_bound` (see its docstring).
For a sub-Gaussian *proxy* (Yahtzee's truncated noise) the Gaussian formula with the proxy σ is reported
but is not a true lower bound for the real noise (Theorem 1 of Poiani et al. 2022 assumes Gaussian arms);
:attr:`LowerBound.note` says so.

Regret (cumulative, capital Λ) — the constants multiplying a logarithm, per arm, as
:class:`RegretLowerBound`:

* :func:`kandasamy_regret_lower_bound` — Kandasamy et al. (2016), Theorem 4 / Lemma 11, for their regret
  (Eq. 1): `liminf E[R(Λ)]/log n_Λ ≥ Σ_k (1/(M−p_k+1)) Δ_k^(M) min_{ℓ: Δ_k^(ℓ)>0} λ(ℓ)/KL(µ_k^(ℓ) ‖ µ⋆−ζ(ℓ))`
  with `Δ_k^(m) = µ⋆ − µ_k^(m) − ζ(m)`, `p_k` the first fidelity with `Δ_k^(p) > 0` and
  `n_Λ = ⌊Λ/λ(M)⌋`;
* :func:`wang_regret_lower_bound` — Wang et al. (2023), Theorem 4.4, for their regret (Eq. 9):
  `liminf E[R(Λ)]/log Λ ≥ Σ_k min_{m: Δ_k^(m)>0} ((λ(m)/λ(1)) µ_1 − µ_k) / KL(ν_k^(m), θ_k^(m))`
  with Wang's gaps and targets (:func:`gaps`);
* :func:`mfucb_analysis` — Kandasamy et al.'s instance calculator: the switching thresholds γ (Eq. 4),
  each arm's "home" fidelity ⟦k⟧ (§4.1), the leading constants of MF-UCB (Theorem 2) and UCB, and the
  deterministic cap on lower-fidelity plays (:func:`mfucb_low_fidelity_caps`, proof of Lemma 8).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from mf_sched._validate import check_fraction, check_int
from mf_sched.confidence import bernoulli_kl, gaussian_kl, mfucb_gamma, psi
from mf_sched.sim.alternative import alternative_means, answer_values

__all__ = [
    "LowerBound",
    "cost_lower_bound",
    "instance_lower_bound",
    "TightLowerBound",
    "tight_lower_bound",
    "instance_tight_lower_bound",
    "gaps",
    "RegretLowerBound",
    "kandasamy_regret_lower_bound",
    "wang_regret_lower_bound",
    "MFUCBAnalysis",
    "mfucb_analysis",
    "mfucb_low_fidelity_caps",
]


@dataclass(frozen=True)
class LowerBound:
    """A computed cost lower bound.

    Attributes:
        value: the bound `log(1/(2.4δ)) · Σ_k min_m λ(m)/KL` (0 when `δ ≥ 1/2.4`).
        per_arm: the per-arm terms `min_m λ(m)/KL` (without the log factor).
        fidelity: the minimising fidelity `m*_k` of every arm (0-based).
        log_factor: `log(1/(2.4δ))`.
        complexity: `Σ_k per_arm`, the bound divided by the log factor (`2σ² H` for Gaussians).
        kind: the KL family used; `sigma` the Gaussian σ (proxy) if any.
        note: caveats (proxy noise, δ > 0.15).
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

    Returns `(Δ, θ, b1, b2)` with `Δ[k, m]` and `θ[k, m]` as in the module docstring.

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
    (truncated Gaussian: the Gaussian formula with the sub-Gaussian proxy, flagged in `note`)."""
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


# ---------------------------------------------------------------------------------------------- regret
@dataclass(frozen=True)
class RegretLowerBound:
    """An asymptotic problem-dependent regret lower bound: `liminf E[R(Λ)] / log(x_Λ) ≥ coefficient`.

    Attributes:
        coefficient: `Σ_k per_arm`.
        per_arm: each arm's term (0 for arms that need no exploration, e.g. an optimal arm).
        fidelity: the fidelity (0-based) attaining each arm's minimum; `-1` for arms without a term
            (the optimal arms in Kandasamy's bound).
        paper: which theorem; `log_of`: `"n_Lambda"` (`log ⌊Λ/λ(M)⌋`, Kandasamy) or `"Lambda"`
            (`log Λ`, Wang).
        kind: the KL family.
        form: `"kl"` (the proofs' KL form) or `"gap"` (the theorems' printed `Δ²` form, with its constant where the
            paper gives one).
        cost_top: `λ(M)`, for :meth:`at`.
        note: caveats (assumptions of the theorem that the instance breaks).
    """

    coefficient: float
    per_arm: np.ndarray
    fidelity: np.ndarray
    paper: str
    log_of: str
    kind: str
    form: str
    cost_top: float
    note: str = ""

    @classmethod
    def of_terms(
        cls, per_arm: np.ndarray, fidelity: np.ndarray, costs: np.ndarray, notes: list[str], **theorem: str
    ) -> RegretLowerBound:
        """The bound with the given per-arm terms (their sum is the coefficient), `cost_top = costs[-1]` and
        the `notes` joined; `theorem`: `paper`, `log_of`, `kind`, `form`."""
        return cls(
            coefficient=float(per_arm.sum()),
            per_arm=per_arm,
            fidelity=fidelity,
            cost_top=float(costs[-1]),
            note="; ".join(notes),
            **theorem,  # type: ignore[arg-type]
        )

    def at(self, capital: float) -> float:
        """`coefficient · log(x_Λ)` at capital `Λ` (the leading term; 0 while the log is ≤ 0)."""
        x = math.floor(capital / self.cost_top) if self.log_of == "n_Lambda" else capital
        return self.coefficient * max(0.0, math.log(x)) if x > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "coefficient": self.coefficient,
            "paper": self.paper,
            "log_of": self.log_of,
            "kind": self.kind,
            "form": self.form,
            "fidelity_counts": np.bincount(self.fidelity + 1, minlength=1).tolist(),
            "note": self.note,
        }


def _regret_inputs(means: Any, costs: Any, zeta: Any, kind: str, sigma: float | None, form: str) -> tuple:
    mu = np.asarray(means, dtype=float)
    lam = np.asarray(costs, dtype=float)
    z = np.asarray(zeta, dtype=float)
    if mu.ndim != 2 or mu.shape[1] != lam.size or z.size != lam.size:
        raise ValueError("means must be K×M with M = len(costs) = len(zeta)")
    if kind == "gaussian":
        if sigma is None or not sigma > 0:
            raise ValueError("sigma > 0 is required for the Gaussian regret lower bound")
    elif kind == "bernoulli":
        if mu.min() < 0 or mu.max() > 1:
            raise ValueError("Bernoulli means must lie in [0, 1]")
    else:
        raise ValueError(f"kind = {kind!r} is unknown; accepted: 'gaussian', 'bernoulli'")
    if form not in ("kl", "gap"):
        raise ValueError(f"form = {form!r} is unknown; accepted: 'kl', 'gap'")
    return mu, lam, z


def _kl(kind: str, mu: np.ndarray, target: np.ndarray, sigma: float | None) -> np.ndarray:
    if kind == "gaussian":
        return gaussian_kl(mu, target, sigma)
    return bernoulli_kl(np.clip(mu, 0, 1), np.clip(target, 0, 1))


def kandasamy_regret_lower_bound(
    means: Any, costs: Any, zeta: Any, *, kind: str = "bernoulli", sigma: float | None = None, form: str = "kl"
) -> RegretLowerBound:
    """Kandasamy et al. (2016) Theorem 4 via Lemma 11: per suboptimal arm `k`, with
    `Δ_k^(m) = µ⋆ − µ_k^(m) − ζ(m)` and `p` the first fidelity with `Δ_k^(p) > 0`,

    * `form="kl"` (the proof, before its last relaxation):
      `(1/(M−p+1)) Δ_k^(M) min_{ℓ: Δ_k^(ℓ)>0} λ(ℓ) / KL(µ_k^(ℓ) ‖ µ⋆ − ζ(ℓ))`;
    * `form="gap"` (the lemma as stated): `c'_p Δ_k^(M) min_{ℓ: Δ_k^(ℓ)>0} λ(ℓ)/Δ_k^(ℓ)²` with
      `c'_p = (1/(M−p+1)) min_{ℓ≥p} (µ⋆−ζ(ℓ))(1−µ⋆+ζ(ℓ))` (Bernoulli, from `KL(a‖b) ≤ (a−b)²/(b(1−b))`)
      or `2σ²/(M−p+1)` (Gaussian, where both forms coincide).

    The coefficient multiplies `log n_Λ`. Resolutions (typos in Kandasamy et al.'s Lemma 11): the paper's
    `1/(M−p)` divides by zero for `p = M` and counts one fidelity too few; we use `1/(M−p+1)` (the
    number of fidelities `ℓ ≥ p`) and `min_{ℓ≥p}`. `Δ = 0` counts as "not > 0" (the lemma needs `Δ^(ℓ) < 0`
    strictly; ties have measure 0). The theorem is for Bernoulli rewards with `µ⋆ ∈ (1/2, 1)` and `ζ(1) < 1/2`;
    outside that the value is reported with a note. The Gaussian version is the same change-of-measure argument with the
    Gaussian KL (our extension).

    Hand-checked case: `M = 1`, arms `µ = (0.9, 0.6)`, `λ = 2`: the classical Lai–Robbins constant
    `Δ λ / kl(0.6, 0.9)`.

    >>> lb = kandasamy_regret_lower_bound([[0.9], [0.6]], [2.0], [0.0])
    >>> round(lb.coefficient, 6), round(0.3 * 2 / float(bernoulli_kl(0.6, 0.9)), 6)
    (1.927781, 1.927781)
    """
    mu, lam, z = _regret_inputs(means, costs, zeta, kind, sigma, form)
    K, M = mu.shape
    best = float(mu[:, -1].max())
    d = best - mu - z[None, :]
    pos = d > 0
    gap_top = d[:, -1]
    if form == "kl" or kind == "gaussian":
        with np.errstate(divide="ignore"):
            ratio = np.where(pos, lam[None, :] / _kl(kind, mu, np.broadcast_to(best - z, mu.shape), sigma), np.inf)
    else:
        with np.errstate(divide="ignore"):
            ratio = np.where(pos, lam[None, :] / np.where(pos, d, 1.0) ** 2, np.inf)
    per_arm = np.zeros(K)
    fid = np.full(K, -1, dtype=np.int64)
    sub = np.flatnonzero(gap_top > 0)
    for k in sub.tolist():  # O(K·M) with a short loop over suboptimal arms for p_k (bookkeeping only)
        p = int(np.flatnonzero(pos[k])[0])  # 0-based: M − p fidelities ℓ ≥ p (the paper's M − p + 1)
        f = int(np.argmin(ratio[k]))
        coef = 1.0 / (M - p)
        if form == "gap" and kind == "bernoulli":
            b = best - z[p:]
            coef *= float(np.min(b * (1.0 - b)))
        per_arm[k] = coef * gap_top[k] * ratio[k, f]
        fid[k] = f
    notes = []
    if kind == "bernoulli" and not (0.5 < best < 1 and z[0] < 0.5):
        notes.append("Theorem 4 assumes Bernoulli rewards with 1/2 < mu* < 1 and zeta(1) < 1/2")
    if kind == "gaussian":
        notes.append("Gaussian version of Lemma 11 (same change of measure, Gaussian KL): an extension")
    paper = "Kandasamy et al. 2016, Theorem 4 / Lemma 11 (regret of Eq. 1)"
    return RegretLowerBound.of_terms(per_arm, fid, lam, notes, paper=paper, log_of="n_Lambda", kind=kind, form=form)


def wang_regret_lower_bound(
    means: Any, costs: Any, zeta: Any, *, kind: str = "bernoulli", sigma: float | None = None, form: str = "kl"
) -> RegretLowerBound:
    """Wang et al. (2023) Theorem 4.4 (proof in App. F.2), for their regret (Eq. 9): per arm `k`

    `min_{m: Δ_k^(m) > 0} ((λ(m)/λ(1)) µ_1 − µ_k) / D_k^(m)`

    where `(λ(m)/λ(1)) µ_1 − µ_k` is the regret of one pull of `(k, m)` (their Eq. 22), `Δ` and the
    targets `θ` are Wang's (:func:`gaps`; the best arm is compared with the second best), and
    `D = KL(ν_k^(m), θ_k^(m))` (`form="kl"`, the proof) or `Δ_k^(m)²` (`form="gap"`, the theorem
    as printed, which holds "up to a distribution constant"). The coefficient multiplies `log Λ`. (The
    extracted theorem lost `λ(m)` and `log Λ`; we follow the proof's decomposition, Eq. 22 of
    Appendix F, and its linear programme.) The
    best arm contributes 0 when fidelity 1 already separates it (`Δ_1^(1) > 0`), else it pays
    `(λ(m)/λ(1) − 1) µ_1` per verification pull. Wang's regret is defined for rewards in [0, 1]: the
    best true mean must be ≥ 0.

    Hand-checked case: `M = 2`, `λ = (1, 4)`, `ζ = (0.3, 0)`, arms `(0.5, 0.8)` and `(0.45, 0.5)`.
    Fidelity 1 cannot separate the best arm (`Δ = 0.5 − 0.3 − 0.5 < 0`), so it pays
    `(4 − 1)·0.8 = 2.4` per pull at `m = 2` with `Δ = 0.3`: `2.4/0.09`; the other arm has
    `Δ^(1) = 0.8 − 0.3 − 0.45 = 0.05` (pull cost `0.8 − 0.5`) and `Δ^(2) = 0.3` (cost `3.2 − 0.5`):
    `min(0.3/0.0025, 2.7/0.09) = 30`.

    >>> lb = wang_regret_lower_bound([[0.5, 0.8], [0.45, 0.5]], [1, 4], [0.3, 0], form="gap")
    >>> np.round(lb.per_arm, 4).tolist(), lb.fidelity.tolist()
    ([26.6667, 30.0], [1, 1])
    """
    mu, lam, z = _regret_inputs(means, costs, zeta, kind, sigma, form)
    d, theta, b1, _ = gaps(mu, z)
    true = mu[:, -1]
    if true[b1] < 0:
        raise ValueError(f"the best true mean is {true[b1]} < 0; Wang's regret assumes rewards in [0, 1]")
    pos = d > 0
    per_pull = lam[None, :] / lam[0] * true[b1] - true[:, None]  # (λ(m)/λ(1)) µ_1 − µ_k
    D = _kl(kind, mu, theta, sigma) if form == "kl" else np.where(pos, d, 1.0) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(pos, per_pull / D, np.inf)
    fid = np.argmin(ratio, axis=1).astype(np.int64)
    per_arm = ratio[np.arange(mu.shape[0]), fid]
    notes = [] if kind == "bernoulli" else ["the theorem's proof uses Bernoulli arms; Gaussian KL is an extension"]
    paper = "Wang et al. 2023, Theorem 4.4 (regret of Eq. 9)"
    return RegretLowerBound.of_terms(per_arm, fid, lam, notes, paper=paper, log_of="Lambda", kind=kind, form=form)


def mfucb_low_fidelity_caps(n: int, rho: float, gamma: Any, sigma: float) -> np.ndarray:
    """The deterministic cap on MF-UCB's plays of any arm at each fidelity `ℓ < M` after `n` plays:
    `⌊ρ log n / ψ(γ(ℓ))⌋ + 1` (Kandasamy et al. 2016, proof of Lemma 8), reported as
    `min(·, n)` (no arm has more than `n` plays; this also covers `γ(ℓ) = 0`). Lemma 5/8 print
    `ψ(γ^(m))`; the proof's argument is per fidelity, so it is `ψ(γ^(ℓ))`.

    Worked example (ours): `λ = (1, 10)`, `ζ = (0.2, 0)`, σ = 1, ρ = 2, `n = 10⁴`: `ψ(γ(1)) = 0.002`
    and the cap is `⌊2 log(10⁴)/0.002⌋ + 1 = 9211`.

    >>> mfucb_low_fidelity_caps(10_000, 2.0, mfucb_gamma([1, 10], [0.2, 0.0], 1.0), 1.0).tolist()
    [9211]
    """
    check_int("n", n)
    pg = psi(np.asarray(gamma, dtype=float), sigma)
    raw = np.full(pg.shape, np.inf)  # +inf where ψ(γ) = 0
    pos = pg > 0
    with np.errstate(over="ignore"):
        raw[pos] = np.floor(rho * math.log(n) / pg[pos]) + 1
    return np.minimum(raw, n).astype(np.int64)


@dataclass(frozen=True)
class MFUCBAnalysis:
    """Kandasamy et al.'s quantities (Eq. 4, §4.1, Theorem 2) computed for one instance, see :func:`mfucb_analysis`.

    Attributes:
        gamma: switching thresholds γ(1..M−1) (Eq. 4 unless given).
        gaps: `Δ_k^(m) = µ⋆ − µ_k^(m) − ζ(m)` (K×M).
        home: each arm's home fidelity ⟦k⟧ (0-based): the first `m < M` with `Δ_k^(m) > 2γ(m)`,
            else `M − 1`; `-1` for optimal arms (§4.1, Fig. 1).
        optimal: mask of the optimal arms.
        c_mfucb: Theorem 2's leading constant of MF-UCB (multiply by `log n_Λ`; constants hidden): `Σ_{k∉K⋆} Δ_k^(M)
            λ(⟦k⟧)/ψ(Δ_k^(⟦k⟧))`.
        c_ucb: the same for UCB: `Σ Δ_k^(M) λ(M)/ψ(Δ_k^(M))`.
        assumption1_violations: the `m` (0-based, `m < M − 1`) where Assumption 1,
            `Σ_{i≤m} 1/ψ(ζ(i)) ≤ 1/ψ(ζ(m+1))`, fails (it only shapes the Theorem-2 comparison).
        rho: the exploration constant ρ used.
        sigma: the noise σ used.
    """

    gamma: np.ndarray
    gaps: np.ndarray
    home: np.ndarray
    optimal: np.ndarray
    c_mfucb: float
    c_ucb: float
    assumption1_violations: list[int]
    rho: float
    sigma: float

    def caps(self, n: int) -> np.ndarray:
        """:func:`mfucb_low_fidelity_caps` after `n` plays."""
        return mfucb_low_fidelity_caps(n, self.rho, self.gamma, self.sigma)

    def to_dict(self) -> dict[str, Any]:
        M = self.gaps.shape[1]
        return {
            "gamma": self.gamma.tolist(),
            "home_fidelity_counts": np.bincount(self.home[~self.optimal], minlength=M).tolist(),
            "n_optimal": int(self.optimal.sum()),
            "c_mfucb": self.c_mfucb,
            "c_ucb": self.c_ucb,
            "ratio": self.c_mfucb / self.c_ucb if self.c_ucb > 0 else None,
            "assumption1_violations": self.assumption1_violations,
        }


def mfucb_analysis(
    means: Any, costs: Any, zeta: Any, sigma: float, *, rho: float = 2.0, gamma: Any = None
) -> MFUCBAnalysis:
    """Switching thresholds, home fidelities and Theorem 2's constants of MF-UCB on an instance.

    Worked example (ours, from Eq. 4 and the home fidelities of §4.1): `λ = (1, 10)`, `ζ = (0.2, 0)`, σ = 1 and
    `µ⋆ = 0.9`: an arm with means
    `(0.4, 0.5)` has `Δ^(1) = 0.3 > 2γ(1) = 0.1265` (home fidelity 1), one with `(0.6, 0.7)` has
    `Δ^(1) = 0.1` (home fidelity 2).

    >>> a = mfucb_analysis([[0.4, 0.5], [0.6, 0.7], [0.8, 0.9]], [1, 10], [0.2, 0.0], sigma=1.0)
    >>> np.round(a.gamma, 7).tolist(), a.home.tolist()
    ([0.0632456], [0, 1, -1])
    """
    mu = np.asarray(means, dtype=float)
    lam = np.asarray(costs, dtype=float)
    z = np.asarray(zeta, dtype=float)
    if mu.ndim != 2 or mu.shape[1] != lam.size or z.size != lam.size:
        raise ValueError("means must be K×M with M = len(costs) = len(zeta)")
    K, M = mu.shape
    g = mfucb_gamma(lam, z, sigma) if gamma is None else np.asarray(gamma, dtype=float)
    if g.shape != (M - 1,):
        raise ValueError(f"gamma must hold M - 1 = {M - 1} values")
    best = float(mu[:, -1].max())
    d = best - mu - z[None, :]
    optimal = mu[:, -1] == best
    out = np.zeros((K, M), dtype=bool)
    out[:, :-1] = d[:, :-1] > 2.0 * g[None, :]
    out[:, -1] = True
    home = np.argmax(out, axis=1).astype(np.int64)
    home[optimal] = -1
    sub = np.flatnonzero(~optimal)
    dh = d[sub, home[sub]]
    c_mf = float(np.sum(d[sub, -1] * lam[home[sub]] / psi(dh, sigma)))
    c_ucb = float(np.sum(d[sub, -1] * lam[-1] / psi(d[sub, -1], sigma)))
    with np.errstate(divide="ignore"):
        inv = 1.0 / psi(z, sigma)
    viol = [m for m in range(M - 1) if np.sum(inv[: m + 1]) > inv[m + 1] * (1 + 1e-12)]
    return MFUCBAnalysis(g, d, home, optimal, c_mf, c_ucb, viol, float(rho), float(sigma))


# ---------------------------------------------------------------------------------------------- tight bound
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
        sigma: the Gaussian σ used; `note`: caveats.
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
        """Per arm, the fidelities (0-based) that receive at least `atol` of the cost at `ω*`."""
        return [np.flatnonzero(row >= atol).tolist() for row in self.cost_proportions]

    def to_dict(self) -> dict[str, Any]:
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


#: ``method="auto"`` uses the reference cutting planes up to this many (arm, fidelity) pairs
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
    sub-Gaussian proxy is used and flagged in `note` (as for :func:`instance_lower_bound`). Bernoulli
    instances get None: their KL is not the Gaussian one and the Gaussian formula with σ = 1/2 would be
    an *upper* bound on their `C*` (Pinsker), not a lower bound. `C*` does not depend on δ and is
    cached per instance (means, costs, ζ, σ), so repeated summaries of one instance solve it once
    (a result cut short by `time_limit` is not cached). `time_limit` and `progress`: see
    :func:`tight_lower_bound`.
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
