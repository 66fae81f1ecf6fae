"""ζ⁺(m), the best configuration's improvement after each rung, estimated across the tasks of learning curves.

The racing rule (:mod:`mf_sched.racing.engine`, `rule="race"`) needs a bound on one quantity only: how much the best
configuration of a study can still improve after rung `m`. This module estimates it from learning curves of
many *tasks* (datasets, workloads), so that the bound transfers to a new task:

* **whose best?** In a study of `K` configurations the arm that matters is the best of those `K`, and it
  is not the best configuration of the task: the best of a random `K`-subset is a less extreme
  configuration, and on LCBench its improvement after 10% of training is about 1.6× that of the task's
  single best (a slower learner). For every task we therefore draw `draws` random `K`-subsets
  (`K = n_arms`, or all configurations when the task has fewer) and record the improvement of each
  subset's best configuration (by final value): the per-task distribution `F_t` of the quantity ζ⁺ bounds.
  Choose `n_arms` at or below the study sizes you run: the best of fewer arms is usually further from the
  top of the task and improves more (conservative for larger studies);
* **the estimate**: `ζ̂⁺(m)` is the `quantile`-quantile of the task mixture `(1/n) Σ_t F_t` (every task
  weighs the same), and its **upper confidence bound** at level `confidence` is the percentile bootstrap
  over *tasks* (tasks are resampled with replacement; a fixed number of resamples with a fixed seed, so the
  result is deterministic). The upper bounds get the non-increasing envelope and `ζ⁺(M) = 0`;
  `typical(m)` is the mixture's median, used only to *estimate* final values for early answers;
* **forms**: `"absolute"` (metric units, maximisation orientation: `final − value(m)`) or `"relative"`
  (the improvement as a fraction of the distance to `ideal`, `(final − value(m)) / (ideal − value(m))`,
  capped to [0, 1]: scale-free for metrics with a known best value, such as a loss with ideal 0);
* **held-out-task coverage** (the acceptance test): for every task `t`, ζ⁺ is re-estimated without `t`
  and we report the fraction of `t`'s draws whose improvement is within it (leave-one-task-out); the
  mean over tasks estimates the coverage on a new task, the minimum shows the worst task.

What the guarantee then means: the racing rule keeps the best arm with probability `≥ 1 − δ − α`, where
`δ` covers the noise and `α` is the miscoverage of ζ⁺ on the study's task (estimated by the held-out
coverage; `1 − quantile` if tasks are exchangeable with the calibration tasks).

Example:
    >>> import numpy as np
    >>> from mf_sched.curves.learning_curves import LearningCurves
    >>> rng = np.random.default_rng(0)
    >>> rows = []
    >>> for task in range(20):                      # 20 tasks × 80 configurations, accuracy-like curves
    ...     final = rng.uniform(0.5, 0.9, 80)
    ...     speed = rng.uniform(0.5, 3.0, 80)
    ...     for c in range(80):
    ...         for e in (1, 3, 9, 27):
    ...             rows.append({"task": task, "config": c, "epoch": e,
    ...                          "acc": final[c] - 0.3 * (1 - e / 27) / speed[c]})
    >>> curves = LearningCurves.from_records(rows, metric="acc", mode="max", fidelity="epoch", task="task")
    >>> cal = calibrate_race(curves, [1, 3, 9, 27], n_arms=10, draws=50, bootstrap=200)

    The true ζ⁺ has a closed form here: final value and speed are independent, so the best of 10 (by final
    value) has a Uniform(0.5, 3) speed `S`; its improvement after epoch `e` is `0.3 (1 − e/27) / S`, whose
    0.95-quantile is at S's 0.05-quantile, `0.5 + 0.05 × 2.5 = 0.625`. The estimate is close to it and its
    upper confidence bound (level 0.95 over resampled tasks) is above it; with few tasks it can fall below (with
    6 of these tasks, 0.43 < 0.46 after epoch 1): a bound over tasks needs tasks.

    >>> truth = 0.3 * (1 - np.array([1, 3, 9, 27]) / 27) / 0.625
    >>> truth.round(2).tolist()
    [0.46, 0.43, 0.32, 0.0]
    >>> cal.point.round(2).tolist()
    [0.45, 0.41, 0.31, 0.0]
    >>> bool((cal.upper >= truth).all())
    True
    >>> bool(cal.upper[0] >= cal.typical[0])
    True
    >>> bool(cal.coverage_mean[0] >= 0.85), cal.bias().form
    (True, 'absolute')
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mf_sched._validate import check_fraction, check_int
from mf_sched.curves.learning_curves import LearningCurves, parse_fidelities
from mf_sched.racing.bias import FORMS, RaceBias

__all__ = ["RaceCalibration", "calibrate_race", "best_of_k_improvements", "improvement_samples", "race_bound"]


def best_of_k_improvements(
    means: np.ndarray, n_arms: int, draws: int, rng: np.random.Generator, *, form: str = "absolute",
    ideal: float | None = None,
) -> np.ndarray:  # fmt: skip
    """The improvement after each rung of the best configuration of `draws` random `n_arms`-subsets.

    The best of a subset is the configuration with the highest last column. Returns `(draws, rungs)`:
    `final − value(m)` (absolute) or that over `ideal − value(m)`, capped to [0, 1] (relative).

    Args:
        means: one task's `(configurations, rungs)` table of scores (higher is better; rows with a NaN are
            ignored).
        n_arms: the subset size `K` (all configurations when the task has fewer).
        draws: the number of random subsets.
        rng: the random generator that draws them.
        form: `"absolute"` or `"relative"` (improvement over the room left to `ideal`).
        ideal: the best attainable score, in the maximisation orientation (`form="relative"` only).

    >>> m = np.array([[0.1, 0.5], [0.4, 0.6], [0.3, 0.9]])
    >>> best_of_k_improvements(m, 3, 2, np.random.default_rng(0)).tolist()
    [[0.6000000000000001, 0.0], [0.6000000000000001, 0.0]]
    """
    x = np.asarray(means, dtype=float)
    x = x[np.isfinite(x).all(axis=1)]
    n = x.shape[0]
    if n == 0:
        raise ValueError("no configuration has a value at every rung")
    k = min(int(n_arms), n)
    if k == n:
        pick = np.broadcast_to(np.arange(n), (draws, n))
    else:
        pick = np.argsort(rng.random((draws, n)), axis=1)[:, :k]
    best = pick[np.arange(draws), np.argmax(x[pick, -1], axis=1)]
    rows = x[best]
    gain = rows[:, -1:] - rows
    if form == "absolute":
        return gain
    room = float(ideal) - rows  # type: ignore[arg-type]
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(room > 0, gain / np.where(room > 0, room, 1.0), np.where(gain > 0, 1.0, 0.0))
    return np.clip(rel, 0.0, 1.0)


def _mixture_quantiles(samples: list[np.ndarray], weights: np.ndarray, probs: Sequence[float]) -> np.ndarray:
    """Quantiles (inverted CDF) of the mixture of per-task samples with task `weights`: `(len(probs), M)`.
    `weights` may be `(B, n_tasks)` for many bootstrap resamples at once: then `(B, len(probs), M)`."""
    w = np.atleast_2d(np.asarray(weights, dtype=float))
    sizes = np.array([s.shape[0] for s in samples])
    values = np.concatenate(samples, axis=0)  # (N, M)
    task_of = np.repeat(np.arange(len(samples)), sizes)
    per_sample = w[:, task_of] / sizes[task_of]  # (B, N): each task's weight spread over its draws
    out = np.empty((w.shape[0], len(probs), values.shape[1]))
    for m in range(values.shape[1]):
        order = np.argsort(values[:, m], kind="stable")
        sv = values[order, m]
        cum = np.cumsum(per_sample[:, order], axis=1)
        total = cum[:, -1:]
        for j, p in enumerate(probs):
            idx = np.minimum((cum < p * total - 1e-12).sum(axis=1), sv.size - 1)
            out[:, j, m] = sv[idx]
    return out if np.ndim(weights) == 2 else out[0]


@dataclass(frozen=True)
class RaceCalibration:
    """ζ⁺ estimated across tasks (see :func:`calibrate_race`).

    Attributes:
        rungs: the fidelities the estimate is for (the last is the target).
        upper: the upper confidence bound of the `quantile`-quantile, enveloped (the value to race with).
        point: the `quantile`-quantile itself (before the bound and envelope).
        typical: the mixture's median improvement (enveloped, `≤ upper`).
        coverage_mean: leave-one-task-out coverage of `upper` per rung, averaged over the tasks.
        coverage_min: the same, of the worst task.
        coverage_per_task: the same per task, `(tasks, rungs)` (NaN when `holdout=False`).
        form: the `form` setting of :func:`calibrate_race`.
        ideal: the `ideal` setting of :func:`calibrate_race`.
        n_arms: the `n_arms` setting of :func:`calibrate_race`.
        quantile: the `quantile` setting of :func:`calibrate_race`.
        confidence: the `confidence` setting of :func:`calibrate_race`.
        draws: the `draws` setting of :func:`calibrate_race`.
        bootstrap: the `bootstrap` setting of :func:`calibrate_race`.
        tasks: the task labels used.
        holdout_upper: per task, the bound estimated without it (its row of the leave-one-task-out check).
        source: where the curves came from.
        metric_name: the metric's name in the curves.
        extra: free-form provenance added by the caller (e.g. the benchmark that made a shipped prior).
    """

    rungs: np.ndarray
    upper: np.ndarray
    point: np.ndarray
    typical: np.ndarray
    coverage_mean: np.ndarray
    coverage_min: np.ndarray
    coverage_per_task: np.ndarray
    form: str
    ideal: float | None
    n_arms: int
    quantile: float
    confidence: float
    draws: int
    bootstrap: int
    tasks: tuple[Any, ...]
    holdout_upper: np.ndarray
    source: str = ""
    metric_name: str = "metric"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def M(self) -> int:
        return int(self.rungs.size)

    def bias(self, source: str | None = None) -> RaceBias:
        """The :class:`~mf_sched.racing.bias.RaceBias` to race with (`upper`; `typical` for estimates).

        Args:
            source: the bias's provenance text; `None` writes one from the calibration's settings.
        """
        return RaceBias(
            upper=tuple(self.upper.tolist()),
            typical=tuple(self.typical.tolist()),
            form=self.form,
            ideal=self.ideal,
            source=source
            or (
                f"calibrate_race: {self.quantile:g}-quantile of the best-of-{self.n_arms} improvement over "
                f"{len(self.tasks)} tasks ({self.source or self.metric_name}), {self.confidence:g} task bootstrap"
            ),
            details={
                "quantile": self.quantile,
                "confidence": self.confidence,
                "n_arms": self.n_arms,
                "n_tasks": len(self.tasks),
                "holdout_coverage_mean": self.coverage_mean.tolist(),
                "holdout_coverage_min": self.coverage_min.tolist(),
            },
        )

    def table(self) -> str:
        """A plain-text table per rung."""
        unit = "metric units" if self.form == "absolute" else f"fraction of the distance to {self.ideal:g}"
        lines = [
            f"ζ⁺ of the best of {self.n_arms} configurations, {len(self.tasks)} tasks ({unit}); "
            f"{self.quantile:g}-quantile, {self.confidence:g} bootstrap over tasks",
            f"{'rung':>10s} {'typical':>9s} {'quantile':>9s} {'ζ⁺ upper':>9s} {'held-out cov.':>14s} "
            f"{'worst task':>11s}",
        ]
        for i in range(self.M):
            lines.append(
                f"{self.rungs[i]:10.4g} {self.typical[i]:9.4f} {self.point[i]:9.4f} {self.upper[i]:9.4f} "
                f"{self.coverage_mean[i]:14.3f} {self.coverage_min[i]:11.3f}"
            )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rungs": self.rungs.tolist(),
            "upper": self.upper.tolist(),
            "point": self.point.tolist(),
            "typical": self.typical.tolist(),
            "coverage_mean": self.coverage_mean.tolist(),
            "coverage_min": self.coverage_min.tolist(),
            "form": self.form,
            "ideal": self.ideal,
            "n_arms": self.n_arms,
            "quantile": self.quantile,
            "confidence": self.confidence,
            "draws": self.draws,
            "bootstrap": self.bootstrap,
            "tasks": [str(t) for t in self.tasks],
            "source": self.source,
            "metric_name": self.metric_name,
            **self.extra,
        }


def _envelope(x: np.ndarray) -> np.ndarray:
    out = np.maximum.accumulate(np.asarray(x, dtype=float)[::-1])[::-1].copy()
    out[-1] = 0.0
    return out


def improvement_samples(
    curves: LearningCurves,
    rungs: Sequence[float] | str,
    *,
    n_arms: int = 20,
    form: str = "absolute",
    ideal: float | None = None,
    draws: int = 200,
    seed: int = 0,
    how: str = "previous",
    min_configs: int = 2,
) -> dict[Any, np.ndarray]:
    """Per task, the improvement after each rung of the best of `draws` random `n_arms`-subsets
    (:func:`best_of_k_improvements` on the task's seed-averaged values at `rungs`). Tasks with fewer than
    `min_configs` complete configurations are left out.

    Args:
        curves: learning curves with a `task` column.
        rungs: the fidelities (in the curves' units); the last is the target.
        n_arms: the subset size `K ≥ 2`.
        form: `"absolute"` or `"relative"`.
        ideal: the best attainable value in the metric's own units (`form="relative"`; oriented here).
        draws: random subsets per task.
        seed: seeds the subsets.
        how: how runs are read at the rungs (:meth:`~mf_sched.curves.learning_curves.LearningCurves.values_at`).
        min_configs: the fewest complete configurations a task needs to be used.
    """
    if not isinstance(curves, LearningCurves):
        raise TypeError(f"curves must be a LearningCurves table, got {type(curves).__name__}")
    r = parse_fidelities(rungs, "rungs")
    if r.size < 2:
        raise ValueError("rungs must hold at least 2 fidelities (the last is the target)")
    n_arms = check_int("n_arms", n_arms, 2)
    draws = check_int("draws", draws)
    if form not in FORMS:
        raise ValueError(f"form = {form!r} is unknown; accepted: {', '.join(map(repr, FORMS))}")
    score_ideal: float | None = None
    if form == "relative":
        if ideal is None:
            raise ValueError("form = 'relative' needs ideal= (the metric's best attainable value, e.g. 1.0 or 0.0)")
        score_ideal = float(ideal) if curves.mode == "max" else -float(ideal)
    rv = curves.values_at(r, how=how)
    means = rv.means()
    rng = np.random.default_rng(seed)
    out: dict[Any, np.ndarray] = {}
    for t in range(curves.n_tasks):
        x = means[rv.config_task == t]
        x = x[np.isfinite(x).all(axis=1)]
        if x.shape[0] >= max(2, int(min_configs)):
            out[curves.task_labels[t]] = best_of_k_improvements(x, n_arms, draws, rng, form=form, ideal=score_ideal)
    return out


def race_bound(
    samples: Mapping[Any, np.ndarray],
    rungs: Sequence[float] | str,
    *,
    quantile: float = 0.95,
    confidence: float = 0.95,
    bootstrap: int = 1000,
    seed: int = 0,
    form: str = "absolute",
    ideal: float | None = None,
    n_arms: int = 20,
    source: str = "",
    metric_name: str = "metric",
    holdout: bool = True,
    method: str = "bootstrap",
) -> RaceCalibration:
    """ζ⁺ from per-task improvement samples (:func:`improvement_samples`, possibly pooled from several sources):
    the upper bound, the envelope and the leave-one-task-out coverage (see the module docstring;
    `holdout=False` skips it: NaN coverage). `ideal` is in the maximisation orientation here.

    `method="bootstrap"`: the `quantile`-quantile of the task mixture, bounded by the percentile bootstrap
    over tasks at level `confidence`. `method="conformal"`: every task's own `quantile`-quantile, and of
    those the `⌈(n + 1) confidence⌉`-th smallest (the largest when `n` is small): if tasks are exchangeable,
    a new task's own quantile is below it with probability `≥ confidence` (`n/(n + 1)` when it is the
    largest) — a distribution-free statement over tasks, more conservative with few or unlike tasks.

    Args:
        samples: per task label, its `(draws, rungs)` improvement samples.
        rungs: the fidelities of the samples' columns.
        quantile: the fraction of (task, study) draws ζ⁺ must cover.
        confidence: the level of the bound over tasks (`≥ 0.5`).
        bootstrap: task resamples (`method="bootstrap"`; also the weights of the held-out check).
        seed: seeds the resamples.
        form: `"absolute"` or `"relative"`.
        ideal: the best attainable score, in the maximisation orientation (`form="relative"`).
        n_arms: the study size the samples were drawn for (recorded).
        source: where the curves came from (recorded).
        metric_name: the metric's name (recorded).
        holdout: run the leave-one-task-out coverage check.
        method: `"bootstrap"` or `"conformal"`.
    """
    r = parse_fidelities(rungs, "rungs")
    q = check_fraction("quantile", quantile)
    c = check_fraction("confidence", confidence, 0.5)
    bootstrap = check_int("bootstrap", bootstrap)
    tasks = list(samples)
    arrays = [np.asarray(samples[t], dtype=float) for t in tasks]
    n = len(arrays)
    if n < 2:
        raise ValueError(
            f"{n} task(s) with data; ζ⁺ is a bound over tasks and needs at least 2 "
            "(use mf_sched.curves.calibration.calibrate for a quantile over the configurations of one task)"
        )
    if any(a.ndim != 2 or a.shape[1] != r.size or a.shape[0] == 0 for a in arrays):
        raise ValueError(f"every task's samples must be a non-empty (draws, {r.size}) array")
    point, typical = _mixture_quantiles(arrays, np.ones(n), (q, 0.5))
    boot_rng = np.random.default_rng([seed, 1])
    idx = boot_rng.integers(0, n, size=(bootstrap, n))
    weights = np.stack([np.bincount(row, minlength=n) for row in idx]).astype(float)

    if method not in ("bootstrap", "conformal"):
        raise ValueError(f"method = {method!r} is unknown; accepted: 'bootstrap', 'conformal'")
    per_task = np.array([np.quantile(a, q, axis=0, method="inverted_cdf") for a in arrays])  # (n, M)

    def bound(sub: list[np.ndarray], w: np.ndarray) -> np.ndarray:
        if method == "conformal":
            keep = [i for i, a in enumerate(arrays) if any(a is b for b in sub)]
            qs = np.sort(per_task[keep], axis=0)
            k = min(len(keep), math.ceil((len(keep) + 1) * c))
            return _envelope(qs[k - 1])
        qs = _mixture_quantiles(sub, w, (q,))[:, 0, :]
        return _envelope(np.quantile(qs, c, axis=0, method="inverted_cdf"))

    upper = bound(arrays, weights)
    typical = np.minimum(_envelope(typical), upper)
    cov = np.full((n, r.size), np.nan)
    held = np.full((n, r.size), np.nan)
    for t in range(n if holdout else 0):  # leave-one-task-out coverage of the bounded estimate
        keep = np.arange(n) != t
        w = weights[:, keep]
        w = np.where(w.sum(axis=1, keepdims=True) > 0, w, 1.0)  # a resample of only task t: use all others
        held[t] = bound([a for a, k in zip(arrays, keep) if k], w)
        cov[t] = (arrays[t] <= held[t] + 1e-12).mean(axis=0)
    return RaceCalibration(
        rungs=r,
        upper=upper,
        point=point,
        typical=typical,
        coverage_mean=cov.mean(axis=0),
        coverage_min=cov.min(axis=0),
        coverage_per_task=cov,
        form=form,
        ideal=ideal,
        n_arms=int(n_arms),
        quantile=q,
        confidence=c,
        draws=int(arrays[0].shape[0]),
        bootstrap=bootstrap,
        tasks=tuple(tasks),
        holdout_upper=held,
        source=source,
        metric_name=metric_name,
    )


def calibrate_race(
    curves: LearningCurves,
    rungs: Sequence[float] | str,
    *,
    n_arms: int = 20,
    quantile: float = 0.95,
    confidence: float = 0.95,
    form: str = "absolute",
    ideal: float | None = None,
    draws: int = 200,
    bootstrap: int = 1000,
    seed: int = 0,
    how: str = "previous",
) -> RaceCalibration:
    """Estimate ζ⁺ per rung from the learning curves of several tasks (see the module docstring).

    Args:
        curves: learning curves with a `task` column (at least 2 tasks) — e.g. a benchmark loaded with
            :mod:`mf_sched.curves.datasets`, or several earlier studies.
        rungs: fidelities (in the curves' units; use :meth:`LearningCurves.to_fraction` first for fractions of
            each run); the last is the target.
        n_arms: the study size `K` whose best configuration is bounded (default 20).
        quantile: the fraction of (task, study) draws ζ⁺ must cover.
        confidence: level of the bootstrap upper bound over tasks.
        form: `"absolute"` or `"relative"` (needs `ideal`).
        ideal: the metric's best attainable value in its own units (1.0 for an accuracy, 0.0 for a loss).
        draws: random `n_arms`-subsets per task.
        bootstrap: task resamples for the upper bound.
        seed: seeds the subsets and the bootstrap (the result is a function of the arguments).
        how: how runs are read at the rungs (:meth:`LearningCurves.values_at`).
    """
    samples = improvement_samples(curves, rungs, n_arms=n_arms, form=form, ideal=ideal, draws=draws, seed=seed, how=how)
    if curves.n_tasks < 2 or len(samples) < 2:
        raise ValueError(
            f"curves have {len(samples)} task(s) with data; ζ⁺ is a bound over tasks and needs at least 2 "
            "(use mf_sched.curves.calibration.calibrate for a quantile over the configurations of one task)"
        )
    score_ideal = None if ideal is None else (float(ideal) if curves.mode == "max" else -float(ideal))
    return race_bound(
        samples, rungs, quantile=quantile, confidence=confidence, bootstrap=bootstrap, seed=seed, form=form,
        ideal=score_ideal if form == "relative" else None, n_arms=n_arms, source=curves.source or "",
        metric_name=curves.metric_name,
    )  # fmt: skip
