"""The race as a plotly figure (:func:`mf_sched.visualization.plot_race`)."""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np

from mf_sched.visualization._data import FATES, RaceData, fmt
from mf_sched.visualization._style import (
    COLORS,
    LABELS,
    bound_points,
    incumbent_series,
    last_time,
    log_x,
    stop_points,
    subtitle,
)

__all__ = ["race_figure"]

#: above this many runs the curves of one fate are one trace (plotly builds and serialises a trace per run slowly:
#: 5,000 traces took 15 s and 6 MB), hovering names the run but not its configuration (the table has it)
MANY_RUNS = 150
#: at most this many curve points are drawn in all: longer curves are thinned (every rung's point is kept)
MAX_POINTS = 60_000
#: at most this many bounds (triangles) and stops (crosses, each with its reason) are drawn, whole runs in the
#: legend's order of fates (the legend says how many were left out): with the curves' cap, the figure stays under
#: about 4 MB however many runs (plotly.js adds 4.8 MB to the report)
MAX_MARKS = 20_000
MAX_STOPS = 5_000


def _import_plotly() -> Any:
    try:
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots
    except ImportError as e:  # pragma: no cover - exercised without plotly only
        raise ImportError(
            'plot_race needs plotly: pip install "mf-sched[viz]" (or use mf_sched.visualization.matplotlib.plot_race)'
        ) from e
    return go, make_subplots


def _params_text(params: Any, limit: int = 8) -> str:
    items = list(params.items())[:limit]
    return "<br>".join(html.escape(f"{k} = {v}") for k, v in items)


