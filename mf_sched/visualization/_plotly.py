"""The race as a plotly figure (:func:`mf_sched.visualization.plot_race`)."""

from __future__ import annotations

import html
import math
from typing import Any

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
    shown: set[str] = set()
    # the curves, best last (on top)
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
                    line={
                        "color": COLORS[fate],
                        "width": 3.5 if fate == "best" else 1.6,
                        "dash": "dash" if fate == "lost" else "solid",
                    },
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
    # each rung's value and the bound on the final value held after it
    bp = bound_points(race)
    if bp["x"]:
        seg_x: list[Any] = []
        seg_y: list[Any] = []
        for x, v, b in zip(bp["x"], bp["value"], bp["bound"]):
            seg_x += [x, x, None]
            seg_y += [v, b, None]
        fig.add_trace(
            go.Scatter(
                x=seg_x, y=seg_y, mode="lines", line={"color": "#8c959f", "width": 1, "dash": "dot"},
                hoverinfo="skip", showlegend=False, legendgroup="bounds",
            ),
            row=1, col=1,
        )  # fmt: skip
        fig.add_trace(
            go.Scatter(
                x=bp["x"],
                y=bp["bound"],
                mode="markers",
                marker={
                    "symbol": "triangle-up" if race.direction == "maximize" else "triangle-down",
                    "size": 8,
                    "color": bp["color"],
                    "line": {"color": "white", "width": 0.5},
                },
                name="bound on the final value, after each rung",
                legendgroup="bounds",
                text=bp["text"],
                hovertemplate="%{text}<extra></extra>",
            ),
            row=1,
            col=1,
        )
    sp = stop_points(race)
    if sp["x"]:
        fig.add_trace(
            go.Scatter(
                x=sp["x"],
                y=sp["y"],
                mode="markers",
                marker={"symbol": "x", "size": 11, "color": sp["color"], "line": {"color": "black", "width": 1}},
                name="stopped here",
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
                text=[sp["text"][i] for i in ok],
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
