"""ζ(m), γ(m), σ and λ(m) estimated from learning curves, with held-out coverage, and a suggested ladder.

The papers assume the bias bound ζ(m) of every fidelity is known (Kandasamy et al. 2016 §2,
`|µ^(M) − µ^(m)| ≤ ζ^(m)`; Poiani et al. 2022 §2, ξ_m; Wang et al. 2023 §1.1). In tuning it is a
property of the workload. Given a :class:`~mf_sched.curves.learning_curves.LearningCurves` table and a ladder of rungs
(fidelities `r_1 < … < r_M`, the last being the target), this module estimates, per rung `m`:

* the **signed bias** of every configuration, `b_k(m) = µ_k(m) − µ_k(M)` in the higher-is-better
  orientation (`µ` = metric for `mode="max"`, −metric for `"min"`), averaged over the seeds that
  report both rungs (:meth:`~mf_sched.curves.learning_curves.RungValues.bias`);
* **ζ̂(m)**, the `quantile`-quantile of `|b_k(m)|` over configurations (inverted-CDF definition: the
  smallest value with at least a `quantile` fraction of configurations at or below it), its upper
  confidence bound at level `confidence`, and the **non-increasing envelope** `max_{m' ≥ m}` of the
  upper bounds with `ζ(M) = 0` — the value handed to the ladder. `method="bootstrap"` is the
  percentile bootstrap over configurations computed *exactly* (no resampling noise: a resample's
  quantile is at most the `i`-th order statistic `x_(i)` iff at least `⌈q n⌉` of the `n` draws are
  `≤ x_(i)`, a Binomial(n, i/n) event), so it equals the limit of infinitely many resamples.
  `method="order"` is the distribution-free order-statistic bound (the smallest `x_(j)` with
  `P(Binomial(n, q) < j) ≥ confidence`), which is valid for any continuous distribution but needs
  enough configurations (`n ≥ log(1 − confidence) / log(q)`, e.g. 59 for q = c = 0.95);
* **γ̂(m)**, the order-aware spread of the bias that IISE-γ needs (Poiani et al. 2022 §5,
  `γ_m = max_{i,j} |ξ_{i,m} − ξ_{j,m}|`): the width of the narrowest band of signed biases that holds a
  `quantile` fraction of the configurations, bounded by the narrowest band holding the upper bound's
  count of them (same method as ζ̂), with the same envelope. When the band lies at or below 0 the rung
  *underestimates* the covered configurations, and then `φ_m = ζ_m` is also a valid order-aware bound
  (Poiani et al. §5). MF-UCB's own `γ^(m) = √(λ^(m)/λ^(m+1)) ζ^(m)` (Kandasamy et al. 2016, eq. 4) is a
  different quantity that the policy derives from ζ and λ; it is not estimated here;
* **σ̂(m)**, the seed-to-seed standard deviation of one run's metric at the rung, pooled over the
  configurations that have at least two seeds (`√(Σ_k (n_k − 1) s_k² / Σ_k (n_k − 1))`). NaN when the
  source has one seed per configuration;
* **λ(m)**, the cost of one run to the rung from scratch: the resource itself (epochs, steps; the
  default when no elapsed cost is recorded) or the median measured elapsed cost (`cost="time"`).

**Held-out coverage** is the acceptance test of an estimate (:func:`holdout_coverage`): configurations
(or whole tasks) are split at random, ζ̂ is estimated on one part and, on the other, we report the
fraction of configurations whose gap is `≤ ζ̂(m)`; this is repeated and averaged. A ζ̂ whose held-out
coverage falls clearly below `quantile` does not generalise (heavy tails, too few configurations,
tasks that differ). Policies' guarantees only cover arms within ζ: `quantile` is the fraction of arms
the guarantee is meant to cover.

Conventions and choices (none of them is in the papers, which assume ζ known):

* a configuration that lacks the last rung (a diverged or unfinished run) has no gap and is left out;
  its count is reported per rung (`n_configs`);
* the envelope is applied to the upper bounds, not to the point quantiles, so `ζ̂(m) ≥` every later
  rung's upper bound: a cheaper fidelity is never claimed to be closer to the target than a dearer one;
* a rung whose enveloped ζ equals the cheaper rung's is *dominated* (it costs more for no smaller bias
  bound) and is flagged; :func:`suggest_ladder` can drop it (Poiani et al. 2022, footnote 1);
* Poiani et al.'s Assumption 1 (Eq. 5: the points `(−ξ_m, √λ_m)` form a convex chain) is checked and
  reported, not enforced: it matters for IISE's theory only.

Example:
    >>> import numpy as np
    >>> from mf_sched.curves.learning_curves import LearningCurves
    >>> rng = np.random.default_rng(0)
    >>> final = rng.uniform(0.6, 0.9, 300)                      # 300 configurations, accuracy curves
    >>> epochs = np.array([1, 3, 9, 27])
    >>> acc = final[:, None] - 0.3 * rng.random((300, 1)) / epochs  # closer to the final as epochs grow
    >>> curves = LearningCurves(config=np.repeat(np.arange(300), 4), fidelity=np.tile(epochs, 300),
    ...                         metric=acc.ravel(), metric_name="acc", fidelity_name="epoch")
    >>> cal = calibrate(curves, [1, 3, 9, 27], quantile=0.9, seed=0)
    >>> cal.zeta.round(2).tolist()            # 0.9-quantile of 0.3·U·(1/epoch − 1/27), bounded
    [0.26, 0.08, 0.02, 0.0]
    >>> bool(cal.coverage.zeta[:-1].min() >= 0.85)
    True
    >>> cal.ladder().costs
    (1.0, 3.0, 9.0, 27.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mf_sched._validate import check_fraction
from mf_sched.curves._estimators import (
    Coverage,
    bound_count,
    cost_bias_convexity,
    estimate_costs,
    estimate_gamma,
    estimate_sigma,
    estimate_zeta,
    holdout_coverage,
    narrowest_band,
    non_increasing_envelope,
    quantile_bound,
)
from mf_sched.curves.learning_curves import LearningCurves, RungValues, parse_fidelities
from mf_sched.ladder import FidelityLadder
from mf_sched.racing.calibration import RaceCalibration, calibrate_race

__all__ = [
    "Calibration",
    "Coverage",
    "calibrate",
    "holdout_coverage",
    "quantile_bound",
    "bound_count",
    "narrowest_band",
    "estimate_zeta",
    "estimate_gamma",
    "estimate_sigma",
    "estimate_costs",
    "non_increasing_envelope",
    "geometric_rungs",
    "suggest_ladder",
    "cost_bias_convexity",
    "RaceCalibration",
    "calibrate_race",
]


# ------------------------------------------------------------------------------------------ calibration
@dataclass
class Calibration:
    """Per-rung estimates for a ladder of fidelities (see :func:`calibrate`); arrays have one entry per rung.

    Attributes:
        rungs: the fidelities (resources), last = target.
        costs: λ(m), increasing (see :func:`estimate_costs`).
        cost_source: `"resource"` (λ = the rungs) or `"time"` (λ = median measured elapsed cost).
        quantile: the fraction of configurations ζ̂ covers.
        confidence: the level of the upper bound on that quantile.
        method: `"bootstrap"` or `"order"` (see :func:`quantile_bound`).
        metric_name: display name of the metric.
        mode: `"max"` (higher is better) or `"min"`.
        fidelity_name: display name of the fidelity (`"fidelity"` when calibrated from :class:`RungValues`).
        n_configs: configurations with both the rung and the target.
        zeta: the enveloped upper bounds, 0 at the target: what :meth:`ladder` uses.
        zeta_ucb: the upper bounds before the envelope.
        zeta_point: the point quantiles of the gaps.
        gap_median: the median gap per rung (NaN where no configuration has one).
        gamma: the enveloped order-aware spread bound γ̂, 0 at the target (see :func:`estimate_gamma`).
        gamma_point: the width of the point band (not enveloped).
        bias_low: the low end of the bound's band of signed biases.
        bias_high: the high end of that band.
        underestimating: per rung, whether that band lies at or below 0 (the rung underestimates the
            covered configurations; then `φ_m = ζ_m` is a valid order-aware bound, Poiani et al. 2022 §5).
        sigma: pooled seed-to-seed standard deviation (NaN where no configuration has two seeds).
        sigma_median: median of the per-configuration seed standard deviations.
        sigma_configs: configurations with at least two seeds at the rung.
        coverage: held-out :class:`Coverage`, or None.
        dominated: rungs whose ζ equals the cheaper rung's (they cost more for no smaller bias bound).
        convex: whether Poiani et al. 2022 Assumption 1 holds (see :func:`cost_bias_convexity`).
        convex_slopes: the slopes that Assumption 1 compares (see :func:`cost_bias_convexity`).
        notes: what the estimate left out or changed (configurations without the last rung, dropped rungs).
        gaps: `|bias|`, configurations × rungs (what :meth:`plot` draws); None when not kept.
        bias: the signed biases `b_k(m)`, configurations × rungs (NaN where missing); None when not kept.
    """

    rungs: np.ndarray
    costs: np.ndarray
    cost_source: str
    quantile: float
    confidence: float
    method: str
    metric_name: str
    mode: str
    fidelity_name: str
    n_configs: np.ndarray
    zeta: np.ndarray
    zeta_ucb: np.ndarray
    zeta_point: np.ndarray
    gap_median: np.ndarray
    gamma: np.ndarray
    gamma_point: np.ndarray
    bias_low: np.ndarray
    bias_high: np.ndarray
    underestimating: np.ndarray
    sigma: np.ndarray
    sigma_median: np.ndarray
    sigma_configs: np.ndarray
    coverage: Coverage | None
    dominated: list[int]
    convex: bool
    convex_slopes: list[float]
    notes: list[str] = field(default_factory=list)
    gaps: np.ndarray | None = field(default=None, repr=False)
    bias: np.ndarray | None = field(default=None, repr=False)

    @property
    def M(self) -> int:
        """Number of rungs."""
        return int(self.rungs.size)

    def ladder(self, *, gamma: bool = True, zeta: str = "envelope") -> FidelityLadder:
        """The :class:`~mf_sched.ladder.FidelityLadder` with λ = :attr:`costs`, ζ = :attr:`zeta` (or
        `zeta="point"` for the unbounded point quantiles, enveloped), γ = :attr:`gamma` and resources =
        :attr:`rungs`.

        Args:
            gamma: give the ladder γ̂ (IISE-γ's order-aware bound); False leaves γ unset.
            zeta: `"envelope"` (the bounds, what the guarantees need) or `"point"` (the point quantiles,
                enveloped: smaller, covering fewer configurations than `quantile` intends).
        """
        if zeta not in ("envelope", "point"):
            raise ValueError(f"zeta = {zeta!r} is unknown; accepted: 'envelope', 'point'")
        z = self.zeta if zeta == "envelope" else non_increasing_envelope(self.zeta_point)
        names = [f"{self.fidelity_name} {r:g}" for r in self.rungs]
        return FidelityLadder(
            self.costs.tolist(),
            z.tolist(),
            gamma=self.gamma.tolist() if gamma else None,
            resources=self.rungs.tolist(),
            names=names,
        )

    def table(self) -> str:
        """The per-rung table printed by `mf-sched calibrate`."""
        cov = self.coverage
        head = (
            f"{self.metric_name} ({self.mode}); ζ̂ = {self.quantile:g}-quantile of |gap| with a "
            f"{self.confidence:g} {self.method} upper bound, non-increasing envelope"
        )
        cols = ["rung", self.fidelity_name[:10], f"λ ({self.cost_source})", "configs", "gap med", "ζ̂ point"]
        cols += ["ζ̂ bound", "ζ̂", "γ̂", "bias interval", "σ̂ seeds"]
        if cov is not None:
            cols += [f"cover ({cov.split})", "worst"]
        rows = [cols]
        for m in range(self.M):
            row = [
                str(m),
                f"{self.rungs[m]:g}",
                f"{self.costs[m]:.4g}",
                str(int(self.n_configs[m])),
                f"{self.gap_median[m]:.4g}",
                f"{self.zeta_point[m]:.4g}",
                f"{self.zeta_ucb[m]:.4g}",
                f"{self.zeta[m]:.4g}" + ("*" if m in self.dominated else ""),
                f"{self.gamma[m]:.4g}",
                f"[{self.bias_low[m]:+.3g}, {self.bias_high[m]:+.3g}]",
                "n/a" if math.isnan(self.sigma[m]) else f"{self.sigma[m]:.3g} ({int(self.sigma_configs[m])})",
            ]
            if cov is not None:
                row += [f"{cov.zeta[m]:.3f}", f"{cov.zeta_worst[m]:.3f}"]
            rows.append(row)
        w = [max(len(r[i]) for r in rows) for i in range(len(cols))]
        lines = [head] + ["  ".join(x.rjust(w[i]) for i, x in enumerate(r)) for r in rows]
        if self.dominated:
            lines.append(f"* dominated: rung(s) {self.dominated} cost more than the rung below for the same ζ̂")
        lines.append(
            "Poiani et al. 2022 Assumption 1 (convex cost-bias chain): " + ("holds" if self.convex else "violated")
        )
        lines.extend(self.notes)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary (NaN as None)."""

        def arr(a: np.ndarray) -> list[Any]:
            return [None if isinstance(x, float) and not math.isfinite(x) else x for x in np.asarray(a).tolist()]

        return {
            "metric": self.metric_name,
            "mode": self.mode,
            "fidelity": self.fidelity_name,
            "quantile": self.quantile,
            "confidence": self.confidence,
            "method": self.method,
            "rungs": arr(self.rungs),
            "costs": arr(self.costs),
            "cost_source": self.cost_source,
            "n_configs": arr(self.n_configs),
            "zeta": arr(self.zeta),
            "zeta_ucb": arr(self.zeta_ucb),
            "zeta_point": arr(self.zeta_point),
            "gap_median": arr(self.gap_median),
            "gamma": arr(self.gamma),
            "gamma_point": arr(self.gamma_point),
            "bias_low": arr(self.bias_low),
            "bias_high": arr(self.bias_high),
            "underestimating": arr(self.underestimating),
            "sigma": arr(self.sigma),
            "sigma_median": arr(self.sigma_median),
            "sigma_configs": arr(self.sigma_configs),
            "coverage": None if self.coverage is None else self.coverage.to_dict(),
            "dominated": self.dominated,
            "assumption1_convex": self.convex,
            "notes": self.notes,
        }

    def plot(self, path: str, *, title: str | None = None) -> None:
        """Save a figure: the distribution (ECDF) of |gap| per rung with ζ̂ marked, and ζ̂ against λ.

        Needs matplotlib (the `bench` extra: `pip install 'mf-sched[bench]'`).

        Args:
            path: the image file to write (its suffix picks the format, e.g. `.png`).
            title: the figure's title (default: metric, mode and quantile); cut at 110 characters.
        """
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            raise ImportError("plotting needs matplotlib: pip install 'mf-sched[bench]'") from None
        if self.gaps is None:
            raise ValueError("this calibration holds no gaps to plot (it was loaded from a summary)")
        from matplotlib.ticker import NullFormatter

        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
        cmap = plt.get_cmap("viridis")
        pos = self.gaps[:, :-1][self.gaps[:, :-1] > 0]
        floor = float(np.quantile(pos, 0.01)) if pos.size else 1e-12
        top = max(float(np.quantile(pos, 0.995)) if pos.size else 1.0, float(self.zeta.max())) * 2
        for m in range(self.M - 1):
            g = np.sort(self.gaps[:, m][~np.isnan(self.gaps[:, m])])
            if g.size == 0:
                continue
            color = cmap(m / max(1, self.M - 1))
            ax1.step(np.maximum(g, floor), np.arange(1, g.size + 1) / g.size, where="post", color=color,
                     label=f"{self.fidelity_name} {self.rungs[m]:g}")  # fmt: skip
            ax1.axvline(max(self.zeta[m], floor), color=color, ls="--", lw=1)
        ax1.axhline(self.quantile, color="grey", lw=0.8, ls=":")
        ax1.set_xscale("log")
        ax1.set_xlim(floor, max(top, floor * 10))  # heavy tails (diverged runs) would squash the plot
        ax1.set_xlabel(f"|{self.metric_name}(rung) − {self.metric_name}(last)|")
        ax1.set_ylabel("fraction of configurations")
        ax1.set_title("gap ECDF per rung (dashed: ζ̂; x clipped at 2× the 99.5% quantile)", fontsize=10)
        ax1.legend(fontsize=8)
        x = self.costs
        ax2.plot(x, self.zeta_point, "o-", label="ζ̂ point quantile")
        ax2.plot(x, self.zeta, "s-", label="ζ̂ (bound, envelope)")
        ax2.plot(x, self.gamma, "^-", label="γ̂ (bound, envelope)")
        if not np.all(np.isnan(self.sigma)):
            ax2.plot(x, self.sigma, "x--", label="σ̂ (seeds)")
        ax2.set_xscale("log")
        ax2.xaxis.set_minor_formatter(NullFormatter())
        ax2.set_xlabel(f"λ ({self.cost_source})")
        ax2.set_title("bias bounds against cost")
        if self.coverage is not None:
            for m in range(self.M - 1):
                ax2.annotate(f"{self.coverage.zeta[m]:.2f}", (x[m], self.zeta[m]), fontsize=7,
                             textcoords="offset points", xytext=(4, 4))  # fmt: skip
            ax2.text(0.02, 0.02, f"labels: held-out coverage ({self.coverage.split})", transform=ax2.transAxes,
                     fontsize=7)  # fmt: skip
        ax2.legend(fontsize=8)
        title = title or f"{self.metric_name} ({self.mode}), quantile {self.quantile:g}"
        fig.suptitle(title if len(title) <= 110 else title[:107] + "...", fontsize=11)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)


