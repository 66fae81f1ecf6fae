"""Every run of a learning-curve table read at a ladder of fidelities: the arrays that ζ, γ and σ are estimated from.

:class:`RungValues` is what :meth:`~mf_sched.curves.learning_curves.LearningCurves.values_at` returns; it is
imported from :mod:`mf_sched.curves.learning_curves` (or :mod:`mf_sched.curves`), where it is documented.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RungValues:
    """Every run read at a ladder of fidelities (see :meth:`LearningCurves.values_at`).

    `metric[k, s, m]` and `cost[k, s, m]` are configuration `k`'s value and elapsed cost with seed
    `s` at rung `m` (NaN when the run has none); `config_task[k]` is its task.

    Attributes:
        rungs: the fidelities read, strictly increasing; the last is the target (full fidelity).
        metric: `(configurations, seeds, rungs)` array of the metric as reported (not oriented; see
            :attr:`score`), NaN where the run has no value at the rung.
        cost: same shape: the elapsed cost to reach the rung from scratch, NaN where unknown.
        mode: `"max"` when higher is better, `"min"` when lower is better.
        metric_name: display name of the metric.
        config_task: task code (`0 .. n_tasks − 1`) of every configuration.
        n_tasks: number of tasks of the table read.
    """

    rungs: np.ndarray
    metric: np.ndarray
    cost: np.ndarray
    mode: str
    metric_name: str
    config_task: np.ndarray
    n_tasks: int = 1

    @property
    def n_configs(self) -> int:
        """Number of configurations (the first axis of the arrays)."""
        return int(self.metric.shape[0])

    @property
    def M(self) -> int:
        """Number of rungs; rung `M − 1` (0-based) is the target."""
        return int(self.rungs.size)

    @property
    def score(self) -> np.ndarray:
        """`metric` oriented so that higher is better."""
        return self.metric if self.mode == "max" else -self.metric

    def bias(self) -> np.ndarray:
        """Signed bias per configuration and rung, `b_k(m) = µ_k(m) − µ_k(M)` in the higher-is-better
        orientation, with `µ` averaged over the seeds that have both rung `m` and the last rung (paired).
        NaN where no seed has both. Negative values mean the rung underestimates the final score (the
        usual case for accuracy curves and losses alike)."""
        s = self.score
        d = s - s[:, :, -1:]
        n = np.sum(~np.isnan(d), axis=1)
        tot = np.nansum(d, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, tot / np.maximum(n, 1), np.nan)

    def gaps(self) -> np.ndarray:
        """`|b_k(m)|`: the quantity ζ(m) bounds."""
        return np.abs(self.bias())

    def means(self) -> np.ndarray:
        """Per configuration and rung, the score averaged over the seeds that have it (NaN if none)."""
        s = self.score
        n = np.sum(~np.isnan(s), axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, np.nansum(s, axis=1) / np.maximum(n, 1), np.nan)

    def seed_variance(self) -> tuple[np.ndarray, np.ndarray]:
        """Per configuration and rung, the sample variance across seeds (ddof = 1) and its degrees of
        freedom (seeds − 1; variance NaN when fewer than 2 seeds)."""
        s = self.score
        n = np.sum(~np.isnan(s), axis=1)
        mu = np.where(n > 0, np.nansum(s, axis=1) / np.maximum(n, 1), 0.0)
        ss = np.nansum((s - mu[:, None, :]) ** 2, axis=1)
        dof = np.maximum(n - 1, 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            var = np.where(dof > 0, ss / np.maximum(dof, 1), np.nan)
        return var, dof

    def subset(self, configs: np.ndarray) -> RungValues:
        """The rows of some configurations.

        Args:
            configs: integer indices (`0 .. n_configs − 1`) or a boolean mask of length `n_configs`.

        Returns:
            A `RungValues` over those configurations, with the same rungs, mode and task count.
        """
        return RungValues(
            self.rungs,
            self.metric[configs],
            self.cost[configs],
            self.mode,
            self.metric_name,
            self.config_task[configs],
            self.n_tasks,
        )


def read_runs_at(
    rungs: np.ndarray,
    fidelity: np.ndarray,
    metric: np.ndarray,
    cost: np.ndarray,
    starts: np.ndarray,
    lengths: np.ndarray,
    *,
    how: str,
    tolerance: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Every run's metric and cost at a ladder of fidelities (the work of `LearningCurves.values_at`).

    Args:
        rungs: strictly increasing fidelities (validated by the caller).
        fidelity: the table's fidelity column, sorted by (configuration, seed, fidelity).
        metric: the metric column in the same order.
        cost: the elapsed-cost column in the same order (NaN where unknown).
        starts: the first row of every run (configuration, seed), as `LearningCurves.runs` gives it.
        lengths: the number of rows of every run.
        how: `"previous"` (the last report at or before the rung, if the run reached it), `"interpolate"`
            (linear between the reports around the rung, if the run reached it) or `"exact"` (a report at the
            rung, within `tolerance`).
        tolerance: relative slack in `[0, 1)`: a run that stops within `tolerance × rung` below a rung has
            reached it, and `"exact"` accepts a report that close.

    Returns:
        `(metric, cost)`, each `(runs, rungs)`, NaN where the run has no value at the rung.
    """
    met = np.full((starts.size, rungs.size), np.nan)
    cst = np.full_like(met, np.nan)
    ends = starts + lengths  # exclusive
    last = fidelity[ends - 1]
    fid, m, c = fidelity, metric, cost
    eps = 1e-9
    for j, rung in enumerate(rungs.tolist()):
        le = fid <= rung * (1 + eps)
        n_le = np.add.reduceat(le.astype(np.int64), starts)
        has_prev = n_le > 0
        prev = starts + np.maximum(n_le, 1) - 1
        reached = last >= rung * (1 - tolerance) - eps * rung
        if how == "previous":
            ok = has_prev & reached
            vm, vc = m[prev], c[prev]
        elif how == "exact":
            nxt = np.minimum(prev + 1, ends - 1)
            d_prev = np.abs(fid[prev] - rung)
            d_next = np.where(nxt > prev, np.abs(fid[nxt] - rung), np.inf)
            pick = np.where(d_next < d_prev, nxt, prev)
            ok = np.abs(fid[pick] - rung) <= max(tolerance, eps) * rung
            vm, vc = m[pick], c[pick]
        else:  # interpolate
            nxt = prev + 1
            inside = has_prev & (nxt < ends)
            nxt = np.minimum(nxt, ends - 1)
            f0, f1 = fid[prev], fid[nxt]
            at = np.abs(f0 - rung) <= eps * max(rung, 1.0)
            w = np.where(inside & ~at & (f1 > f0), (rung - f0) / np.where(f1 > f0, f1 - f0, 1.0), 0.0)
            vm = m[prev] + w * (m[nxt] - m[prev])
            vc = c[prev] + w * (c[nxt] - c[prev])
            ok = has_prev & reached
        met[ok, j] = vm[ok]
        cst[ok, j] = vc[ok]
    return met, cst
