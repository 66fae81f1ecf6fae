"""Fitting the curve-aware bound (:mod:`mf_sched.racing.curve_bound`) on learning curves of many tasks.

Input: per task, the *observed* curves of its configurations at a common set of fractions of training (one
observed run per configuration, seed noise included; :func:`observed_runs` reads them from
:class:`~mf_sched.curves.learning_curves.LearningCurves`). Steps, for every study size `K` in `n_arms`:

1. **Whose curve.** Every configuration of a task is weighted by its probability of being the best of a
   uniformly random `K`-subset by observed final value, `C(j − 1, K − 1) / C(n, K)` for the `j`-th
   smallest of `n` (:func:`best_of_k_weights`), and `per_task` configurations are drawn with these
   probabilities (importance resampling, so the linear programs stay small); every task weighs the same.
2. **Two linear quantile models** of the improvement after a rung, at levels `tau` and 0.5, over the rungs of
   a few canonical ladders (geometric, reduction factor 3, first rung at 1.2–4% of training), with and
   without a previous rung. The check-loss minimisation is the linear program of Koenker & Bassett 1978
   (*Econometrica* 46(1), "Regression quantiles"), solved by SciPy's HiGHS (`scipy.optimize.linprog`):
   exact, deterministic, and it keeps the core to numpy + scipy (scikit-learn's `QuantileRegressor` solves
   the same program with the same solver; gradient-boosted quantiles would need a model format the core
   cannot evaluate in microseconds).
3. **One conformal step over tasks, jointly over the rungs of a ladder.** A configuration's score is the
   largest normalised exceedance over the rungs of a ladder, computed with models fitted *without* its task
   (the tasks are split into `cv_folds` groups: cross-conformal, Vovk 2015, *Annals of Mathematics and
   Artificial Intelligence* 74; in-sample residuals would make λ too small), `max_m (g(m) − q_hi(m)) /
   width(m)`. The miss event of one study (a random `K`-subset of a task) is that *every* configuration
   within `tolerance` of the subset's best final value has a score above λ; its score is the smallest score
   among those good configurations. λ is the `(1 − α)(1 + 1/n)`-quantile of these study scores pooled over
   the `n` tasks (each task weighing `1/n`; the pooled-CDF form of two-layer conformal prediction, Dunn, Wasserman,
   Ramdas 2022, JASA, §3), per canonical ladder (a study uses the one that matches its rungs,
   :meth:`~mf_sched.racing.curve_bound.CurveBoundFit.select`). Computed on a grid of `alphas` and
   `tolerances`.

:func:`miss_rate` measures the all-rung miss rate of a fitted bound on held-out tasks (the acceptance test:
leave-task-out and leave-source-out, `benchmarks/curve_bound.py`).

Example:
    >>> rng = np.random.default_rng(0)
    >>> fr = np.array([1 / 81, 1 / 27, 1 / 9, 1 / 3, 1.0])
    >>> def task(n=120):                           # accuracy-like curves: final value, speed, seed noise
    ...     final, speed = rng.uniform(0.5, 0.9, n), rng.uniform(0.3, 3.0, n)
    ...     return final[:, None] * (1 - np.exp(-fr[None] * 12 * speed[:, None])) + rng.normal(0, 0.01, (n, 5))
    >>> fit = fit_curve_bound({f"t{i}": task() for i in range(8)}, fr, family="toy", n_arms=(8, 24),
    ...                       ladders=[fr[:-1].tolist()])
    >>> bool(miss_rate(fit, {"new": task()}, fr, n_arms=24, alpha=0.1) <= 0.3)
    True
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import sparse
from scipy.optimize import linprog
from scipy.special import gammaln

from mf_sched._validate import check_fraction, check_int
from mf_sched.racing.curve_bound import FEATURES_FIRST, CurveBound, CurveBoundFit, design
from mf_sched.racing.evidence import EVIDENCE_N, fit_evidence_table, pooled_quantile

__all__ = [
    "LADDERS",
    "best_of_k_weights",
    "fit_curve_bound",
    "ladder_scores",
    "miss_rate",
    "observed_runs",
    "quantile_regression",
]

#: the first rungs of the canonical ladders (fractions of training): 2% (mf-sched's inferred ladder for 100
#: epochs: 2, 6, 18, 54), 1/27 (Hyperband's 1, 3, 9, 27), 6%, 1/9 (1, 3 of 9 epochs), 18% and 1/3. Earlier first
#: rungs are left out: too few sources report that early (a rung below the fitted fractions gets no bound:
#: nothing is stopped there)
FIRST_RUNGS = (0.02, 1 / 27, 0.06, 1 / 9, 0.18, 1 / 3)


def canonical_ladder(first: float, eta: float = 3.0) -> tuple[float, ...]:
    """The rungs below the top of a geometric ladder from `first`: `first · η^k` while below `1/√η` (as
    :func:`mf_sched.integrations._common.auto_resources` drops a rung within `√η` of the top).

    Args:
        first: the first rung, as a fraction of training in `(0, 1)`.
        eta: the reduction factor `η > 1` between rungs (3: Hyperband's).

    >>> [round(f, 3) for f in canonical_ladder(0.02)], [round(f, 3) for f in canonical_ladder(1 / 9)]
    ([0.02, 0.06, 0.18, 0.54], [0.111, 0.333])
    """
    out, f = [], float(first)
    while f < 1 / math.sqrt(eta) - 1e-9:
        out.append(f)
        f *= eta
    return tuple(out)


#: canonical ladders: reduction factor 3 from each of :data:`FIRST_RUNGS` — a study's rungs are calibrated by the
#: one that starts nearest its own first rung (:meth:`~mf_sched.racing.curve_bound.CurveBoundFit.ladder_index`)
LADDERS: tuple[tuple[float, ...], ...] = tuple(canonical_ladder(f) for f in FIRST_RUNGS)
#: a grid point's model, and a ladder's λ, need at least this many tasks
MIN_TASKS = 5


def best_of_k_weights(final: Any, n_arms: int) -> np.ndarray:
    """`P(configuration is the best of a uniformly random K-subset)` by `final` value (ties: by position).

    Args:
        final: the configurations' final values (maximised), one per configuration.
        n_arms: the subset size `K`, `≥ 1` (capped at the number of configurations).

    >>> best_of_k_weights([0.1, 0.3, 0.2], 2).round(3).tolist()
    [0.0, 0.667, 0.333]
    """
    f = np.asarray(final, dtype=float)
    n = f.size
    k = min(int(n_arms), n)
    j = np.empty(n)
    j[np.argsort(f, kind="stable")] = np.arange(1, n + 1)
    with np.errstate(invalid="ignore"):
        lw = (gammaln(j) - gammaln(k) - gammaln(np.maximum(j - k + 1, 1))) - (
            gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)
        )
    w = np.where(j >= k, np.exp(lw), 0.0)
    return w / w.sum()


def quantile_regression(X: np.ndarray, y: np.ndarray, tau: float, weights: np.ndarray | None = None) -> np.ndarray:
    """Weighted linear quantile regression at level `tau`: `argmin_b Σ w_i ρ_tau(y_i − X_i b)` as the linear
    program of Koenker & Bassett (1978), solved by HiGHS.

    Args:
        X: the design matrix, `(n, p)`.
        y: the responses, `(n,)`.
        tau: the quantile level, in `(0, 1)` (0.5: the median).
        weights: a weight `≥ 0` per row (rows of weight 0 are left out); `None`: equal weights.

    >>> X = np.c_[np.ones(5), np.arange(5.0)]
    >>> quantile_regression(X, 2 + 3 * np.arange(5.0), 0.5).round(6).tolist()
    [2.0, 3.0]
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    w = np.ones(y.size) if weights is None else np.asarray(weights, dtype=float)
    keep = w > 0
    X, y, w = X[keep], y[keep], w[keep] / w[keep].mean()
    n, p = X.shape
    c = np.concatenate([np.zeros(2 * p), tau * w, (1 - tau) * w])
    eye = sparse.identity(n, format="csr")
    A = sparse.hstack([sparse.csr_matrix(X), sparse.csr_matrix(-X), eye, -eye], format="csr")
    res = linprog(c, A_eq=A, b_eq=y, bounds=(0, None), method="highs")
    if not res.success:  # pragma: no cover - HiGHS solves every bounded problem of this form
        raise RuntimeError(f"quantile regression failed: {res.message}")
    return res.x[:p] - res.x[p : 2 * p]


def observed_runs(
    curves: Any, fractions: Sequence[float], *, seed: int = 0, noise: float = 0.0
) -> dict[Any, np.ndarray]:
    """Per task, one observed curve per configuration at `fractions` of training (score orientation).

    `curves` is a :class:`~mf_sched.curves.learning_curves.LearningCurves` with fidelities as fractions of each
    run (:meth:`~mf_sched.curves.learning_curves.LearningCurves.to_fraction`). Where a configuration has several
    seeds one is drawn at random (an observed run carries its seed noise); `noise` is for curves that are means,
    e.g. a surrogate's. A fraction that fewer than 90% of a task's configurations reach (a run that first reports
    at 2% has no value at 1%) is NaN for the whole task; the configurations without a value at the task's other
    fractions are left out.

    Args:
        curves: the learning curves, with fidelities as fractions of each run.
        fractions: the fractions of training to read, increasing; the last is the final value (1.0).
        seed: seeds the choice of seeds and the added noise.
        noise: the standard deviation of the Gaussian noise added to every value, `≥ 0`; 0 adds none.
    """
    rv = curves.values_at(list(fractions))
    sc = rv.score  # (configs, seeds, fractions)
    rng = np.random.default_rng(seed)
    out: dict[Any, np.ndarray] = {}
    for t, label in enumerate(curves.task_labels):
        x = sc[rv.config_task == t]
        cols = np.isfinite(x).any(axis=1).mean(axis=0) >= 0.9
        cols[-1] = True
        full = np.isfinite(x[:, :, cols]).all(axis=2)
        ok = full.any(axis=1)
        if not ok.any():
            continue
        x, full = x[ok], full[ok]
        pick = np.array([rng.choice(np.flatnonzero(r)) for r in full])
        obs = x[np.arange(x.shape[0]), pick]
        obs[:, ~cols] = np.nan
        if noise:
            obs = obs + rng.normal(0.0, noise, obs.shape)
        out[label] = obs
    return out


def _rows(obs: np.ndarray, fractions: np.ndarray, ladder: Sequence[float]) -> list[tuple[int, int, int]]:
    """(column of the rung, column of the previous rung or −1) for a ladder, on the columns of `fractions`."""
    col = {round(float(f), 9): i for i, f in enumerate(fractions)}
    out = []
    for m, f in enumerate(ladder):
        c = col[round(float(f), 9)]
        p = col[round(float(ladder[m - 1]), 9)] if m else -1
        out.append((c, p))
    return out  # type: ignore[return-value]


def _features(obs: np.ndarray, fractions: np.ndarray, c: int, p: int, form: str, ideal: float | None, clip: float):
    v = obs[:, c]
    prev = obs[:, p] if p >= 0 else np.full(v.shape, np.nan)
    pf = fractions[p] if p >= 0 else np.nan
    return design(v, prev, fractions[c], pf, form=form, ideal=ideal, slope_clip=clip)


def _stack(drawn: list[np.ndarray], fractions: np.ndarray, c: int, p: int, form: str, ideal: float | None,
           clip: float) -> tuple[np.ndarray | None, np.ndarray]:  # fmt: skip
    """The regression rows of rung column `c` (previous rung `p`, −1: none) over the tasks that have both;
    `(None, …)` when fewer than :data:`MIN_TASKS` tasks do."""
    Xs, ys = [], []
    for o in drawn:
        if np.isnan(o[0, c]) or (p >= 0 and np.isnan(o[0, p])):
            continue
        X, _ = _features(o, fractions, c, p, form, ideal, clip)
        Xs.append(X)
        ys.append(_target(o[:, c], o[:, -1], form, ideal))
    if len(Xs) < MIN_TASKS:
        return None, np.zeros(0)
    return np.concatenate(Xs), np.concatenate(ys)


def _fit_models(drawn: list[np.ndarray], fr: np.ndarray, first_cols: list[int], slope_pairs: dict[int, int],
                form: str, ideal: float | None, clip: float, tau: float) -> tuple[np.ndarray, ...] | None:  # fmt: skip
    """`(grid, hi, med, grid_first, hi_first, med_first)` fitted on the drawn configurations of some tasks."""
    n0 = len(FEATURES_FIRST)
    grid, hi, med, grid0, hi0, med0 = [], [], [], [], [], []
    for c in first_cols:  # the first-rung models learn from every rung (read without a slope)
        X, y = _stack(drawn, fr, c, -1, form, ideal, clip)
        if X is not None:
            grid0.append(fr[c])
            hi0.append(quantile_regression(X[:, :n0], y, tau))
            med0.append(quantile_regression(X[:, :n0], y, 0.5))
    for c, p in sorted(slope_pairs.items()):
        X, y = _stack(drawn, fr, c, p, form, ideal, clip)
        if X is not None:
            grid.append(fr[c])
            hi.append(quantile_regression(X, y, tau))
            med.append(quantile_regression(X, y, 0.5))
    if not grid or not grid0:
        return None
    return np.array(grid), np.array(hi), np.array(med), np.array(grid0), np.array(hi0), np.array(med0)


def _target(v: np.ndarray, final: np.ndarray, form: str, ideal: float | None) -> np.ndarray:
    g = final - v
    if form == "absolute":
        return g
    room = np.maximum(float(ideal) - v, 1e-9)  # type: ignore[arg-type]
    return np.clip(g / room, 0.0, 1.0)


def ladder_scores(
    bound: CurveBound, obs: np.ndarray, fractions: Sequence[float], ladder: Sequence[float]
) -> np.ndarray:
    """Every configuration's score on a ladder: the largest normalised exceedance over its rungs
    (:meth:`CurveBound.score`); its curve stays within the bound at every rung iff the score is `≤ λ`.

    Args:
        bound: the bound of the study (e.g. from
            :meth:`~mf_sched.racing.curve_bound.CurveBoundFit.select`).
        obs: one task's observed scores (maximised), `(configurations, fractions)`, the last column the final value
            (:func:`observed_runs`).
        fractions: the fractions of training of the columns of `obs`.
        ladder: the rungs (fractions below 1), each among `fractions`.
    """
    fr = np.asarray(fractions, dtype=float)
    s = np.full(obs.shape[0], -np.inf)
    final = obs[:, -1]
    for c, p in _rows(obs, fr, ladder):
        prev = obs[:, p] if p >= 0 else np.full(obs.shape[0], np.nan)
        pf = fr[p] if p >= 0 else np.nan
        s = np.maximum(s, bound.score(obs[:, c], prev, fr[c], pf, final))
    return s


def _study_scores(scores: np.ndarray, final: np.ndarray, n_arms: int, tols: Sequence[float], draws: int,
                  rng: np.random.Generator, last: np.ndarray | None = None) -> Any:  # fmt: skip
    """For `draws` random K-subsets: the smallest score among the configurations within each tolerance of the
    subset's best final value, `(draws, len(tols))`; with `last` (the values at the ladder's last rung below the
    top) also the evidence statistic of each subset for every `n'` of
    :data:`~mf_sched.racing.evidence.EVIDENCE_N`, `(draws, len(EVIDENCE_N))`: the mean score of the `n'`
    configurations with the best `last` values (the runs a race finishes; :mod:`mf_sched.racing.evidence`)."""
    n = final.size
    k = min(n_arms, n)
    pick = np.argsort(rng.random((draws, n)), axis=1)[:, :k] if k < n else np.broadcast_to(np.arange(n), (draws, n))
    f = final[pick]
    best = f.max(axis=1, keepdims=True)
    s = scores[pick]
    out = np.empty((draws, len(tols)))
    for i, t in enumerate(tols):
        good = f >= best - t * np.abs(best) - 1e-12
        out[:, i] = np.where(good, s, np.inf).min(axis=1)
    if last is None:
        return out
    order = np.argsort(-last[pick], axis=1, kind="stable")
    ranked = np.take_along_axis(s, order, axis=1)
    csum = np.cumsum(ranked, axis=1)
    stat = np.stack([csum[:, min(m, k) - 1] / min(m, k) for m in EVIDENCE_N], axis=1)
    return out, stat


def _complete(a: Any, n_cols: int) -> np.ndarray:
    """A task's table with its incomplete configurations left out: every column the task has (not all NaN)
    must be finite, and the last one always; `(0, n_cols)` when the shape is wrong."""
    x = np.asarray(a, dtype=float)
    if x.ndim != 2 or x.shape[1] != n_cols:
        return np.zeros((0, n_cols))
    cols = ~np.isnan(x).all(axis=0)
    cols[-1] = True
    return x[np.isfinite(x[:, cols]).all(axis=1)]


def _covers(obs: np.ndarray, fractions: np.ndarray, ladder: Sequence[float]) -> bool:
    """Whether the task has values at every rung of `ladder`."""
    return all(not np.isnan(obs[0, c]) and (p < 0 or not np.isnan(obs[0, p])) for c, p in _rows(obs, fractions, ladder))


def fit_curve_bound(
    tasks: Mapping[Any, np.ndarray],
    fractions: Sequence[float],
    *,
    family: str,
    form: str = "absolute",
    ideal: float | None = None,
    n_arms: Sequence[int] = (8, 24, 64),
    tau: float = 0.9,
    alphas: Sequence[float] = (0.05, 0.1, 0.2),
    tolerances: Sequence[float] = (0.0, 0.005, 0.01),
    ladders: Sequence[Sequence[float]] = LADDERS,
    per_task: int = 40,
    draws: int = 200,
    w_min: float | None = None,
    slope_clip: float = 2.0,
    seed: int = 0,
    cv_folds: int = 5,
    provenance: Mapping[str, Any] | None = None,
) -> CurveBoundFit:
    """Fit the curve-aware bound (see the module docstring).

    Args:
        tasks: per task, observed scores (maximised) of its configurations, `(configurations, fractions)`
            (:func:`observed_runs`); at least 2 tasks.
        fractions: the fractions of training of the columns, increasing, the last 1.0; every rung of the
            `ladders` must be among them.
        family: the name the fit is stored under.
        form: `"absolute"` or `"relative"` (needs `ideal`).
        ideal: the best attainable score in the maximised orientation, e.g. 0 for a negated loss (`"relative"`).
        n_arms: the study sizes `K` to fit for.
        tau: level of the upper quantile model.
        alphas: the grid of all-rung miss rates to compute λ for.
        tolerances: the grid of relative tolerances to compute λ for.
        ladders: the rungs (fractions below 1) over which coverage is joint; λ is the largest over them.
        per_task: configurations drawn per task and `K` for the regressions.
        draws: random `K`-subsets per task for λ.
        w_min: the smallest interval width (default 0.005 absolute, 0.02 relative).
        slope_clip: the slope features are clipped to `±slope_clip`.
        seed: seeds the draws (the fit is a function of its arguments).
        cv_folds: groups of tasks for the cross-conformal step (a task's scores come from models fitted on
            the other groups, so that λ is not computed on the residuals the models were fitted to).
        provenance: recorded with the fit (sources, held-out coverage, ...).
    """
    fr = np.asarray(fractions, dtype=float)
    if fr.ndim != 1 or fr.size < 2 or np.any(np.diff(fr) <= 0) or abs(fr[-1] - 1.0) > 1e-9 or fr[0] <= 0:
        raise ValueError(f"fractions = {list(fractions)} must increase strictly from above 0 to 1.0")
    if form not in ("absolute", "relative"):
        raise ValueError(f"form = {form!r} is unknown; accepted: 'absolute', 'relative'")
    if form == "relative" and ideal is None:
        raise ValueError("form = 'relative' needs ideal= (the best attainable score, maximised orientation)")
    tau = check_fraction("tau", tau)
    per_task = check_int("per_task", per_task, 2)
    draws = check_int("draws", draws)
    ks = sorted({check_int("n_arms", k, 2) for k in n_arms})
    arrays = {t: _complete(a, fr.size) for t, a in tasks.items()}
    arrays = {t: a for t, a in arrays.items() if a.shape[0] >= 2}
    if len(arrays) < 2:
        raise ValueError(f"{len(arrays)} task(s) with complete curves; the bound is calibrated over tasks: give >= 2")
    known = {round(float(f), 9) for f in fr}
    for lad in ladders:
        bad = [f for f in lad if round(float(f), 9) not in known]
        if bad:
            raise ValueError(f"ladder rungs {bad} are not among the fractions")
    wmin = float(w_min) if w_min is not None else (0.005 if form == "absolute" else 0.02)
    pairs = sorted({r for lad in ladders for r in _rows(next(iter(arrays.values())), fr, lad)})
    slope_pairs = {c: p for c, p in pairs if p >= 0}  # a rung's previous rung (f/3 on the canonical ladders)
    first_cols = sorted({c for c, _ in pairs})
    rng = np.random.default_rng(seed)
    fits: list[tuple[np.ndarray, ...]] = []
    lams = []
    evs: list[tuple[np.ndarray, ...]] = []
    names = list(arrays)
    fold_of = np.random.default_rng([seed, 7]).permutation(len(names)) % max(2, min(cv_folds, len(names)))
    for k in ks:
        drawn = []
        for obs in arrays.values():
            w = best_of_k_weights(obs[:, -1], k)
            drawn.append(obs[rng.choice(obs.shape[0], size=per_task, p=w)])
        models = _fit_models(drawn, fr, first_cols, slope_pairs, form, ideal, slope_clip, tau)
        if models is None:
            raise ValueError(f"no rung of the ladders is reached by at least {MIN_TASKS} tasks; give matching "
                             "fractions and ladders")  # fmt: skip
        fits.append(models)
        # λ from out-of-fold scores (cross-conformal over tasks: a task is scored by models fitted without it)
        scores: list[list[np.ndarray | None]] = [[None] * len(names) for _ in ladders]
        for f in np.unique(fold_of):
            inside = [d for d, g in zip(drawn, fold_of) if g != f]
            fm = _fit_models(inside, fr, first_cols, slope_pairs, form, ideal, slope_clip, tau) or models
            probe = CurveBound(family, form, ideal, k, 0.05, 0.0, fm[0], fm[3], fm[1], fm[2], fm[4], fm[5], 0.0,
                               wmin, slope_clip)  # fmt: skip
            for li, lad in enumerate(ladders):
                for i in np.flatnonzero(fold_of == f):
                    obs = arrays[names[i]]
                    if _covers(obs, fr, lad):
                        sc = ladder_scores(probe, obs, fr, lad)
                        last = obs[:, _rows(obs, fr, lad)[-1][0]]
                        scores[li][i] = _study_scores(sc, obs[:, -1], k, tolerances, draws, rng, last)
        nn = len(EVIDENCE_N)
        lam = np.full((len(ladders), len(alphas), len(tolerances)), np.nan)
        ev = {x: np.full((len(ladders), len(alphas), len(tolerances), nn), np.nan) for x in ("beta", "q")}
        t_range = np.full((2, len(ladders), nn), np.nan)
        for li in range(len(ladders)):
            per = [x for x in scores[li] if x is not None]
            n = len(per)
            if n < MIN_TASKS:
                continue  # too few tasks reach this ladder's rungs
            for ai, a in enumerate(alphas):
                level = min(1.0, (1 - a) * (1 + 1 / n))
                for ti in range(len(tolerances)):
                    q = pooled_quantile([p[0][:, ti] for p in per], level)
                    lam[li, ai, ti] = q if math.isfinite(q) else 1e6
                    for ni in range(nn):  # λ given the study's own evidence (mf_sched.racing.evidence)
                        cell = fit_evidence_table([p[0][:, ti] for p in per], [p[1][:, ni] for p in per], alpha=a)
                        ev["beta"][li, ai, ti, ni], ev["q"][li, ai, ti, ni] = cell["beta"], cell["q"]
                        t_range[:, li, ni] = cell["t_lo"], cell["t_hi"]
        if np.isnan(lam).all():
            raise ValueError("no ladder has rungs that at least 2 tasks reach; give fractions and ladders that match")
        lams.append(lam)
        evs.append((ev["beta"], ev["q"], t_range[0], t_range[1]))
    lam_all = np.array(lams)
    reached = ~np.isnan(lam_all[0, :, 0, 0])
    ladders = [lad for lad, ok in zip(ladders, reached) if ok]
    lam_all = lam_all[:, reached]
    evidence = {
        "n": list(EVIDENCE_N),
        **{name: _json_floats(np.array([e[j] for e in evs])[:, reached]) for j, name in enumerate(EV_FIELDS)},
    }
    grids = {tuple(f[0].tolist()) for f in fits} | {tuple(f[3].tolist()) for f in fits}
    if len({tuple(f[0].tolist()) for f in fits}) > 1 or len({tuple(f[3].tolist()) for f in fits}) > 1:
        raise AssertionError(f"the grids differ between study sizes: {grids}")  # pragma: no cover - same tasks
    prov = dict(provenance or {})
    prov.setdefault("tasks", len(arrays))
    return CurveBoundFit(
        family=family, form=form, ideal=ideal, n_arms=tuple(ks), tau=tau, grid=fits[0][0], grid_first=fits[0][3],
        hi=np.array([f[1] for f in fits]), med=np.array([f[2] for f in fits]),
        hi_first=np.array([f[4] for f in fits]), med_first=np.array([f[5] for f in fits]),
        alphas=tuple(float(a) for a in alphas), tolerances=tuple(float(t) for t in tolerances), lam=lam_all,
        w_min=wmin, slope_clip=slope_clip, ladders=tuple(tuple(float(f) for f in lad) for lad in ladders),
        provenance=prov, evidence=evidence,
    )  # fmt: skip


EV_FIELDS = ("beta", "q", "t_lo", "t_hi")


def _json_floats(a: np.ndarray) -> list:
    """Nested lists of rounded floats, a non-finite value as None (JSON has no infinity)."""
    a = np.asarray(a, dtype=float)
    flat = [round(float(v), 6) if math.isfinite(v) else None for v in a.ravel()]
    return np.array(flat, dtype=object).reshape(a.shape).tolist()


def miss_rate(
    fit: CurveBoundFit,
    tasks: Mapping[Any, np.ndarray],
    fractions: Sequence[float],
    *,
    n_arms: int,
    alpha: float = 0.05,
    tolerance: float = 0.0,
    draws: int = 200,
    seed: int = 1,
    per_task: bool = False,
    by_ladder: bool = False,
    evidence_n: int | None = None,
) -> Any:
    """The all-rung miss rate of a fitted bound on (held-out) `tasks`: the share of random `n_arms`-subsets in
    which every configuration within `tolerance` of the best final value exceeds the bound at some rung of a
    ladder (each of `fit.ladders` with the λ a study on it would use).

    Returns the mean over tasks of the worst rate over the ladders a task reaches (`per_task=True`: the
    per-task worst rates, NaN for a task that reaches no ladder); `by_ladder=True`: the mean over tasks for each
    ladder instead, `(len(fit.ladders),)` (NaN for a ladder no task reaches).

    Args:
        fit: the fitted bound to evaluate.
        tasks: per task, observed scores (maximised) `(configurations, fractions)` (:func:`observed_runs`);
            incomplete configurations are left out, a task with fewer than 2 is skipped.
        fractions: the fractions of training of the columns, the last 1.0.
        n_arms: the study size `K` (a task with fewer configurations is a study of all of them).
        alpha: the all-rung miss rate the bound is selected for, in `(0, 1)`.
        tolerance: the relative tolerance the bound is selected for, `0 ≤ tolerance < 1`.
        draws: the random `K`-subsets drawn per task and ladder.
        seed: seeds the draws.
        per_task: return the per-task worst rates instead of their mean.
        by_ladder: return the mean over tasks for each ladder instead (takes precedence over `per_task`).
        evidence_n: measure the bound *given the study's evidence* instead of the prior λ: in each subset the
            statistic of :mod:`mf_sched.racing.evidence` over the `evidence_n` configurations with the best values
            at the ladder's last rung below the top (those a race finishes) gives λ; `None`: the prior λ.
    """
    fr = np.asarray(fractions, dtype=float)
    rng = np.random.default_rng(seed)
    table = np.full((len(tasks), len(fit.ladders)), np.nan)
    for i, obs in enumerate(tasks.values()):
        obs = _complete(obs, fr.size)
        k = min(n_arms, obs.shape[0])  # a task with fewer configurations is a smaller study
        for j, lad in enumerate(fit.ladders):
            if obs.shape[0] < 2 or not _covers(obs, fr, lad):
                continue
            b = fit.select(n_arms=k, alpha=alpha, tolerance=tolerance, fractions=lad)
            sc = ladder_scores(b, obs, fr, lad)
            if evidence_n is None or b.evidence is None:
                st = _study_scores(sc, obs[:, -1], k, (b.tolerance,), draws, rng)[:, 0]
                table[i, j] = float(np.mean(st > b.lam + 1e-12))
                continue
            last = obs[:, _rows(obs, fr, lad)[-1][0]]
            st, stat = _study_scores(sc, obs[:, -1], k, (b.tolerance,), draws, rng, last)
            ni = b.evidence.index(min(int(evidence_n), k))
            lam = np.array([b.evidence.lam(float(x), EVIDENCE_N[ni])[0] for x in stat[:, ni]])
            table[i, j] = float(np.mean(st[:, 0] > lam + 1e-12))
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows / columns: a task or ladder not reached
        if by_ladder:
            return np.nanmean(table, axis=0)
        worst = np.nanmax(table, axis=1) if table.size else np.zeros(0)
    return worst if per_task else float(np.nanmean(worst)) if np.isfinite(worst).any() else float("nan")
