"""The matplotlib twin of :func:`mf_sched.visualization.plot_race` (as :mod:`optuna.visualization.matplotlib` is
of :mod:`optuna.visualization`): the same two panels, for a PNG, a paper or a notebook without plotly.

Example:
    >>> from mf_sched import FidelityLadder
    >>> from mf_sched.racing.engine import RungEliminator
    >>> from mf_sched.visualization.matplotlib import plot_race
    >>> eng = RungEliminator(FidelityLadder([1, 3, 9], [0.1, 0.02, 0.0], resources=[1, 3, 9]), sigma=0.01,
    ...                      n_arms=3, rule="race", race_bias=[0.1, 0.02, 0.0])
    >>> eng.report_many(["a", "b", "c"], [[0.6, 0.7, 0.8], [0.3, float("nan"), float("nan")],
    ...                                  [0.5, 0.66, 0.75]])
    >>> _ = eng.eliminate()
    >>> ax_curves, ax_time = plot_race(eng)   # ax_curves.figure.savefig("race.png")
    >>> ax_curves.figure.get_suptitle().startswith("Race: a = 0.8")
    True
"""

from __future__ import annotations

import math
import textwrap
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

__all__ = ["plot_race", "race_axes"]


def plot_race(source: Any) -> tuple[Any, Any]:
    """The race (see :mod:`mf_sched.visualization`) on a new matplotlib figure.

    Args:
        source: what :func:`mf_sched.visualization.race_data` accepts (an Optuna study, a Ray Tune experiment
            folder, a :class:`~mf_sched.racing.engine.RungEliminator`, a :class:`~mf_sched.visualization.RaceData`).

    Returns:
        the two axes `(curves, incumbent over time)`; `axes[0].figure` is the figure.
    """
    from mf_sched.visualization import race_data

    try:
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - exercised without matplotlib only
        raise ImportError('the matplotlib race plot needs matplotlib: pip install "mf-sched[viz]"') from e
    race = race_data(source)
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(11, 8.4), gridspec_kw={"height_ratios": [2.3, 1]})
    race_axes(race, ax1, ax2)
    fig.suptitle(race.title(), x=0.01, y=0.995, ha="left", va="top", fontsize=12)
    sub = "\n".join(textwrap.wrap(subtitle(race), 165))
    fig.text(0.01, 0.962, sub, ha="left", va="top", fontsize=7.5, color="#57606a")
    fig.tight_layout(rect=(0, 0, 1, 0.945 - 0.014 * sub.count("\n")))
    return ax1, ax2