def race_figure(race: RaceData) -> Any:
    """The plotly figure of `race` (see :mod:`mf_sched.visualization`)."""
    go, make_subplots = _import_plotly()
    fig = make_subplots(
        rows=2,
        cols=1,
        row_heights=[0.68, 0.32],
        vertical_spacing=0.12,
    )
    many = len(race.runs) > MANY_RUNS
    if many:
        _merged_curves(go, fig, race)
    else:
        _curves(go, fig, race)
    # each rung's value and the bound on the final value held after it
    bp = bound_points(race, MAX_MARKS if many else None)
    if bp["x"] and not many:
        n = len(bp["x"])  # the dotted segments value -> bound, NaN between them (plotly leaves a gap)
        seg_x, seg_y = np.full(3 * n, np.nan), np.full(3 * n, np.nan)
        seg_x[0::3] = seg_x[1::3] = bp["x"]
        seg_y[0::3], seg_y[1::3] = bp["value"], bp["bound"]
        fig.add_trace(
            go.Scatter(
                x=seg_x, y=seg_y, mode="lines", line={"color": "#8c959f", "width": 1, "dash": "dot"},
                hoverinfo="skip", showlegend=False, legendgroup="bounds",
            ),
            row=1, col=1,
        )  # fmt: skip
    if bp["x"]:
        dtype = np.float32 if many else float  # many runs: 4 significant digits are shown, half the bytes
        value, bound = np.asarray(bp["value"], dtype=dtype), np.asarray(bp["bound"], dtype=dtype)
        fig.add_trace(
            go.Scatter(
                x=np.asarray(bp["x"], dtype=dtype),
                y=bound,
                # many runs: the segment value -> bound as an error bar of the triangle (one number a point)
                error_y=(
                    {
                        "type": "data",
                        "symmetric": False,
                        "array": np.maximum(value - bound, 0).astype(dtype),
                        "arrayminus": np.maximum(bound - value, 0).astype(dtype),
                        "width": 0,
                        "thickness": 0.8,
                        "color": "#8c959f",
                    }
                    if many
                    else None
                ),  # fmt: skip
                mode="markers",
                marker={
                    "symbol": "triangle-up" if race.direction == "maximize" else "triangle-down",
                    "size": 8,
                    "color": bp["color"],
                    "line": {"color": "white", "width": 0.5},
                },
                name="bound on the final value, after each rung" + _left_out(bp["left_out"], "bounds"),
                legendgroup="bounds",
                # many runs: the run's name per point and its value as data (a sentence per point weighed 0.5 MB)
                text=[html.escape(n) for n in bp["name"]] if many else bp["text"],
                customdata=value if many else None,
                hovertemplate=(
                    "%{text} at %{x}: value %{customdata:.4g}, bound on its final value %{y:.4g}<extra></extra>"
                    if many
                    else "%{text}<extra></extra>"
                ),
            ),
            row=1,
            col=1,
        )
    sp = stop_points(race, MAX_STOPS if many else None)
    if sp["x"]:
        fig.add_trace(
            go.Scatter(
                x=sp["x"],
                y=sp["y"],
                mode="markers",
                marker={"symbol": "x", "size": 11, "color": sp["color"], "line": {"color": "black", "width": 1}},
                name="stopped here" + _left_out(sp["left_out"], "stops"),
                legendgroup="stops",
                text=sp["text"],
                hovertemplate="%{text}<extra></extra>",
            ),
            row=1,
            col=1,
        )
    # the final incumbent: its value and pessimistic bound, across the rungs
    x0, x1 = race.resources[0], race.resources[-1]
    if race.incumbent:
        inc = race.incumbent[-1]
        word = "lower" if race.direction == "maximize" else "upper"
        for y, dash, label in (
            (inc.value, "solid", f"incumbent {inc.name}: value {fmt(inc.value)}"),
            (inc.bound, "dash", f"incumbent's {word} bound {fmt(inc.bound)}: runs whose bound cannot pass it stop"),
        ):
            fig.add_trace(
                go.Scatter(
                    x=[x0, x1], y=[y, y], mode="lines", line={"color": "#1f2328", "width": 1.2, "dash": dash},
                    name=label, legendgroup="incumbent", hovertemplate=f"{html.escape(label)}<extra></extra>",
                ),
                row=1, col=1,
            )  # fmt: skip
    for m, x in enumerate(race.resources):
        fig.add_vline(x=x, line={"color": "#d0d7de", "width": 1}, row=1, col=1)
        fig.add_annotation(
            x=math.log10(x) if log_x(race) else x, y=1.0, xref="x", yref="y domain", text=f"rung {m}",
            showarrow=False, yanchor="top", xanchor="left", font={"size": 10, "color": "#57606a"},
        )  # fmt: skip
    # bottom: the incumbent over time, and the stops when they happened
    t_end = last_time(race)
    inc_s = incumbent_series(race, t_end)
    if inc_s["time"]:
        fig.add_trace(
            go.Scatter(
                x=inc_s["time"], y=inc_s["value"], mode="lines+markers", line={"color": "#1a7f37", "shape": "hv"},
                marker={"size": 5}, name="incumbent's value over time", legendgroup="incumbent-time",
                hovertemplate=f"incumbent {race.metric} %{{y:.4g}} from %{{x:.4g}}<extra></extra>",
            ),
            row=2, col=1,
        )  # fmt: skip
        fig.add_trace(
            go.Scatter(
                x=inc_s["time"], y=inc_s["bound"], mode="lines",
                line={"color": "#1a7f37", "shape": "hv", "dash": "dash"},
                name="incumbent's pessimistic bound over time", legendgroup="incumbent-time",
                hovertemplate="incumbent's bound %{y:.4g} from %{x:.4g}<extra></extra>",
            ),
            row=2, col=1,
        )  # fmt: skip
    ok = [i for i, t in enumerate(sp["time"]) if not math.isnan(t)]
    if ok:
        fig.add_trace(
            go.Scatter(
                x=[sp["time"][i] for i in ok],
                y=[sp["bound"][i] for i in ok],
                mode="markers",
                marker={"symbol": "x", "size": 9, "color": [sp["color"][i] for i in ok]},
                name="a stop, at the bound that lost",
                legendgroup="stops",
                text=[html.escape(sp["name"][i]) if many else sp["text"][i] for i in ok],  # the reason: top panel
                hovertemplate="%{text}<extra></extra>",
            ),
            row=2,
            col=1,
        )
    ticks = {"tickvals": list(race.resources), "ticktext": [f"{r:g}" for r in race.resources]}
    fig.update_xaxes(title_text="resource (rungs at the grey lines)", row=1, col=1, **ticks)
    if log_x(race):
        fig.update_xaxes(type="log", row=1, col=1)
    fig.update_yaxes(title_text=race.metric, row=1, col=1)
    fig.update_xaxes(
        title_text=f"{race.time_label} (the incumbent over time; each stop when it happened)", row=2, col=1
    )
    fig.update_yaxes(title_text=race.metric, row=2, col=1)
    fig.update_layout(
        title={
            "text": f"{html.escape(race.title())}<br><sup>{html.escape(subtitle(race))}</sup>",
            "x": 0.01,
            "xanchor": "left",
        },
        template="plotly_white",
        height=820,
        margin={"t": 110, "r": 20},
        legend={"orientation": "h", "yanchor": "top", "y": -0.09, "x": 0, "font": {"size": 11}},
        hovermode="closest",
    )
    return fig


