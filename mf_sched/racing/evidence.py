"""The study's own evidence about its bound: λ learned from this study's finished curves, with the shipped bound
as the prior.

The curve-aware bound (:mod:`mf_sched.racing.curve_bound`) is `ĝ(x) = q_hi(x) + λ · width(x)`, and the shipped `λ`
is one conformal step over the *calibration tasks*: it holds where the user's task resembles them, and it must be
wide enough for the most irregular of them, so on regular tasks it saves little. This module makes `λ` a function
of what *this* study has seen: the runs it trained to the top carry their whole curve, so their conformal scores
(:meth:`~mf_sched.racing.curve_bound.CurveBound.score`, the largest normalised exceedance over the rungs) say how
this task's good runs improve after the cheap rungs compared with the calibration tasks.

**The statistic.** With `n` runs at the top, take the `n'` of them with the best values at the last rung below the
top (`n'` the largest of :data:`EVIDENCE_N` not above `n`) and let `T` be the mean of their scores. These are
survivors, not a random sample — which is why `T` is computed the same way in calibration: for every random
`K`-subset of a calibration task, the `n'` configurations with the best values at the ladder's last rung below the
top (the ones a race promotes and finishes), scored by models fitted without that task (cross-conformal, as for
`λ` itself).

**The bound given the evidence** (conformal prediction with a covariate; the exchangeable unit is the task, as for
the prior λ). For each `n'` the calibration gives pairs `(T, S)` per task and draw, `S` the study's score (the
smallest score among the configurations within `tolerance` of the subset's best, whose exceedance of `λ` is the
miss event, :func:`mf_sched.racing.fit.fit_curve_bound`). With `λ(T) = β · max(T, t_lo) + q_β`, `q_β` is the
`(1 − α)(1 + 1/n_tasks)` pooled quantile of `S − β · max(T, t_lo)` over the calibration tasks (each task weighing
the same: Dunn, Wasserman, Ramdas 2022, JASA, §3), so `P(S > λ(T)) ≤ α` over tasks exchangeable with the
calibration tasks, *given nothing about the task* — the same guarantee as the prior λ, now with a `λ` that is
smaller where this study's curves are regular (losses save) and larger where they are not (a new kind of task stays
covered). `β` is chosen from :data:`BETAS` to minimise the mean `λ(T)` over the calibration draws; `β = 0` is the
prior λ, so the choice never makes the average bound wider. `t_lo` (the 1% pooled quantile of `T`) keeps `λ` from
extrapolating below what calibration saw.

**Unlike the calibration tasks.** `t_hi` is the 99% pooled quantile of `T` over the calibration studies. A study
whose `T` is above it has finished runs that improved after the cheap rungs more than 99% of the calibration studies'
did: its `λ` still widens (the formula extrapolates upwards, which only stops fewer runs), but the certificate says
*not certified — this task's curves are unlike the calibration tasks* (:mod:`mf_sched.racing.certificate`).

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> T = rng.normal(0, 1, (20, 50))                  # 20 tasks × 50 draws of the statistic
    >>> S = T + rng.normal(0, 0.3, T.shape)              # the study scores follow it
    >>> m = fit_evidence_table([s for s in S], [t for t in T], alpha=0.1)
    >>> bool(m["beta"] > 0 and m["q"] < np.quantile(S, 0.95))
    True
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "BETAS",
    "EVIDENCE_N",
    "Evidence",
    "EvidenceModel",
    "fit_evidence_table",
    "pooled_quantile",
    "study_statistic",
]

#: how many runs at the top the statistic averages (a study uses the largest not above its count)
EVIDENCE_N: tuple[int, ...] = (1, 2, 3, 5, 8, 13, 21)
#: the slopes `β` of `λ(T) = β · T + q_β` tried in calibration (0: the prior λ)
BETAS: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0)
#: the pooled quantile levels of `T` that bound the calibrated range (`t_lo`) and flag a study as unlike it (`t_hi`)
T_LO_LEVEL, T_HI_LEVEL = 0.01, 0.99


def pooled_quantile(per_task: Sequence[np.ndarray], level: float) -> float:
    """The `level`-quantile (inverted CDF) of the mixture of the tasks' samples, each task weighing the same (the
    pooled-CDF form of two-layer conformal prediction; the prior λ and the evidence table both use it).

    Args:
        per_task: one array of samples per task.
        level: the quantile level, in `[0, 1]`.
    """
    vals = np.concatenate([np.asarray(a, dtype=float).ravel() for a in per_task])
    w = np.concatenate([np.full(np.size(a), 1.0 / (np.size(a) * len(per_task))) for a in per_task])
    o = np.argsort(vals, kind="stable")
    cw = np.cumsum(w[o])
    i = min(int(np.searchsorted(cw, level - 1e-12)), vals.size - 1)
    return float(vals[o][i])


def fit_evidence_table(
    study_scores: Sequence[np.ndarray], statistics: Sequence[np.ndarray], *, alpha: float
) -> dict[str, float]:
    """`β`, `q_β`, `t_lo` and `t_hi` of one (study size, ladder, α, tolerance, `n'`) cell (see the module docstring).

    Args:
        study_scores: per calibration task, the study scores `S` of its random subsets (one per draw).
        statistics: per task, the statistic `T` of the same draws (same shapes).
        alpha: the all-rung miss rate, in `(0, 1)`.
    """
    n = len(study_scores)
    if n == 0 or n != len(statistics):
        raise ValueError("study_scores and statistics need one array per task, the same tasks")
    level = min(1.0, (1 - alpha) * (1 + 1 / n))
    t_lo = pooled_quantile(statistics, T_LO_LEVEL)
    t_hi = pooled_quantile(statistics, T_HI_LEVEL)
    tc = [np.maximum(np.asarray(t, dtype=float), t_lo) for t in statistics]
    mean_t = float(np.mean([float(np.mean(t)) for t in tc]))
    best: tuple[float, float, float] | None = None
    for b in BETAS:
        q = pooled_quantile([np.asarray(s, dtype=float) - b * t for s, t in zip(study_scores, tc)], level)
        if not math.isfinite(q):
            continue
        avg = q + b * mean_t
        if best is None or avg < best[0] - 1e-12:
            best = (avg, b, q)
    if best is None:  # every residual infinite: no evidence model (the prior λ stands)
        return {"beta": 0.0, "q": math.inf, "t_lo": t_lo, "t_hi": t_hi}
    return {"beta": best[1], "q": best[2], "t_lo": t_lo, "t_hi": t_hi}


def study_statistic(scores: np.ndarray, last: np.ndarray, n: int) -> float:
    """`T`: the mean score of the `n` runs with the best values at the last rung below the top (ties: the order
    given).

    Args:
        scores: the runs' conformal scores (largest normalised exceedance over their rungs).
        last: their values at the last rung below the top (maximised).
        n: how many to average, `≥ 1` (all of them when fewer).
    """
    s = np.asarray(scores, dtype=float)
    v = np.asarray(last, dtype=float)
    o = np.argsort(-np.where(np.isnan(v), -np.inf, v), kind="stable")[: max(1, int(n))]
    return float(np.mean(s[o]))


@dataclass(frozen=True)
class Evidence:
    """What a study's finished runs say about its bound.

    Attributes:
        n: runs at the top whose curves were read.
        used: how many of them the statistic averages (`n'`, 0 when none).
        statistic: `T`, the mean score of those (NaN when none).
        lam: the λ the evidence gives (the prior λ when none).
        prior_lam: the shipped (prior) λ.
        t_hi: the 99% calibration quantile of `T` for `n'` runs.
        unlike: `T > t_hi`: this study's curves are unlike the calibration tasks'.
        exceeded_by: good finished runs (within the tolerance of the best final value) whose score is above the λ
            the evidence gives: their curves contradict the bound (`lam` is then raised to cover them).
    """

    n: int
    used: int
    statistic: float
    lam: float
    prior_lam: float
    t_hi: float
    unlike: bool
    exceeded_by: tuple[Any, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe (NaN as None)."""
        st = None if math.isnan(self.statistic) else round(self.statistic, 6)
        th = None if not math.isfinite(self.t_hi) else round(self.t_hi, 6)
        return {"n": self.n, "used": self.used, "statistic": st, "lam": round(self.lam, 6),
                "prior_lam": round(self.prior_lam, 6), "t_hi": th, "unlike": self.unlike,
                "exceeded_by": list(self.exceeded_by)}  # fmt: skip


