"""What both figures share: colours, labels and the points they draw (plotly and matplotlib alike)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mf_sched.visualization._data import FATES, RaceData, fmt

__all__ = ["COLORS", "LABELS", "log_x", "subtitle", "bound_points", "stop_points", "incumbent_series"]

COLORS = {
    "best": "#1a7f37",
    "finished": "#0969da",
    "stopped": "#cf222e",
    "halted": "#bc4c00",
    "lost": "#8250df",
    "paused": "#9a6700",
    "running": "#6e7781",
}
LABELS = {
    "best": "recommended",
    "finished": "reached the top rung",
    "stopped": "stopped by the rule",
    "halted": "halted (η cut, no guarantee)",
    "lost": "uncovered (ended below the top)",
    "paused": "paused (may run again)",
    "running": "still racing",
}
assert set(COLORS) == set(FATES) == set(LABELS)


def log_x(race: RaceData) -> bool:
    """Geometric rungs (1, 3, 9, 27 epochs) read best on a log axis."""
    r = race.resources
    return len(r) > 1 and r[0] > 0 and r[-1] / r[0] >= 8


def subtitle(race: RaceData, max_names: int = 6) -> str:
    """The second title line: the bias bound's source, the runs per fate, the uncovered runs."""
    c = race.counts()
    parts = [f"{n} {LABELS[f]}" for f, n in c.items() if n]
    line = f"{len(race.runs)} runs: " + ", ".join(parts)
    unc = race.certificate.get("uncovered") or []
    if unc:
        shown = ", ".join(unc[:max_names]) + (f" and {len(unc) - max_names} more" if len(unc) > max_names else "")
        line += f" · uncovered: {shown}"
    src = race.certificate.get("bias_source")
    if src:
        line += f" · bias bound: {src}"
    return line


def _by_fate(race: RaceData, limit: int | None) -> list[Any]:
    """The runs in the order the plot keeps them: all of them without `limit`, else the fates in the legend's order
    (the recommended and finished runs first; the lost, paused and running ones are the first left out)."""
    if limit is None:
        return list(race.runs)
    order = {f: i for i, f in enumerate(FATES)}
    return sorted(race.runs, key=lambda r: order.get(r.fate, len(order)))


def bound_points(race: RaceData, limit: int | None = None) -> dict[str, Any]:
    """Every (run, rung below the top) with a bound: x, value, bound, colour, hover text, run name; with `limit`,
    at most that many points, whole runs in the order of :data:`FATES` (`left_out`: the points not kept)."""
    xs, ys, bs, cols, text, names = [], [], [], [], [], []
    top = len(race.resources) - 1
    left_out = 0
    for r in _by_fate(race, limit):
        n = int((~np.isnan(r.rung_values[:top]) & np.isfinite(r.bounds[:top])).sum())
        if limit is not None and len(xs) + n > limit:
            left_out += n
            continue
        for m in range(top):
            v, b = r.rung_values[m], r.bounds[m]
            if math.isnan(v) or not math.isfinite(b):
                continue
            xs.append(race.resources[m])
            ys.append(float(v))
            bs.append(float(b))
            cols.append(COLORS[r.fate])
            text.append(f"{r.name} at rung {m}: value {fmt(v)}, bound on its final value {fmt(b)}")
            names.append(r.name)
    return {"x": xs, "value": ys, "bound": bs, "color": cols, "text": text, "name": names, "left_out": left_out}


def stop_points(race: RaceData, limit: int | None = None) -> dict[str, Any]:
    """Every stopped (or halted) run: where (resource, value), when (time, bound), why and its name; with `limit`, at
    most that many (the stopped runs first, then the halted ones; `left_out`: the stops not kept)."""
    out: dict[str, Any] = {"x": [], "y": [], "time": [], "bound": [], "text": [], "color": [], "name": []}
    out["left_out"] = 0
    for r in _by_fate(race, limit):
        if r.fate not in ("stopped", "halted") or r.stop_rung is None or r.stop_rung < 0:
            continue
        if limit is not None and len(out["x"]) >= limit:
            out["left_out"] += 1
            continue
        m = r.stop_rung
        out["x"].append(race.resources[m])
        out["y"].append(float(r.rung_values[m]))
        out["time"].append(np.nan if r.stop_time is None else float(r.stop_time))
        b = r.evidence.get("bound")
        out["bound"].append(float(b) if b is not None else float(r.rung_values[m]))
        out["text"].append(f"{r.name}: {r.reason}")
        out["color"].append(COLORS[r.fate])
        out["name"].append(r.name)
    return out


def incumbent_series(race: RaceData, t_end: float | None = None) -> dict[str, list[float]]:
    """The incumbent's value and pessimistic bound as step series over time (extended to `t_end`)."""
    t, v, b = [], [], []
    for s in race.incumbent:
        t.append(s.time)
        v.append(s.value)
        b.append(s.bound)
    if t and t_end is not None and t_end > t[-1]:
        t.append(t_end)
        v.append(v[-1])
        b.append(b[-1])
    return {"time": t, "value": v, "bound": b}


def last_time(race: RaceData) -> float | None:
    """The latest time any run reached a rung or was stopped."""
    ts = [float(x) for r in race.runs for x in r.times if not math.isnan(x)]
    ts += [r.stop_time for r in race.runs if r.stop_time is not None]
    return max(ts) if ts else None