def _line(fate: str) -> dict[str, Any]:
    return {
        "color": COLORS[fate],
        "width": 3.5 if fate == "best" else 1.6,
        "dash": "dash" if fate == "lost" else "dot" if fate == "paused" else "solid",
    }


def _curves(go: Any, fig: Any, race: RaceData) -> None:
    """One trace per run (hover: its name, fate and configuration), best last (on top)."""
    shown: set[str] = set()
    for fate in FATES[::-1]:
        for r in (r for r in race.runs if r.fate == fate):
            if r.curve_x.size == 0:
                continue
            first = fate not in shown
            shown.add(fate)
            fig.add_trace(
                go.Scatter(
                    x=r.curve_x,
                    y=r.curve_y,
                    mode="lines+markers" if r.curve_x.size == 1 else "lines",
                    line=_line(fate),
                    opacity=0.6 if fate == "stopped" else 0.95,
                    name=LABELS[fate],
                    legendgroup=fate,
                    showlegend=first,
                    hovertemplate=(
                        f"<b>{html.escape(r.name)}</b> ({LABELS[fate]})<br>{race.metric} %{{y:.4g}} at %{{x}}<br>"
                        f"{_params_text(r.params)}<extra></extra>"
                    ),
                ),
                row=1,
                col=1,
            )


def _merged_curves(go: Any, fig: Any, race: RaceData) -> None:
    """One trace per fate, its runs' curves apart by gaps (NaN), best last (on top); a curve of one point is a
    marker; curves are thinned to :data:`MAX_POINTS` points in all (every rung's point kept)."""
    total = sum(r.curve_x.size for r in race.runs)
    stride = max(1, math.ceil(total / MAX_POINTS))
    rungs = np.asarray(race.resources, dtype=float)
    for fate in FATES[::-1]:
        runs = [r for r in race.runs if r.fate == fate and r.curve_x.size]
        if not runs:
            continue
        xs: list[np.ndarray] = []
        ys: list[np.ndarray] = []
        names: list[str] = []
        for r in runs:
            x, y = r.curve_x, r.curve_y
            if stride > 1 and x.size > 2:
                keep = np.zeros(x.size, dtype=bool)
                keep[::stride] = True
                keep[-1] = True
                keep |= np.isin(x, rungs)
                x, y = x[keep], y[keep]
            xs += [x.astype(np.float32), np.array([np.nan], dtype=np.float32)]
            ys += [y.astype(np.float32), np.array([np.nan], dtype=np.float32)]
            names += [html.escape(r.name)] * (x.size + 1)
        fig.add_trace(
            go.Scatter(
                x=np.concatenate(xs),
                y=np.concatenate(ys),
                mode="lines+markers",
                marker={"size": 4, "color": COLORS[fate]},
                line=_line(fate),
                opacity=0.6 if fate == "stopped" else 0.95,
                name=f"{LABELS[fate]} ({len(runs)})",
                legendgroup=fate,
                text=names,
                hovertemplate=f"<b>%{{text}}</b> ({LABELS[fate]})<br>{race.metric} %{{y:.4g}} at %{{x}}<extra></extra>",
            ),
            row=1,
            col=1,
        )


def _left_out(n: int, what: str) -> str:
    return f" ({n:,} {what} of the last runs by fate not drawn)" if n else ""
