"""Regret lower bounds (Kandasamy et al. 2016; Wang et al. 2023) and Kandasamy et al.'s analysis of MF-UCB.

Regret (cumulative, capital Λ) — the constants multiplying a logarithm, per arm, as
:class:`RegretLowerBound`:

* :func:`kandasamy_regret_lower_bound` — Kandasamy et al. (2016), Theorem 4 / Lemma 11, for their regret
  (Eq. 1): `liminf E[R(Λ)]/log n_Λ ≥ Σ_k (1/(M−p_k+1)) Δ_k^(M) min_{ℓ: Δ_k^(ℓ)>0} λ(ℓ)/KL(µ_k^(ℓ) ‖ µ⋆−ζ(ℓ))`
  with `Δ_k^(m) = µ⋆ − µ_k^(m) − ζ(m)`, `p_k` the first fidelity with `Δ_k^(p) > 0` and
  `n_Λ = ⌊Λ/λ(M)⌋`;
* :func:`wang_regret_lower_bound` — Wang et al. (2023), Theorem 4.4, for their regret (Eq. 9):
  `liminf E[R(Λ)]/log Λ ≥ Σ_k min_{m: Δ_k^(m)>0} ((λ(m)/λ(1)) µ_1 − µ_k) / KL(ν_k^(m), θ_k^(m))`
  with Wang's gaps and targets (:func:`~mf_sched.sim.cost_bound.gaps`);
* :func:`mfucb_analysis` — Kandasamy et al.'s instance calculator: the switching thresholds γ (Eq. 4),
  each arm's "home" fidelity ⟦k⟧ (§4.1), the leading constants of MF-UCB (Theorem 2) and UCB, and the
  deterministic cap on lower-fidelity plays (:func:`mfucb_low_fidelity_caps`, proof of Lemma 8).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from mf_sched._validate import check_int
from mf_sched.confidence import bernoulli_kl, gaussian_kl, mfucb_gamma, psi
from mf_sched.sim.cost_bound import gaps

__all__ = [
    "RegretLowerBound",
    "kandasamy_regret_lower_bound",
    "wang_regret_lower_bound",
    "MFUCBAnalysis",
    "mfucb_analysis",
    "mfucb_low_fidelity_caps",
]


@dataclass(frozen=True)
class RegretLowerBound:
    """An asymptotic problem-dependent regret lower bound: `liminf E[R(Λ)] / log(x_Λ) ≥ coefficient`.

    Attributes:
        coefficient: `Σ_k per_arm`.
        per_arm: each arm's term (0 for arms that need no exploration, e.g. an optimal arm).
        fidelity: the fidelity (0-based) attaining each arm's minimum; `-1` for arms without a term
            (the optimal arms in Kandasamy's bound).
        paper: which theorem (paper, theorem and the regret it bounds).
        log_of: what the logarithm is taken of: `"n_Lambda"` (`log ⌊Λ/λ(M)⌋`, Kandasamy) or `"Lambda"`
            (`log Λ`, Wang).
        kind: the KL family: `"bernoulli"` or `"gaussian"`.
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
        """The bound with the given per-arm terms (their sum is the coefficient).

        Args:
            per_arm: each arm's term (length K).
            fidelity: the fidelity (0-based) attaining each arm's term; `-1` for arms without one.
            costs: the ladder's `λ` per fidelity; the last one becomes `cost_top`.
            notes: the caveats, joined by `"; "` into `note`.
            **theorem: the remaining fields: `paper`, `log_of`, `kind` and `form`.

        Returns:
            The bound.
        """
        return cls(
            coefficient=float(per_arm.sum()),
            per_arm=per_arm,
            fidelity=fidelity,
            cost_top=float(costs[-1]),
            note="; ".join(notes),
            **theorem,  # type: ignore[arg-type]
        )

    def at(self, capital: float) -> float:
        """`coefficient · log(x_Λ)` at capital `Λ` (the leading term; 0 while the log is ≤ 0).

        Args:
            capital: the capital `Λ` spent, in the units of the costs `λ`.

        Returns:
            The leading term of the bound at `Λ`: `x_Λ = ⌊Λ/λ(M)⌋` for Kandasamy's bound, `Λ` for Wang's.
        """
        x = math.floor(capital / self.cost_top) if self.log_of == "n_Lambda" else capital
        return self.coefficient * max(0.0, math.log(x)) if x > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The bound as JSON-safe values, with the per-arm fidelities counted (`fidelity_counts[m + 1]` arms have
        their term at fidelity `m`; `fidelity_counts[0]` arms have none) instead of listed."""
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

    Args:
        means: K×M means (last column: the true means `µ^(M)`).
        costs: the ladder's `λ` per fidelity (positive).
        zeta: the ladder's `ζ` per fidelity (non-negative).
        kind: the reward family of the KL: `"bernoulli"` (means in `[0, 1]`) or `"gaussian"` (needs `sigma`).
        sigma: the Gaussian noise standard deviation (`> 0`); required for `kind="gaussian"`, ignored for
            Bernoulli.
        form: `"kl"` (the proof's KL form) or `"gap"` (the lemma's printed `Δ²` form).

    Returns:
        The bound; its coefficient multiplies `log n_Λ`.

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
    targets `θ` are Wang's (:func:`~mf_sched.sim.cost_bound.gaps`; the best arm is compared with the second best), and
    `D = KL(ν_k^(m), θ_k^(m))` (`form="kl"`, the proof) or `Δ_k^(m)²` (`form="gap"`, the theorem
    as printed, which holds "up to a distribution constant"). The coefficient multiplies `log Λ`. (The
    extracted theorem lost `λ(m)` and `log Λ`; we follow the proof's decomposition, Eq. 22 of
    Appendix F, and its linear programme.) The
    best arm contributes 0 when fidelity 1 already separates it (`Δ_1^(1) > 0`), else it pays
    `(λ(m)/λ(1) − 1) µ_1` per verification pull. Wang's regret is defined for rewards in [0, 1]: the
    best true mean must be ≥ 0.

    Args:
        means: K×M means (last column: the true means `µ^(M)`), the best unique and `≥ 0`.
        costs: the ladder's `λ` per fidelity (positive).
        zeta: the ladder's `ζ` per fidelity (non-negative).
        kind: the reward family of the KL: `"bernoulli"` (means in `[0, 1]`) or `"gaussian"` (needs `sigma`).
        sigma: the Gaussian noise standard deviation (`> 0`); required for `kind="gaussian"`, ignored for
            Bernoulli.
        form: `"kl"` (the proof's KL form) or `"gap"` (the theorem's printed `Δ²` form).

    Returns:
        The bound; its coefficient multiplies `log Λ`.

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

    Args:
        n: the number of plays so far (a positive integer).
        rho: MF-UCB's exploration constant ρ (`> 0`; its UCB width is `ψ⁻¹(ρ log t / n)`).
        gamma: the switching thresholds `γ(1..M−1)` (non-negative; :func:`~mf_sched.confidence.mfucb_gamma`
            gives Eq. 4's).
        sigma: the sub-Gaussian noise scale σ of `ψ(ε) = ε²/(2σ²)` (`> 0`).

    Returns:
        The cap per fidelity `ℓ < M` (integers, length M − 1).

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
        """:func:`mfucb_low_fidelity_caps` after `n` plays, with this analysis' γ, ρ and σ.

        Args:
            n: the number of plays so far (a positive integer).

        Returns:
            The cap on any arm's plays at each fidelity `ℓ < M` (length M − 1).
        """
        return mfucb_low_fidelity_caps(n, self.rho, self.gamma, self.sigma)

    def to_dict(self) -> dict[str, Any]:
        """The analysis as JSON-safe values: γ, the number of suboptimal arms per home fidelity, the number of
        optimal arms, both constants and their ratio (None when UCB's is 0), the Assumption-1 violations."""
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

    Args:
        means: K×M means (last column: the true means `µ^(M)`).
        costs: the ladder's `λ` per fidelity (positive).
        zeta: the ladder's `ζ` per fidelity (non-negative).
        sigma: the sub-Gaussian noise scale σ of `ψ(ε) = ε²/(2σ²)` (`> 0`).
        rho: MF-UCB's exploration constant ρ (`> 0`); only recorded, for :meth:`MFUCBAnalysis.caps`.
        gamma: the switching thresholds `γ(1..M−1)` (M − 1 values); default: Eq. 4's,
            :func:`~mf_sched.confidence.mfucb_gamma`.

    Returns:
        The analysis.

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