def calibrate(
    curves: LearningCurves | RungValues,
    rungs: Sequence[float] | str | None = None,
    *,
    quantile: float = 0.95,
    confidence: float = 0.95,
    method: str = "bootstrap",
    cost: str = "auto",
    how: str = "previous",
    tolerance: float = 0.0,
    holdout: str | None = "auto",
    repeats: int = 20,
    test_fraction: float = 0.5,
    seed: int | None = 0,
) -> Calibration:
    """Estimate λ, ζ, γ and σ at `rungs` from learning curves, with held-out coverage.

    Args:
        curves: a :class:`~mf_sched.curves.learning_curves.LearningCurves` table (read at `rungs` with `how` and
            `tolerance`, see :meth:`~mf_sched.curves.learning_curves.LearningCurves.values_at`) or
            :class:`RungValues`.
        rungs: the ladder's fidelities (e.g. `[1, 3, 9, 27]` epochs or `"1,3,9,27"`); the last is the
            target. Required for a table; ignored for :class:`RungValues`.
        quantile: the fraction of configurations ζ̂ should cover (e.g. 0.95).
        confidence: level of the upper bound on that quantile (≥ 0.5).
        method: `"bootstrap"` (exact percentile bootstrap) or `"order"` (distribution-free).
        cost: `"resource"`, `"time"` or `"auto"` (see :func:`estimate_costs`).
        how: how a table's runs are read at the rungs: `"previous"`, `"interpolate"` or `"exact"`
            (see :meth:`~mf_sched.curves.learning_curves.LearningCurves.values_at`).
        tolerance: relative slack in `[0, 1)` for a run that stops just short of a rung (see
            :meth:`~mf_sched.curves.learning_curves.LearningCurves.values_at`).
        holdout: `"configs"`, `"tasks"`, `None` (skip) or `"auto"` (tasks when there are at least
            four, else configs).
        repeats: number of held-out splits.
        test_fraction: fraction of the configurations held out in each split.
        seed: seed of the held-out splits.

    Returns:
        The per-rung estimates; :meth:`Calibration.ladder` turns them into a
        :class:`~mf_sched.ladder.FidelityLadder`.
    """
    q = check_fraction("quantile", quantile)
    c = check_fraction("confidence", confidence, 0.5)
    if isinstance(curves, LearningCurves):
        if rungs is None:
            raise ValueError("rungs are required: the ladder's fidelities, e.g. [1, 3, 9, 27]")
        rv = curves.values_at(parse_fidelities(rungs, "rungs"), how=how, tolerance=tolerance)
        fidelity_name = curves.fidelity_name
    elif isinstance(curves, RungValues):
        rv = curves
        fidelity_name = "fidelity"
    else:
        raise ValueError(f"curves must be LearningCurves or RungValues, got {type(curves).__name__}")
    if rv.M < 2:
        raise ValueError("a calibration needs at least two rungs (a cheap one and the target)")
    bias = rv.bias()
    has_top = ~np.isnan(bias[:, -1])
    if has_top.sum() < 2:
        raise ValueError(
            f"only {int(has_top.sum())} configuration(s) reach the last rung ({rv.rungs[-1]:g}); lower it, "
            "or raise tolerance if runs stop just short of it"
        )
    notes = []
    missing = int((~has_top).sum())
    if missing:
        notes.append(f"{missing} configuration(s) without the last rung ({rv.rungs[-1]:g}) are left out")
    gaps = np.abs(bias)
    point, ucb, n = estimate_zeta(gaps, q, c, method)
    zeta = non_increasing_envelope(ucb)
    zeta[-1] = 0.0
    g = estimate_gamma(bias, q, c, method)
    gamma = non_increasing_envelope(np.maximum(g["gamma_ucb"], 0.0))
    gamma[-1] = 0.0
    with np.errstate(all="ignore"):
        gap_median = np.array([np.nanmedian(gaps[:, m]) if n[m] else np.nan for m in range(rv.M)])
    sig = estimate_sigma(rv)
    lam, source = estimate_costs(rv, cost)
    dominated = [m for m in range(1, rv.M - 1) if zeta[m] >= zeta[m - 1]]
    convex, slopes = cost_bias_convexity(lam, zeta)
    cov = None
    if holdout == "auto":
        holdout = "tasks" if np.unique(rv.config_task[has_top]).size >= 4 else "configs"
    if holdout is not None:
        cov = holdout_coverage(
            rv,
            quantile=q,
            confidence=c,
            method=method,
            split=holdout,
            repeats=repeats,
            test_fraction=test_fraction,
            seed=seed,
        )
    return Calibration(
        rungs=rv.rungs.copy(),
        costs=lam,
        cost_source=source,
        quantile=q,
        confidence=c,
        method=method,
        metric_name=rv.metric_name,
        mode=rv.mode,
        fidelity_name=fidelity_name,
        n_configs=n,
        zeta=zeta,
        zeta_ucb=ucb,
        zeta_point=point,
        gap_median=gap_median,
        gamma=gamma,
        gamma_point=g["gamma_point"],
        bias_low=g["low_bound"],
        bias_high=g["high_bound"],
        underestimating=g["high_bound"] <= 0,
        sigma=sig["pooled"],
        sigma_median=sig["median"],
        sigma_configs=sig["n_configs"],
        coverage=cov,
        dominated=dominated,
        convex=convex,
        convex_slopes=slopes,
        notes=notes,
        gaps=gaps,
        bias=bias,
    )