def race_axes(race: RaceData, ax_curves: Any, ax_time: Any) -> None:
    """Draw `race` on two given matplotlib axes (curves, incumbent over time).

    Args:
        race: the race to draw (from :func:`mf_sched.visualization.race_data`).
        ax_curves: the axes for every run's curve, the bounds after each rung, the stops and the incumbent.
        ax_time: the axes for the incumbent over time and each stop when it happened.
    """
    import numpy as np
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D

    handles: dict[str, Any] = {}
    for fate in FATES[::-1]:  # one collection of lines per fate (a Line2D per run took 15 s for 2,000 runs)
        runs = [r for r in race.runs if r.fate == fate and r.curve_x.size]
        if not runs:
            continue
        style = dict(
            color=COLORS[fate], linewidths=2.8 if fate == "best" else 1.3, linestyles="--" if fate == "lost" else
            ":" if fate == "paused" else "-", alpha=0.55 if fate == "stopped" else 0.95, zorder=3 if fate == "best"
            else 2,
        )  # fmt: skip
        ax_curves.add_collection(LineCollection([np.column_stack((r.curve_x, r.curve_y)) for r in runs], **style))
        single = [r for r in runs if r.curve_x.size == 1]
        if single:
            ax_curves.plot([r.curve_x[0] for r in single], [r.curve_y[0] for r in single], ls="", marker="o", ms=3,
                           color=COLORS[fate], alpha=style["alpha"], zorder=style["zorder"])  # fmt: skip
        handles[LABELS[fate]] = Line2D([], [], color=COLORS[fate], lw=style["linewidths"], ls=style["linestyles"])
    ax_curves.autoscale_view()
    bp = bound_points(race)
    if bp["x"]:
        segs = [((x, v), (x, b)) for x, v, b in zip(bp["x"], bp["value"], bp["bound"])]
        ax_curves.add_collection(LineCollection(segs, colors="#8c959f", linewidths=0.8, linestyles=":", zorder=1))
        marker = "^" if race.direction == "maximize" else "v"
        ax_curves.scatter(bp["x"], bp["bound"], marker=marker, s=30, c=bp["color"], edgecolors="white", zorder=4)
        handles["bound on the final value, after each rung"] = Line2D(
            [], [], ls="", marker=marker, color="#57606a", markersize=6
        )
    sp = stop_points(race)
    if sp["x"]:
        ax_curves.scatter(sp["x"], sp["y"], marker="X", s=60, c=sp["color"], edgecolors="black", lw=0.6, zorder=5)
        handles["stopped here"] = Line2D([], [], ls="", marker="X", color=COLORS["stopped"], markeredgecolor="black")
    if race.incumbent:
        inc = race.incumbent[-1]
        word = "lower" if race.direction == "maximize" else "upper"
        ax_curves.axhline(inc.value, color="#1f2328", lw=1.1)
        ax_curves.axhline(inc.bound, color="#1f2328", lw=1.1, ls="--")
        handles[f"incumbent {inc.name}: {fmt(inc.value)}"] = Line2D([], [], color="#1f2328", lw=1.1)
        handles[f"its {word} bound {fmt(inc.bound)}"] = Line2D([], [], color="#1f2328", lw=1.1, ls="--")
    if log_x(race):
        ax_curves.set_xscale("log")
        ax_curves.minorticks_off()
    ax_curves.set_xticks(list(race.resources), [f"{r:g}" for r in race.resources])
    for m, x in enumerate(race.resources):
        ax_curves.axvline(x, color="#d0d7de", lw=0.9, zorder=0)
        ax_curves.annotate(
            f"rung {m}", (x, 1.0), xycoords=("data", "axes fraction"), ha="center", va="bottom", fontsize=8,
            color="#57606a",
        )  # fmt: skip
    ax_curves.set_xlabel("resource (rungs at the grey lines)")
    ax_curves.set_ylabel(race.metric)
    ax_curves.legend(handles.values(), handles.keys(), fontsize=7.5, loc="best", framealpha=0.85)
    ax_curves.set_title("every run's curve, its bound after each rung, and where it was stopped", fontsize=9, pad=14)
    ax_time.set_title("the incumbent over time, and each stop when it happened", fontsize=9)
    # the incumbent over time, and each stop when it happened
    inc_s = incumbent_series(race, last_time(race))
    if inc_s["time"]:
        ax_time.step(inc_s["time"], inc_s["value"], where="post", color=COLORS["best"], lw=1.6, label="incumbent")
        ax_time.step(
            inc_s["time"], inc_s["bound"], where="post", color=COLORS["best"], lw=1.2, ls="--",
            label="its pessimistic bound",
        )  # fmt: skip
    ok = [i for i, t in enumerate(sp["time"]) if not math.isnan(t)]
    if ok:
        ax_time.scatter(
            [sp["time"][i] for i in ok], [sp["bound"][i] for i in ok], marker="X", s=40,
            c=[sp["color"][i] for i in ok], label="a stop, at the bound that lost",
        )  # fmt: skip
    ax_time.set_xlabel(race.time_label)
    ax_time.set_ylabel(race.metric)
    if inc_s["time"] or ok:
        ax_time.legend(fontsize=7.5, loc="best")
    for ax in (ax_curves, ax_time):
        ax.grid(alpha=0.25)
