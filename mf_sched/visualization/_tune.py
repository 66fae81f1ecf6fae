"""The race of a Ray Tune experiment, read from its folder without Ray: the scheduler state that
:class:`~mf_sched.integrations.ray.SchedulerStateCallback` writes (JSON, validated field by field by
:meth:`~mf_sched.racing.engine.RungEliminator.from_state_dict`; nothing is unpickled) and each trial folder's
`progress.csv` (numbers only): the learning curves, when each trial reached each rung (the `timestamp`
column) and the scheduler's decisions (the `race/*` columns the callback adds to every result)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from mf_sched._serialize import StateFormatError
from mf_sched.racing.engine import RungEliminator
from mf_sched.visualization._data import RaceData

__all__ = ["STATE_FILE", "STATE_FORMAT", "read_experiment", "read_state"]

#: the file :class:`~mf_sched.integrations.ray.SchedulerStateCallback` writes into the experiment folder
STATE_FILE = "mf_sched-scheduler-state.json"
STATE_FORMAT = "mf_sched.ray.SchedulerState/1"
_MAX_STATE_BYTES = 512 * 2**20  # refuse larger files (a guard against reading an arbitrary file)
_MAX_CSV_BYTES = 256 * 2**20


def read_state(path: str | Path) -> tuple[Path, dict[str, Any]]:
    """`(experiment folder, scheduler state)` from an experiment folder or its state file (validated JSON)."""
    p = Path(path)
    file = p / STATE_FILE if p.is_dir() else p
    if not file.is_file():
        raise FileNotFoundError(
            f"path = {str(p)!r} holds no {STATE_FILE}: pass the experiment folder of a Ray Tune run that had "
            "SchedulerStateCallback(scheduler) in RunConfig(callbacks=[...])"
        )
    if file.stat().st_size > _MAX_STATE_BYTES:
        raise StateFormatError(f"{file} is larger than {_MAX_STATE_BYTES} bytes: not a scheduler state file")
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise StateFormatError(f"{file} is not valid JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != STATE_FORMAT:
        raise StateFormatError(f"{file} is not a scheduler state (format {STATE_FORMAT!r} expected)")
    state = doc.get("state")
    if not isinstance(state, dict) or "engine" not in state:
        raise StateFormatError(f"{file}: 'state' must be a mapping with the key 'engine'")
    return file.parent, state


def _float(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def _read_progress(path: Path) -> list[dict[str, str]]:
    if path.stat().st_size > _MAX_CSV_BYTES:
        raise StateFormatError(f"{path} is larger than {_MAX_CSV_BYTES} bytes: not a Tune progress file")
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def read_experiment(path: str | Path) -> RaceData:
    """The race of a Ray Tune experiment folder (see the module docstring).

    Raises:
        FileNotFoundError: no scheduler state in `path`.
        ValueError: a malformed state, or one saved before the rungs were known.
    """
    root, state = read_state(path)
    if state["engine"] is None:
        raise ValueError(f"{root}: the scheduler state was saved before the rungs were known: nothing to plot yet")
    try:
        engine = RungEliminator.from_state_dict(state["engine"])
    except (KeyError, TypeError, ValueError) as e:
        raise StateFormatError(f"{root / STATE_FILE}: {e}") from None
    mode, metric = state.get("mode"), state.get("metric")
    if mode not in ("min", "max"):
        raise StateFormatError(f"{root / STATE_FILE}: mode = {mode!r}; accepted: 'min', 'max'")
    metric = str(metric) if isinstance(metric, str) else "metric"
    time_attr = state.get("time_attr", "training_iteration")
    time_attr = time_attr if isinstance(time_attr, str) else "training_iteration"
    sign = 1.0 if mode == "max" else -1.0
    configs = state.get("configs", {})
    params = {}
    if isinstance(configs, dict):
        for k, v in configs.items():
            if isinstance(v, dict):
                params[str(k)] = {str(a): b for a, b in v.items() if isinstance(b, (int, float, str, bool))}
    resources = np.asarray(engine.ladder.resources or range(1, engine.M + 1), dtype=float)
    rows_of: dict[str, list[dict[str, str]]] = {}
    for d in sorted(q for q in root.iterdir() if q.is_dir()):
        prog = d / "progress.csv"
        if not prog.is_file():
            continue
        for row in _read_progress(prog):
            tid = row.get("trial_id")
            if tid:
                rows_of.setdefault(tid, []).append(row)
    stamps = [
        _float(r.get("timestamp")) - _float(r.get("time_this_iter_s", 0.0)) for rs in rows_of.values() for r in rs
    ]
    stamps = [s for s in stamps if math.isfinite(s)]
    t0 = min(stamps) if stamps else None
    curves, times, evidence = {}, {}, {}
    for tid, rows in rows_of.items():
        if tid not in engine:
            continue
        xs = np.array([_float(r.get(time_attr)) for r in rows])
        ys = np.array([_float(r.get(metric)) for r in rows])
        curves[tid] = (xs.tolist(), ys.tolist())
        ts = np.array([_float(r.get("timestamp")) for r in rows])
        when = np.full(engine.M, np.nan)
        if t0 is not None:
            for m, res in enumerate(resources):
                hit = np.flatnonzero(np.isfinite(xs) & (xs >= res - 1e-9) & np.isfinite(ts))
                if hit.size:
                    when[m] = ts[hit[0]] - t0
        times[tid] = when
        for r in rows:
            if _float(r.get("race/stopped")) == 1.0:
                bound_key = "race/incumbent_lower_bound" if sign > 0 else "race/incumbent_upper_bound"
                ev = {
                    "rung": _float(r.get("race/stop_rung")),
                    "value": _float(r.get("race/value")),
                    "bound": _float(r.get("race/bound")),
                    "incumbent": r.get("race/incumbent") or None,
                    "incumbent_value": _float(r.get("race/incumbent_value")),
                    "incumbent_bound": _float(r.get(bound_key)),
                }
                ev = {k: v for k, v in ev.items() if v is not None and not (isinstance(v, float) and math.isnan(v))}
                if "rung" in ev:
                    ev["rung"] = int(ev["rung"])
                evidence[tid] = ev
                break
    return RaceData.from_engine(
        engine, sign=sign, metric=metric, names={k: str(k) for k in engine.keys}, params=params, curves=curves,
        times=times if t0 is not None else None, evidence=evidence,
        time_label="seconds since the experiment's first result", source=f"Ray Tune experiment {str(root)!r}",
    )  # fmt: skip
