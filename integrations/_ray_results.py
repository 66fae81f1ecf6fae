"""Learning curves from a Tune experiment folder, read without Ray (the `progress.csv` and `params.json` files Tune
writes for every trial), for :func:`mf_sched.curves.calibration.calibrate`; re-exported by
:mod:`mf_sched.integrations.ray`."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

__all__ = ["curves_from_results"]


def curves_from_results(
    path: str | Path, *, metric: str, mode: str, fidelity: str = "training_iteration", metric_name: str | None = None
) -> Any:
    """The learning curves of a finished (or restored) Tune experiment directory as
    :class:`mf_sched.curves.LearningCurves`, for :func:`mf_sched.curves.calibration.calibrate`.

    Reads every trial folder's `params.json` (the configuration) and `progress.csv` (one row per
    reported result; `fidelity` and `metric` columns). Files are parsed as JSON and CSV numbers only;
    rows whose values are missing or not finite are skipped; a folder without both files is ignored.
    Each trial is one run (seed) of its configuration.

    Args:
        path: the experiment directory (`storage_path/name`), holding one folder per trial.
        metric: the `progress.csv` column of the metric.
        mode: `"max"` or `"min"`: whether higher or lower values of the metric are better.
        fidelity: the `progress.csv` column that measures training progress (default `"training_iteration"`).
        metric_name: the metric's display name in the curves (default: `metric`).

    Raises:
        ValueError: `path` is not a folder, `mode` is unknown, a `params.json` is not a JSON object, or no trial
            reported finite values.
    """
    from mf_sched.curves import LearningCurves

    root = Path(path)
    if not root.is_dir():
        raise ValueError(f"path = {str(root)!r} is not a Tune experiment directory")
    if mode not in ("min", "max"):
        raise ValueError(f"mode = {mode!r} is unknown; accepted: 'min', 'max'")
    records = []
    for trial_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        params_file, progress = trial_dir / "params.json", trial_dir / "progress.csv"
        if not (params_file.is_file() and progress.is_file()):
            continue
        params = json.loads(params_file.read_text())
        if not isinstance(params, dict):
            raise ValueError(f"{params_file} does not hold a JSON object of parameters")
        cfg = json.dumps(params, sort_keys=True, default=str)
        with progress.open(newline="") as f:
            for row in csv.DictReader(f):
                try:
                    x, y = float(row.get(fidelity, "")), float(row.get(metric, ""))
                except ValueError:
                    continue
                if math.isfinite(x) and math.isfinite(y):
                    records.append({"config": cfg, "fidelity": x, "metric": y, "seed": trial_dir.name})
    if not records:
        raise ValueError(f"no trial in {str(root)!r} reported finite {metric!r} and {fidelity!r} values")
    return LearningCurves.from_records(
        records, metric="metric", mode=mode, config="config", fidelity="fidelity", seed="seed",
        metric_name=metric_name or metric, fidelity_name=fidelity,
    )  # fmt: skip