# ------------------------------------------------------------------------------------------ ladder suggestion
def geometric_rungs(
    min_resource: float, max_resource: float, eta: float = 3.0, available: Sequence[float] | None = None
) -> np.ndarray:
    """Rungs `r, r η, r η², …` below `max_resource`, then `max_resource` itself (the last geometric
    rung is dropped when it is within a factor `√η` of the maximum: it would cost nearly as much).
    With `available` fidelities, each rung snaps to the nearest available one (in log scale).

    Args:
        min_resource: the first rung, `> 0`.
        max_resource: the target, `> min_resource`.
        eta: the growth factor between rungs, `> 1`.
        available: the fidelities that exist (e.g. the epochs a table recorded); None: any value. Rungs that
            snap to the same fidelity are merged.

    >>> geometric_rungs(1, 52).tolist()
    [1.0, 3.0, 9.0, 27.0, 52.0]
    >>> geometric_rungs(1, 30).tolist()
    [1.0, 3.0, 9.0, 30.0]
    >>> geometric_rungs(0.05, 1, eta=2, available=np.arange(1, 101) / 100).tolist()
    [0.05, 0.1, 0.2, 0.4, 1.0]
    """
    lo, hi = float(min_resource), float(max_resource)
    if not (math.isfinite(lo) and math.isfinite(hi) and 0 < lo < hi):
        raise ValueError(f"need 0 < min_resource < max_resource, got {min_resource} and {max_resource}")
    e = float(eta)
    if not (math.isfinite(e) and e > 1):
        raise ValueError(f"eta = {eta} is out of range; accepted: a finite number > 1")
    rungs = []
    r = lo
    while r * math.sqrt(e) <= hi * (1 + 1e-9):
        rungs.append(r)
        r *= e
    rungs.append(hi)
    out = np.asarray(rungs)
    if available is not None:
        av = np.unique(np.asarray(available, dtype=float))
        av = av[av > 0]
        if av.size == 0:
            raise ValueError("available holds no positive fidelity")
        idx = np.abs(np.log(av)[None, :] - np.log(out)[:, None]).argmin(axis=1)
        out = np.unique(av[idx])
    return out


