"""Shared helpers of the regret reproductions (``reproduce_kandasamy2016.py``, ``reproduce_wang2023_regret.py``):
seeding, running jobs in processes with progress, mean ± standard error, slopes, and error-band plots (results,
JSON and figures: :mod:`benchmarks._common`)."""

from __future__ import annotations

import math
import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from mf_sched._progress import Progress

__all__ = ["band", "log_slope", "mean_se", "run_jobs", "seeds"]


def seeds(root: int, *keys: int) -> tuple[np.random.Generator, int, int]:
    """An instance generator plus a policy seed and an observation seed, all derived from
    ``SeedSequence([root, *keys])`` (independent of the order and the process the job runs in)."""
    ss = np.random.SeedSequence([root, *keys])
    a, b, c = ss.spawn(3)
    return np.random.default_rng(a), int(b.generate_state(1)[0]), int(c.generate_state(1)[0])


def run_jobs(fn: Callable[[Any], Any], jobs: Sequence[Any], jobs_n: int, desc: str) -> list[Any]:
    """``[fn(j) for j in jobs]``, in ``jobs_n`` spawned processes (1: in this process), with progress."""
    out: list[Any] = []
    with Progress(len(jobs), desc) as bar:
        if jobs_n <= 1 or len(jobs) == 1:
            for j in jobs:
                out.append(fn(j))
                bar.update()
        else:
            ctx = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(max_workers=min(jobs_n, len(jobs)), mp_context=ctx) as ex:
                for r in ex.map(fn, jobs):
                    out.append(r)
                    bar.update()
    return out


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
