"""The curve-aware bound: how much a run can still improve after a rung, *given its own curve so far*.

The racing rule (:mod:`mf_sched.racing.engine`, `rule="race"`) stops run `i` at rung `m` once the optimistic bound on
its final value falls below the best final value recorded so far, `U_i < L`. It is wrong only if it stops the
run that a full-fidelity search would have returned (the *winner*), so the bound has to cover the winner's
improvement after rung `m` — not every run's, which is what the papers' ζ(m) bounds (Poiani et al. 2022 §2,
Eq. 1; Kandasamy et al. 2016 §2). :class:`~mf_sched.racing.bias.RaceBias` does this with one number per fraction of
training (ζ⁺); this module makes the number depend on the run's own curve:

```text
U_i(m) = v_i(m) + ĝ(x_i(m)),   ĝ(x) = q_hi(x) + λ · max(q_hi(x) − q_med(x), w_min)
```

where `x_i(m)` are the run's features at the rung — how far into training it is (`log f`), its value
`v` (its distance to the ideal, on a log scale, for a loss) and its slope per log-epoch since the previous
rung `s = (v(m) − v(m−1)) / log(f_m / f_{m−1})` (a fraction of the remaining loss for a loss) — and
`q_hi` / `q_med` are linear quantile models (levels `tau` and 0.5) of the improvement `v(M) − v(m)`
(absolute form) or `(v(M) − v(m)) / (ideal − v(m))` capped to [0, 1] (relative form). A run that is still
climbing gets a wider bound than one that has flattened. Each model is fitted on the learning curves of many
tasks with every configuration weighted by its probability of being the best of `K` random configurations
(so it describes the run that matters), and `λ` is **one conformal step over tasks** that makes the bound
hold *jointly over the rungs* of the winner's curve (conformalised quantile regression, Romano, Patterson,
Candès 2019, NeurIPS, §3, with the score normalised by the interval width; the exchangeable unit is the
*task*, as in Dunn, Wasserman, Ramdas 2022, JASA, "two-layer hierarchical" conformal prediction). Fitting:
:func:`mf_sched.racing.fit.fit_curve_bound`; the models shipped with mf-sched (per metric family, fitted on
LCBench, TaskSet, DeepOBS and AlgoPerf curves): :func:`shipped_curve_bound`.

**What the bound is about.** It is calibrated on *observed* curves (seed noise included), and the quantity it
covers is the observed final value of the runs a full search would call good: the miss event of a task is
"every run within `tolerance` of the best observed final value of a random `K`-subset exceeds its bound at
some rung". So no confidence radius is stacked on top: with probability `≥ 1 − α` over tasks that are
exchangeable with the calibration tasks, racing keeps at least one run whose observed final value is within
`tolerance` (relative) of the full search's answer (proof: :mod:`mf_sched.racing.certificate`).

Example:
    >>> b = shipped_curve_bound("unit").select(n_arms=24, alpha=0.05, tolerance=0.005)
    >>> flat = float(b.gain(0.80, 0.79, 1 / 3, 1 / 9))     # has flattened at 1/3 of training
    >>> climbing = float(b.gain(0.80, 0.60, 1 / 3, 1 / 9))  # still climbing fast
    >>> 0 < flat < climbing
    True
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from mf_sched._validate import check_fraction, check_int
from mf_sched.racing.evidence import EvidenceModel, select_evidence

__all__ = [
    "CurveBound",
    "CurveBoundFit",
    "FEATURES",
    "FEATURES_FIRST",
    "design",
    "shipped_curve_bound",
    "curve_bound_families",
]

FORMAT = "mf_sched.curve_bound/1"
#: the features of a rung with a previous rung (a slope), and of a run's first rung (no slope yet)
FEATURES = ("1", "level", "slope")
FEATURES_FIRST = FEATURES[:2]
_TINY = 1e-9


def design(
    value: Any, prev: Any, frac: Any, prev_frac: Any, *, form: str, ideal: float | None, slope_clip: float
) -> tuple[np.ndarray, np.ndarray]:
    """The feature rows of runs at a rung (vectorised): `(X, has_prev)`.

    `X` has the columns :data:`FEATURES`: 1, the *level* (the value itself, or for the
    relative form `log(ideal − value)`) and the *slope* per log-epoch since the previous rung (for the
    relative form, as a fraction of `ideal − value`); for a first rung the slope is 0 and `has_prev` is
    False (the first-rung model over :data:`FEATURES_FIRST` applies). The slope is clipped to `±slope_clip`
    (the range the models were fitted on), so a jump never extrapolates a model.

    Args:
        value: the runs' scores (maximised, in the family's units) at the rung; a number or an array, broadcast
            with the others.
        prev: their scores at the previous rung; NaN for a run's first rung.
        frac: the fraction of training of the rung, in `(0, 1]`.
        prev_frac: the fraction of training of the previous rung (NaN, or not below `frac`: a first rung).
        form: `"absolute"` (the level is the value) or `"relative"` (the level is `log(ideal − value)`, the slope a
            fraction of `ideal − value`).
        ideal: the best attainable score (maximised orientation); read by the relative form only.
        slope_clip: the slope is clipped to `±slope_clip`, > 0.
    """
    v = np.asarray(value, dtype=float)
    p = np.asarray(prev, dtype=float)
    f = np.asarray(frac, dtype=float)
    pf = np.asarray(prev_frac, dtype=float)
    v, p, f, pf = np.broadcast_arrays(v, p, f, pf)
    has = np.isfinite(p) & np.isfinite(pf) & (pf < f)
    if form == "absolute":
        level = v
        scale = np.ones_like(v)
    else:
        room = np.maximum(float(ideal) - v, _TINY)  # type: ignore[arg-type]
        level = np.log(room)
        scale = room
    with np.errstate(invalid="ignore", divide="ignore"):
        dlog = np.where(has, np.log(f) - np.log(np.where(has, pf, 1.0)), 1.0)
        s = np.where(has, (v - np.where(has, p, 0.0)) / dlog / scale, 0.0)
    s = np.clip(s, -slope_clip, slope_clip)
    return np.stack([np.ones_like(v), level, s], axis=-1), has


def _interp_coef(grid: np.ndarray, coef: np.ndarray, frac: np.ndarray) -> np.ndarray:
    """Coefficients at `frac`: linear in `log f` between the fitted grid fractions, constant beyond the ends."""
    lg = np.log(grid)
    lf = np.clip(np.log(np.asarray(frac, dtype=float)), lg[0], lg[-1])
    if grid.size == 1:
        return np.broadcast_to(coef[0], (*lf.shape, coef.shape[1]))
    j = np.clip(np.searchsorted(lg, lf, side="right") - 1, 0, grid.size - 2)
    t = (lf - lg[j]) / (lg[j + 1] - lg[j])
    return coef[j] * (1 - t)[..., None] + coef[j + 1] * t[..., None]


def _floats(name: str, x: Any, n: int | None = None) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must hold finite numbers")
    if n is not None and a.shape[-1] != n:
        raise ValueError(f"{name} must have {n} coefficients per row, got shape {a.shape}")
    return a


@dataclass(frozen=True)
class CurveBoundFit:
    """The fitted models of one metric family (see the module docstring); what :func:`fit_curve_bound` returns
    and the package data holds. Use :meth:`select` to get the :class:`CurveBound` of a study.

    Attributes:
        family: the metric family (`"unit"`, `"loss"`, or your own name).
        form: `"absolute"` (improvement in metric units) or `"relative"` (a fraction of the distance to
            `ideal`).
        ideal: the best attainable score (maximisation orientation; relative form only).
        n_arms: the study sizes `K` the models were fitted for (increasing).
        tau: the level of the upper quantile model `q_hi`.
        grid: the fractions of training the models with a slope were fitted at (coefficients are interpolated
            linearly in `log f` between them and held constant beyond the ends).
        grid_first: the fractions the first-rung models were fitted at.
        hi: `[K][grid point]`: the coefficients of `q_hi` over :data:`FEATURES`.
        med: `[K][grid point]`: the coefficients of `q_med` over :data:`FEATURES`.
        hi_first: `[K][grid_first point]`: the first-rung models of `q_hi` over :data:`FEATURES_FIRST`.
        med_first: `[K][grid_first point]`: the first-rung models of `q_med` over :data:`FEATURES_FIRST`.
        alphas: the grid of all-rung miss rates α the conformal step was computed for.
        tolerances: the grid of relative tolerances the conformal step was computed for.
        lam: `lam[k][l][a][t]`: the conformal multiplier λ for `n_arms[k]`, `ladders[l]`, `alphas[a]`,
            `tolerances[t]`.
        w_min: the smallest interval width used to normalise scores.
        slope_clip: the slope range of the features.
        ladders: the canonical ladders (rung fractions below the top) coverage was made joint over.
        provenance: JSON-safe record of the data, held-out coverage and settings.
        evidence: the table of λ given the study's own evidence (:mod:`mf_sched.racing.evidence`): `n`, and `beta`,
            `q` `[K][ladder][alpha][tolerance][n']`, `t_lo`, `t_hi` `[K][ladder][n']`; `None` (a fit made before
            it existed): the prior λ only.
    """

    family: str
    form: str
    ideal: float | None
    n_arms: tuple[int, ...]
    tau: float
    grid: np.ndarray
    grid_first: np.ndarray
    hi: np.ndarray
    med: np.ndarray
    hi_first: np.ndarray
    med_first: np.ndarray
    alphas: tuple[float, ...]
    tolerances: tuple[float, ...]
    lam: np.ndarray
    w_min: float
    slope_clip: float
    ladders: tuple[tuple[float, ...], ...] = ()
    provenance: Mapping[str, Any] = field(default_factory=dict)
    evidence: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.evidence is not None:
            ev = self.evidence
            want = (len(self.n_arms), len(self.ladders), len(self.alphas), len(self.tolerances), len(ev.get("n", ())))
            try:
                ok = all(np.asarray(ev[f], dtype=float).shape == want for f in ("beta", "q")) and all(
                    np.asarray(ev[f], dtype=float).shape == (*want[:2], want[4]) for f in ("t_lo", "t_hi")
                )
            except (KeyError, TypeError, ValueError):
                ok = False
            if not ok:
                raise ValueError(
                    f"evidence must hold n, beta, q of shape {want} and t_lo, t_hi of {(*want[:2], want[4])}"
                )
        if self.form not in ("absolute", "relative"):
            raise ValueError(f"form = {self.form!r} is unknown; accepted: 'absolute', 'relative'")
        if self.form == "relative" and (self.ideal is None or not math.isfinite(float(self.ideal))):
            raise ValueError("form = 'relative' needs ideal= (the best attainable score)")
        ks = tuple(int(k) for k in self.n_arms)
        if not ks or any(k < 2 for k in ks) or any(b <= a for a, b in zip(ks, ks[1:])):
            raise ValueError(f"n_arms = {list(ks)} must be increasing integers >= 2")
        object.__setattr__(self, "n_arms", ks)
        nk, nf, n0 = len(ks), len(FEATURES), len(FEATURES_FIRST)
        for name in ("grid", "grid_first"):
            g = _floats(name, getattr(self, name))
            if g.ndim != 1 or g.size == 0 or np.any(g <= 0) or np.any(g >= 1) or np.any(np.diff(g) <= 0):
                raise ValueError(f"{name} must be increasing fractions in (0, 1)")
            object.__setattr__(self, name, g)
        ng, ng0 = self.grid.size, self.grid_first.size
        for name, n, g in (("hi", nf, ng), ("med", nf, ng), ("hi_first", n0, ng0), ("med_first", n0, ng0)):
            a = _floats(name, getattr(self, name), n)
            if a.shape != (nk, g, n):
                raise ValueError(f"{name} must have shape ({nk}, {g}, {n}), got {a.shape}")
            object.__setattr__(self, name, a)
        al = tuple(float(a) for a in self.alphas)
        tol = tuple(float(t) for t in self.tolerances)
        if not al or any(not 0 < a < 1 for a in al) or not tol or any(not 0 <= t < 1 for t in tol):
            raise ValueError("alphas must lie in (0, 1) and tolerances in [0, 1)")
        object.__setattr__(self, "alphas", al)
        object.__setattr__(self, "tolerances", tol)
        lads = tuple(tuple(float(f) for f in lad) for lad in self.ladders)
        if not lads or any(not lad or any(not 0 < f < 1 for f in lad) or list(lad) != sorted(lad) for lad in lads):
            raise ValueError("ladders must be non-empty increasing fractions in (0, 1)")
        object.__setattr__(self, "ladders", lads)
        lam = _floats("lam", self.lam)
        if lam.shape != (nk, len(lads), len(al), len(tol)):
            raise ValueError(f"lam must have shape ({nk}, {len(lads)}, {len(al)}, {len(tol)}), got {lam.shape}")
        object.__setattr__(self, "lam", lam)
        if not (0 < float(self.tau) < 1 and float(self.w_min) > 0 and float(self.slope_clip) > 0):
            raise ValueError("tau must lie in (0, 1), w_min and slope_clip must be > 0")

    def ladder_index(self, fractions: Sequence[float] | None) -> int:
        """The canonical ladder a study's rungs (fractions of training below the top) are calibrated by: the
        one whose first rung is nearest the study's (in log; its first rung is read by the first-rung model, the
        others with their slope, as the study's are), provided it has at least as many rungs — joint coverage
        over more rungs needs a larger λ. `-1` when none fits (more rungs than any canonical ladder from a
        first rung that near, or `None`): :meth:`select` then uses the largest λ over the canonical ladders.

        Args:
            fractions: the study's rungs as fractions of training (values outside `(0, 1)`, e.g. the top 1.0, are
                ignored); `None`: no ladder is known.
        """
        if fractions is None:
            return -1
        fr = [float(f) for f in fractions if 0 < float(f) < 1]
        if not fr:
            return -1
        i = min(range(len(self.ladders)), key=lambda j: abs(math.log(self.ladders[j][0] / fr[0])))
        return i if len(self.ladders[i]) >= len(fr) else -1

    def select(
        self,
        *,
        n_arms: int | None = None,
        alpha: float = 0.05,
        tolerance: float = 0.0,
        fractions: Sequence[float] | None = None,
        offset: float = 0.0,
        scale: float = 1.0,
    ) -> CurveBound:
        """The bound of a study of `n_arms` configurations (`None`: open-ended) with all-rung miss rate
        `alpha` and relative `tolerance`, on rungs at `fractions` of training (below the top; `None`:
        the most conservative canonical ladder).

        Conservative choices where the grid has no exact entry: the largest fitted `K` at or below
        `n_arms` (the best of fewer configurations is further from the top and improves more; the smallest
        `K` when `n_arms` is None or below the grid), the largest `alpha` at or below the one asked for
        and the largest tolerance at or below it (a smaller α or tolerance never gives a smaller λ); λ of the
        canonical ladder that matches the rungs (:meth:`ladder_index`), or the largest over them.

        Args:
            n_arms: the number of configurations `K` of the study, `≥ 1`; `None`: open-ended (the smallest fitted
                `K`).
            alpha: the all-rung miss rate, in `(0, 1)` and at least the smallest of :attr:`alphas`.
            tolerance: the relative tolerance, `0 ≤ tolerance < 1` (0: only the best run counts).
            fractions: the study's rungs as fractions of training (below the top); `None`: the most conservative
                canonical ladder.
            offset: `offset` of the map `(score − offset) / scale` from the study's scores to the family's units
                (see :class:`CurveBound`), finite.
            scale: `scale` of that map, finite and > 0.
        """
        alpha = check_fraction("alpha", alpha)
        if not 0 <= float(tolerance) < 1:
            raise ValueError(f"tolerance = {tolerance!r} is out of range; accepted: 0 <= tolerance < 1")
        if n_arms is None:
            k = 0
        else:
            n = check_int("n_arms", n_arms, 1)
            k = max([i for i, K in enumerate(self.n_arms) if K <= n], default=0)
        a = [i for i, x in enumerate(self.alphas) if x <= alpha + 1e-12]
        if not a:
            raise ValueError(
                f"alpha = {alpha} is below the smallest miss rate this bound was calibrated for "
                f"({min(self.alphas)}); accepted: alpha >= {min(self.alphas)}"
            )
        ai = max(a, key=lambda i: self.alphas[i])
        t = [i for i, x in enumerate(self.tolerances) if x <= float(tolerance) + 1e-12]
        ti = max(t, key=lambda i: self.tolerances[i]) if t else 0
        li = self.ladder_index(fractions)
        lam = float(self.lam[k, :, ai, ti].max() if li < 0 else self.lam[k, li, ai, ti])
        ev = None if self.evidence is None else select_evidence(self.evidence, k, li, ai, ti, lam)
        return CurveBound(
            family=self.family,
            form=self.form,
            ideal=None if self.ideal is None else float(self.ideal),
            n_arms=self.n_arms[k],
            alpha=self.alphas[ai],
            tolerance=self.tolerances[ti],
            grid=self.grid.copy(),
            grid_first=self.grid_first.copy(),
            hi=self.hi[k].copy(),
            med=self.med[k].copy(),
            hi_first=self.hi_first[k].copy(),
            med_first=self.med_first[k].copy(),
            lam=lam,
            w_min=float(self.w_min),
            slope_clip=float(self.slope_clip),
            source=(
                f"mf-sched curve bound '{self.family}' (best of {self.n_arms[k]}, all-rung miss rate "
                f"{self.alphas[ai]:g}, tolerance {self.tolerances[ti]:g}; {self.provenance.get('summary', '')})"
            ).replace("; )", ")"),
            offset=float(offset),
            scale=float(scale),
            evidence=ev,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            **({} if self.evidence is None else {"evidence": dict(self.evidence)}),
            "family": self.family,
            "form": self.form,
            "ideal": self.ideal,
            "n_arms": list(self.n_arms),
            "tau": float(self.tau),
            "grid": self.grid.tolist(),
            "grid_first": self.grid_first.tolist(),
            "features": list(FEATURES),
            "features_first": list(FEATURES_FIRST),
            "hi": np.round(self.hi, 8).tolist(),
            "med": np.round(self.med, 8).tolist(),
            "hi_first": np.round(self.hi_first, 8).tolist(),
            "med_first": np.round(self.med_first, 8).tolist(),
            "alphas": list(self.alphas),
            "tolerances": list(self.tolerances),
            "lam": np.round(self.lam, 6).tolist(),
            "w_min": float(self.w_min),
            "slope_clip": float(self.slope_clip),
            "ladders": [list(lad) for lad in self.ladders],
            "provenance": dict(self.provenance),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CurveBoundFit:
        """Rebuild from :meth:`to_dict` (every field validated; a file naming other features is refused).

        Args:
            d: a mapping as written by :meth:`to_dict` (the package data holds one per family).
        """
        if not isinstance(d, Mapping):
            raise ValueError("a curve bound must be a mapping")
        need = ("family", "form", "n_arms", "tau", "grid", "grid_first", "hi", "med", "hi_first", "med_first",
                "alphas", "tolerances", "lam", "w_min", "slope_clip", "ladders")  # fmt: skip
        missing = [k for k in need if k not in d]
        if missing:
            raise ValueError(f"a curve bound needs the fields {missing}")
        if list(d.get("features", FEATURES)) != list(FEATURES) or list(d.get("features_first", FEATURES_FIRST)) != list(
            FEATURES_FIRST
        ):
            raise ValueError(f"this curve bound uses other features than {list(FEATURES)} (another version?)")
        prov = d.get("provenance") or {}
        if not isinstance(prov, Mapping):
            raise ValueError("provenance must be a mapping")
        try:
            return cls(
                family=str(d["family"]),
                form=str(d["form"]),
                ideal=None if d.get("ideal") is None else float(d["ideal"]),
                n_arms=tuple(d["n_arms"]),
                tau=float(d["tau"]),
                grid=np.asarray(d["grid"], dtype=float),
                grid_first=np.asarray(d["grid_first"], dtype=float),
                hi=np.asarray(d["hi"], dtype=float),
                med=np.asarray(d["med"], dtype=float),
                hi_first=np.asarray(d["hi_first"], dtype=float),
                med_first=np.asarray(d["med_first"], dtype=float),
                alphas=tuple(d["alphas"]),
                tolerances=tuple(d["tolerances"]),
                lam=np.asarray(d["lam"], dtype=float),
                w_min=float(d["w_min"]),
                slope_clip=float(d["slope_clip"]),
                ladders=tuple(tuple(lad) for lad in d["ladders"]),
                provenance=dict(prov),
                evidence=d.get("evidence"),
            )
        except (TypeError, ValueError) as e:
            raise ValueError(f"malformed curve bound: {e}") from None


@dataclass(frozen=True)
class CurveBound:
    """The curve-aware bound of one study (see the module docstring): `ĝ(x) = q_hi(x) + λ · width(x)`.

    Build it with :meth:`CurveBoundFit.select` (or :func:`shipped_curve_bound`); its methods are vectorised
    over runs. Scores are maximised (adapters negate losses); `ideal` is in that orientation.

    Attributes:
        family: see :class:`CurveBoundFit`.
        form: see :class:`CurveBoundFit`.
        ideal: see :class:`CurveBoundFit`.
        n_arms: the study size it was selected for.
        alpha: the all-rung miss rate it was selected for.
        tolerance: the relative tolerance it was selected for.
        grid: see :class:`CurveBoundFit`; here for one `K`.
        grid_first: see :class:`CurveBoundFit`; here for one `K`.
        hi: see :class:`CurveBoundFit`; here for one `K`: `[grid point][feature]`.
        med: see :class:`CurveBoundFit`; here for one `K`: `[grid point][feature]`.
        hi_first: see :class:`CurveBoundFit`; here for one `K`: `[grid point][feature]`.
        med_first: see :class:`CurveBoundFit`; here for one `K`: `[grid point][feature]`.
        lam: the conformal multiplier λ (raised by :meth:`raised` when a study's own curve exceeds the bound).
        w_min: see :class:`CurveBoundFit`.
        slope_clip: see :class:`CurveBoundFit`.
        source: where it comes from (shown in certificates).
        raised_by: the runs of the study whose curves exceeded the bound and raised λ (empty: none).
        offset: `offset` of the map `(score − offset) / scale` (an accuracy: 0; a percentage: 0; an error rate,
            minimised: −1, so that `1 − error` reads like an accuracy; a percent error: −100).
        scale: `scale` of the map (an accuracy: 1; a percentage: 100; an error rate: 1; a percent error: 100).
        evidence: λ given the study's own finished curves (:mod:`mf_sched.racing.evidence`; the racing engine sets
            :attr:`lam` from it); `None`: the prior λ, raised only where a finished curve exceeds it.
    """

    family: str
    form: str
    ideal: float | None
    n_arms: int
    alpha: float
    tolerance: float
    grid: np.ndarray
    grid_first: np.ndarray
    hi: np.ndarray
    med: np.ndarray
    hi_first: np.ndarray
    med_first: np.ndarray
    lam: float
    w_min: float
    slope_clip: float
    source: str = ""
    raised_by: tuple[Any, ...] = ()
    offset: float = 0.0
    scale: float = 1.0
    evidence: EvidenceModel | None = None

    def without_evidence(self) -> CurveBound:
        """A copy at the prior λ that does not learn from the study's curves (the behaviour before 0.2)."""
        lam = self.lam if self.evidence is None else self.evidence.prior_lam
        return dataclasses.replace(self, evidence=None, lam=lam, raised_by=())

    def __post_init__(self) -> None:
        if not (math.isfinite(self.offset) and math.isfinite(self.scale) and self.scale > 0):
            raise ValueError(f"offset = {self.offset!r} and scale = {self.scale!r} must be finite, scale > 0")
        for name, n, g in (("hi", 3, "grid"), ("med", 3, "grid"), ("hi_first", 2, "grid_first"),
                           ("med_first", 2, "grid_first")):  # fmt: skip
            a, grid = np.asarray(getattr(self, name), dtype=float), np.asarray(getattr(self, g), dtype=float)
            if grid.ndim != 1 or grid.size == 0 or a.shape != (grid.size, n):
                raise ValueError(f"{name} must have one row of {n} coefficients per {g} point, got {a.shape}")
        # plain-Python copies for the one-run path (:meth:`gain_one`: a tell must cost microseconds)
        py = (
            [math.log(x) for x in np.asarray(self.grid).tolist()],
            np.asarray(self.hi).tolist(),
            np.asarray(self.med).tolist(),
            [math.log(x) for x in np.asarray(self.grid_first).tolist()],
            np.asarray(self.hi_first).tolist(),
            np.asarray(self.med_first).tolist(),
        )
        object.__setattr__(self, "_py", py)

    def gain_one(self, value: float, prev: float, frac: float, prev_frac: float) -> tuple[float, float]:
        """`(gain, typical)` of one run (plain floats) — the same numbers as :meth:`gain` and :meth:`typical`,
        without NumPy's per-call overhead.

        Args:
            value: the run's score (maximised, in the study's units) at the rung.
            prev: its score at the previous rung; NaN for the run's first rung.
            frac: the fraction of training of the rung, in `(0, 1]`.
            prev_frac: the fraction of training of the previous rung (NaN, or not below `frac`: read as a first
                rung).
        """
        lg, hi, med, lg0, hi0, med0 = self._py  # type: ignore[attr-defined]
        value, prev = (value - self.offset) / self.scale, (prev - self.offset) / self.scale
        lf = math.log(frac)
        if lf < lg0[0] - 1e-9:
            return math.inf, 0.0
        if self.form == "absolute":
            level, scale = value, 1.0
        else:
            scale = max(float(self.ideal) - value, _TINY)  # type: ignore[arg-type]
            level = math.log(scale)
        has = prev == prev and prev_frac == prev_frac and prev_frac < frac and lf >= lg[0] - 1e-9
        if has:
            sl = (value - prev) / (lf - math.log(prev_frac)) / scale
            sl = min(max(sl, -self.slope_clip), self.slope_clip)
            x, grid, ch, cm = (1.0, level, sl), lg, hi, med
        else:
            x, grid, ch, cm = (1.0, level), lg0, hi0, med0
        q = []
        for coef in (ch, cm):
            if len(grid) == 1 or lf <= grid[0]:
                c = coef[0]
            elif lf >= grid[-1]:
                c = coef[-1]
            else:
                j = 0
                while grid[j + 1] < lf:
                    j += 1
                t = (lf - grid[j]) / (grid[j + 1] - grid[j])
                c = [a * (1 - t) + b * t for a, b in zip(coef[j], coef[j + 1])]
            q.append(sum(a * b for a, b in zip(x, c)))
        up = q[0] + self.lam * max(q[0] - q[1], self.w_min)
        typ = q[1]
        if self.form == "relative":
            room = max(float(self.ideal) - value, 0.0)  # type: ignore[arg-type]
            up, typ = min(max(up, 0.0), 1.0) * room, min(max(typ, 0.0), 1.0) * room
        return max(up, 0.0) * self.scale, typ * self.scale

    def _quantiles(self, value: Any, prev: Any, frac: Any, prev_frac: Any) -> tuple[np.ndarray, np.ndarray]:
        value = (np.asarray(value, dtype=float) - self.offset) / self.scale
        prev = (np.asarray(prev, dtype=float) - self.offset) / self.scale
        X, has = design(value, prev, frac, prev_frac, form=self.form, ideal=self.ideal, slope_clip=self.slope_clip)
        n0 = len(FEATURES_FIRST)
        fa = np.asarray(frac, dtype=float)
        f = np.broadcast_to(fa, has.shape)
        has = has & (f >= self.grid[0] * (1 - 1e-9))  # before the first slope model: read without the slope
        X0 = X[..., :n0]

        def coef(grid: np.ndarray, c: np.ndarray) -> np.ndarray:
            # interpolated at the fractions as given (typically one per rung), then broadcast over the runs: the
            # same numbers as interpolating every run's copy, without the per-run work
            return np.broadcast_to(_interp_coef(grid, c, fa), (*has.shape, c.shape[1]))

        hi = np.where(
            has,
            np.einsum("...j,...j->...", X, coef(self.grid, self.hi)),
            np.einsum("...j,...j->...", X0, coef(self.grid_first, self.hi_first)),
        )
        med = np.where(
            has,
            np.einsum("...j,...j->...", X, coef(self.grid, self.med)),
            np.einsum("...j,...j->...", X0, coef(self.grid_first, self.med_first)),
        )
        return hi, med

    def _to_metric(self, q: np.ndarray, value: Any) -> np.ndarray:
        if self.form == "absolute":
            return q * self.scale
        x = (np.asarray(value, dtype=float) - self.offset) / self.scale
        room = np.maximum(float(self.ideal) - x, 0.0)  # type: ignore[arg-type]
        return np.clip(q, 0.0, 1.0) * room * self.scale

    def gain(self, value: Any, prev: Any, frac: Any, prev_frac: Any) -> Any:
        """The bound on the improvement still to come after a rung at fraction `frac` of training, for a run
        with `value` there and `prev` at `prev_frac`; in metric units, `≥ 0`. `inf` (no bound: nothing is
        stopped there) at a fraction earlier than every fitted one.

        Args:
            value: the runs' scores (maximised, in the study's units) at the rung; a number or an array, broadcast
                with the others.
            prev: their scores at the previous rung; NaN for a run's first rung.
            frac: the fraction of training of the rung, in `(0, 1]`.
            prev_frac: the fraction of training of the previous rung (NaN, or not below `frac`: read as a first
                rung).
        """
        hi, med = self._quantiles(value, prev, frac, prev_frac)
        q = hi + self.lam * np.maximum(hi - med, self.w_min)
        out = np.maximum(self._to_metric(q, value), 0.0)
        out = np.where(np.asarray(frac, dtype=float) < self.grid_first[0] * (1 - 1e-9), np.inf, out)
        return float(out) if np.ndim(out) == 0 else out

    def typical(self, value: Any, prev: Any, frac: Any, prev_frac: Any) -> Any:
        """The median improvement still to come (`q_med`), in metric units — for estimates and the promotion
        order, never for a decision with a guarantee.

        Args:
            value: the runs' scores (maximised, in the study's units) at the rung; a number or an array, broadcast
                with the others.
            prev: their scores at the previous rung; NaN for a run's first rung.
            frac: the fraction of training of the rung, in `(0, 1]`.
            prev_frac: the fraction of training of the previous rung (NaN, or not below `frac`: read as a first
                rung).
        """
        _, med = self._quantiles(value, prev, frac, prev_frac)
        out = self._to_metric(med, value)
        return float(out) if np.ndim(out) == 0 else out

    def score(self, value: Any, prev: Any, frac: Any, prev_frac: Any, final: Any) -> Any:
        """The conformal score of an observed improvement: `(target − q_hi) / width` where the target is
        `final − value` (relative form: that over `ideal − value`, capped to [0, 1]). A run's curve exceeds
        the bound at a rung exactly when its score there is above :attr:`lam`.

        Args:
            value: the runs' scores (maximised, in the study's units) at the rung; a number or an array, broadcast
                with the others.
            prev: their scores at the previous rung; NaN for a run's first rung.
            frac: the fraction of training of the rung, in `(0, 1]`.
            prev_frac: the fraction of training of the previous rung (NaN, or not below `frac`: read as a first
                rung).
            final: the runs' observed final scores (at the top fidelity, the study's units).
        """
        hi, med = self._quantiles(value, prev, frac, prev_frac)
        v = (np.asarray(value, dtype=float) - self.offset) / self.scale
        g = (np.asarray(final, dtype=float) - self.offset) / self.scale - v
        if self.form == "relative":
            room = np.maximum(float(self.ideal) - v, _TINY)  # type: ignore[arg-type]
            g = np.clip(g / room, 0.0, 1.0)
        out = (g - hi) / np.maximum(hi - med, self.w_min)
        return float(out) if np.ndim(out) == 0 else out

    def raised(self, lam: float, by: Sequence[Any]) -> CurveBound:
        """A copy with λ raised to `lam` (never lowered) because the runs `by` exceeded the bound.

        Args:
            lam: the new multiplier λ; a value not above the current one returns the bound unchanged.
            by: the runs (e.g. trial numbers) whose curves exceeded the bound; added to :attr:`raised_by` (each once).
        """
        if not lam > self.lam:
            return self
        return dataclasses.replace(self, lam=float(lam), raised_by=tuple(dict.fromkeys((*self.raised_by, *by))))

    def to_dict(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "form": self.form,
            "ideal": self.ideal,
            "n_arms": self.n_arms,
            "alpha": self.alpha,
            "tolerance": self.tolerance,
            "grid": self.grid.tolist(),
            "grid_first": self.grid_first.tolist(),
            "hi": self.hi.tolist(),
            "med": self.med.tolist(),
            "hi_first": self.hi_first.tolist(),
            "med_first": self.med_first.tolist(),
            "lam": self.lam,
            "w_min": self.w_min,
            "slope_clip": self.slope_clip,
            "source": self.source,
            "raised_by": list(self.raised_by),
            "offset": self.offset,
            "scale": self.scale,
            **({} if self.evidence is None else {"evidence": self.evidence.to_dict()}),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CurveBound:
        """Rebuild from :meth:`to_dict` (validated).

        Args:
            d: a mapping as written by :meth:`to_dict` (e.g. a study's saved race state).
        """
        if not isinstance(d, Mapping):
            raise ValueError("a curve bound must be a mapping")
        try:
            out = cls(
                family=str(d["family"]),
                form=str(d["form"]),
                ideal=None if d.get("ideal") is None else float(d["ideal"]),
                n_arms=int(d["n_arms"]),
                alpha=float(d["alpha"]),
                tolerance=float(d["tolerance"]),
                grid=_floats("grid", d["grid"]),
                grid_first=_floats("grid_first", d["grid_first"]),
                hi=_floats("hi", d["hi"], len(FEATURES)),
                med=_floats("med", d["med"], len(FEATURES)),
                hi_first=_floats("hi_first", d["hi_first"], len(FEATURES_FIRST)),
                med_first=_floats("med_first", d["med_first"], len(FEATURES_FIRST)),
                lam=float(d["lam"]),
                w_min=float(d["w_min"]),
                slope_clip=float(d["slope_clip"]),
                source=str(d.get("source", "")),
                raised_by=tuple(d.get("raised_by", ())),
                offset=float(d.get("offset", 0.0)),
                scale=float(d.get("scale", 1.0)),
                evidence=None if d.get("evidence") is None else EvidenceModel.from_dict(d["evidence"]),
            )
        except (KeyError, TypeError) as e:
            raise ValueError(f"malformed curve bound: {e!r}") from None
        if out.form not in ("absolute", "relative") or (out.form == "relative" and out.ideal is None):
            raise ValueError("malformed curve bound: form must be 'absolute', or 'relative' with an ideal")
        if not (math.isfinite(out.lam) and out.w_min > 0 and out.slope_clip > 0):
            raise ValueError("malformed curve bound: lam must be finite, w_min and slope_clip > 0")
        return out


# ------------------------------------------------------------------------------------------ shipped models
_FILE = "curve_bound.json"


@lru_cache(maxsize=1)
def _shipped() -> dict[str, CurveBoundFit]:
    text = resources.files("mf_sched").joinpath("data", _FILE).read_text(encoding="utf-8")
    d = json.loads(text)
    if not isinstance(d, dict) or d.get("format") != FORMAT or not isinstance(d.get("families"), dict):
        raise ValueError(f"mf_sched/data/{_FILE} is malformed: format {FORMAT!r} with a 'families' mapping expected")
    return {name: CurveBoundFit.from_dict(fam) for name, fam in d["families"].items()}


def curve_bound_families() -> dict[str, str]:
    """The metric families the shipped curve bounds cover, with the sources they were fitted on."""
    return {k: str(v.provenance.get("summary", "")) for k, v in _shipped().items()}


def shipped_curve_bound(family: str) -> CurveBoundFit:
    """The curve bound shipped with mf-sched for a metric `family` (`"unit"`: metrics in [0, 1], absolute;
    `"loss"`: non-negative losses, relative to the ideal 0), made by `python -m benchmarks.curve_bound`
    from LCBench, TaskSet, DeepOBS and AlgoPerf curves; its provenance (sources, tasks, held-out coverage per
    task and per left-out source) is in `provenance`.

    Args:
        family: the metric family, one of :func:`curve_bound_families` (`"unit"` or `"loss"`).

    >>> sorted(curve_bound_families())
    ['loss', 'unit']
    """
    fams = _shipped()
    if family not in fams:
        raise ValueError(f"family = {family!r} has no shipped curve bound; accepted: {', '.join(sorted(fams))}")
    return fams[family]