def suggest_ladder(
    curves: LearningCurves,
    *,
    min_resource: float | None = None,
    max_resource: float | None = None,
    eta: float = 3.0,
    drop_dominated: bool = False,
    **kwargs: Any,
) -> Calibration:
    """A geometric ladder (:func:`geometric_rungs`) over the table's fidelities, calibrated.

    The returned :class:`Calibration` reports, per rung, cost, ζ̂, σ̂ and held-out coverage.

    Args:
        curves: the table; it needs at least two positive fidelities.
        min_resource: the first rung; default: the smallest positive fidelity in the table.
        max_resource: the target; default: the largest fidelity that 90% of the runs reach.
        eta: the growth factor between rungs, `> 1` (see :func:`geometric_rungs`).
        drop_dominated: remove the dominated rungs (their ζ̂ is no smaller than the cheaper rung's) and
            calibrate the remaining ladder again; a note names the dropped rungs.
        **kwargs: passed to :func:`calibrate` (`quantile`, `confidence`, `method`, `cost`, `how`,
            `tolerance`, `holdout`, `repeats`, `test_fraction`, `seed`).

    >>> from mf_sched.curves.learning_curves import LearningCurves
    >>> ep = np.arange(1, 28)
    >>> c = LearningCurves(config=np.repeat(np.arange(50), 27), fidelity=np.tile(ep, 50),
    ...                    metric=(np.linspace(0.5, 0.9, 50)[:, None] * (1 - 0.5 / ep)).ravel())
    >>> suggest_ladder(c, holdout=None).rungs.tolist()
    [1.0, 3.0, 9.0, 27.0]
    """
    fids = curves.fidelities
    pos = fids[fids > 0]
    if pos.size < 2:
        raise ValueError("the table needs at least two positive fidelities to suggest a ladder")
    if min_resource is None:
        min_resource = float(pos[0])
    if max_resource is None:
        starts, lengths = curves.runs()
        ends = curves.fidelity[starts + lengths - 1]
        max_resource = float(np.quantile(ends, 0.1, method="inverted_cdf"))
    rungs = geometric_rungs(min_resource, max_resource, eta, available=pos)
    cal = calibrate(curves, rungs, **kwargs)
    if drop_dominated and cal.dominated:
        keep = [m for m in range(cal.M) if m not in cal.dominated]
        cal = calibrate(curves, cal.rungs[keep], **kwargs)
        cal.notes.append(f"dropped dominated rung(s) {[float(rungs[m]) for m in range(rungs.size) if m not in keep]}")
    return cal
