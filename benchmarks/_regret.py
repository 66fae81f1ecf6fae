"""Shared helpers of the regret reproductions (``reproduce_kandasamy2016.py``, ``reproduce_wang2023_regret.py``):
mean ± standard error, slopes, and error-band plots (seeding, process pools, results, JSON and figures:
:mod:`benchmarks._common`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["band", "log_slope", "mean_se"]


def mean_se(x: Any, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error of the mean along ``axis`` (se = 0 for a single sample)."""
    a = np.asarray(x, dtype=float)
    n = a.shape[axis]
    se = a.std(axis=axis, ddof=1) / math.sqrt(n) if n > 1 else np.zeros_like(a.mean(axis=axis))
    return a.mean(axis=axis), se


def log_slope(capitals: np.ndarray, regret: np.ndarray, start_fraction: float = 0.5) -> float:
    """Least-squares slope of ``regret`` against ``log(capital)`` over the last ``1 − start_fraction`` of the
    log-capital range: the "gradient" of a regret-vs-log-capital curve (Kandasamy et al. §6)."""
    lc = np.log(capitals)
    sel = lc >= lc[0] + start_fraction * (lc[-1] - lc[0])
    return float(np.polyfit(lc[sel], regret[sel], 1)[0])


def band(ax: Any, x: np.ndarray, mean: np.ndarray, se: np.ndarray, label: str, **kw: Any) -> None:
    """A curve with a ± 1 standard-error band."""
    (line,) = ax.plot(x, mean, label=label, **kw)
    ax.fill_between(x, mean - se, mean + se, color=line.get_color(), alpha=0.25, lw=0)