@dataclass(frozen=True)
class EvidenceModel:
    """The evidence model of one study's bound (one study size, ladder, α and tolerance): per `n'` in `n`, `λ(T) =
    beta · max(T, t_lo) + q`, and `t_hi` (see the module docstring).

    Attributes:
        prior_lam: the prior (shipped) λ, used until a run reaches the top.
        n: the numbers of runs the statistic may average (increasing).
        beta: the slope per `n'`.
        q: the intercept per `n'` (inf: no model for that `n'`: the prior λ).
        t_lo: the lowest `T` calibration supports, per `n'`.
        t_hi: above it the study is unlike the calibration tasks, per `n'`.
    """

    prior_lam: float
    n: tuple[int, ...]
    beta: tuple[float, ...]
    q: tuple[float, ...]
    t_lo: tuple[float, ...]
    t_hi: tuple[float, ...]

    def __post_init__(self) -> None:
        k = len(self.n)
        if k == 0 or any(len(getattr(self, f)) != k for f in ("beta", "q", "t_lo", "t_hi")):
            raise ValueError("an evidence model needs n, beta, q, t_lo and t_hi of the same non-zero length")
        if list(self.n) != sorted(set(self.n)) or self.n[0] < 1:
            raise ValueError(f"n = {list(self.n)} must be increasing integers >= 1")
        if not math.isfinite(self.prior_lam) or any(not math.isfinite(b) or b < 0 for b in self.beta):
            raise ValueError("prior_lam must be finite and every beta finite and >= 0")

    def lam(self, statistic: float, n: int) -> tuple[float, int, float]:
        """`(λ, n', t_hi)` for a study whose `n` runs at the top give the statistic `T` (computed over `n'`): the prior
        λ (with `n' = 0`) when `n = 0` or when calibration has no model for `n'`.

        Args:
            statistic: `T` over the `n'` runs (:meth:`used`).
            n: the runs at the top, `≥ 0`.
        """
        i = self.index(n)
        if i < 0 or not math.isfinite(self.q[i]) or math.isnan(statistic):
            return self.prior_lam, 0, math.inf
        t = max(float(statistic), self.t_lo[i])
        return self.beta[i] * t + self.q[i], self.n[i], self.t_hi[i]

    def index(self, n: int) -> int:
        """The position in :attr:`n` of the largest count not above `n` (−1: none).

        Args:
            n: the runs at the top.
        """
        return max((i for i, k in enumerate(self.n) if k <= n), default=-1)

    def used(self, n: int) -> int:
        """How many of `n` runs at the top the statistic averages (0: none).

        Args:
            n: the runs at the top.
        """
        i = self.index(n)
        return 0 if i < 0 else self.n[i]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe (an infinite `q` or `t_hi` as None)."""

        def f(x: Sequence[float]) -> list[float | None]:
            return [round(float(v), 6) if math.isfinite(v) else None for v in x]

        return {"prior_lam": self.prior_lam, "n": list(self.n), "beta": f(self.beta), "q": f(self.q),
                "t_lo": f(self.t_lo), "t_hi": f(self.t_hi)}  # fmt: skip

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> EvidenceModel:
        """Rebuild from :meth:`to_dict` (validated).

        Args:
            d: a mapping as written by :meth:`to_dict`.
        """
        if not isinstance(d, Mapping):
            raise ValueError("an evidence model must be a mapping")
        try:

            def f(key: str, missing: float) -> tuple[float, ...]:
                return tuple(missing if v is None else float(v) for v in d[key])

            return cls(prior_lam=float(d["prior_lam"]), n=tuple(int(x) for x in d["n"]), beta=f("beta", 0.0),
                       q=f("q", math.inf), t_lo=f("t_lo", -math.inf), t_hi=f("t_hi", math.inf))  # fmt: skip
        except (KeyError, TypeError) as e:
            raise ValueError(f"malformed evidence model: {e!r}") from None


def select_evidence(table: Mapping[str, Any], k: int, ladder: int, a: int, t: int, prior_lam: float) -> EvidenceModel:
    """The evidence model of one cell of a fit's evidence table (:func:`mf_sched.racing.fit.fit_curve_bound`):
    `table["beta"][k][ladder][a][t][n]`, `table["t_hi"][k][ladder][n]`; `ladder < 0` (no canonical ladder matches
    the study's rungs): no tightening (the prior λ) and the smallest `t_hi` over the ladders.

    Args:
        table: the fit's evidence table (:attr:`~mf_sched.racing.curve_bound.CurveBoundFit.evidence`).
        k: the index of the study size.
        ladder: the index of the canonical ladder, or −1.
        a: the index of α.
        t: the index of the tolerance.
        prior_lam: the prior λ of the same cell.
    """
    beta = np.nan_to_num(np.asarray(table["beta"], dtype=float)[k], nan=0.0)  # None (JSON) reads as NaN
    q = np.nan_to_num(np.asarray(table["q"], dtype=float)[k], nan=math.inf)
    t_lo = np.nan_to_num(np.asarray(table["t_lo"], dtype=float)[k], nan=-math.inf)
    t_hi = np.nan_to_num(np.asarray(table["t_hi"], dtype=float)[k], nan=math.inf)
    if ladder >= 0:
        b, qq, lo, hi = beta[ladder, a, t], q[ladder, a, t], t_lo[ladder], t_hi[ladder]
    else:  # no canonical ladder fits: no evidence-based tightening (β = 0, the prior λ), only the 'unlike' flag
        b = np.zeros(beta.shape[-1])
        qq = np.full(beta.shape[-1], math.inf)
        lo, hi = t_lo.min(axis=0), t_hi.min(axis=0)
    return EvidenceModel(prior_lam=float(prior_lam), n=tuple(int(x) for x in table["n"]),
                         beta=tuple(b.tolist()), q=tuple(qq.tolist()), t_lo=tuple(lo.tolist()),
                         t_hi=tuple(hi.tolist()))  # fmt: skip
