"""See the race: every decision of the racing rule in one figure, for an Optuna study or a Ray Tune experiment.

:func:`plot_race` draws, as a plotly figure (as :mod:`optuna.visualization` does; the matplotlib twin is
:func:`mf_sched.visualization.matplotlib.plot_race`, as :mod:`optuna.visualization.matplotlib`):

* **top panel** — every run's learning curve against the resource (epochs), coloured by its fate; at each rung
  it reached, its value (a dot) and the optimistic bound on its final value (a triangle, joined to the value by a
  dotted line): a run is stopped once that bound cannot reach the incumbent's pessimistic bound (the dashed
  line; the solid line is the incumbent's value); a cross marks where each run was stopped, with the reason on
  hover; runs left *uncovered* by the certificate (ended below the top rung without being stopped) are dashed;
* **bottom panel** — the incumbent's value and pessimistic bound over time, and each stop at the time it
  happened, at the height of the bound that lost;
* **title** — the answer and the certificate: ε, δ and where the bias bound came from.

What can be plotted (`source`):

* an Optuna `Study` raced by :class:`~mf_sched.integrations.optuna.MFSampler` or
  :class:`~mf_sched.integrations.optuna.MFPruner` — the live study, or one loaded from its storage
  (`optuna.load_study`): the adapters store the race's configuration with the study (user attribute
  `race:config`), and the numbers behind each stop on the pruned trial (`race:*` user attributes);
* a Ray Tune experiment folder written with
  :class:`~mf_sched.integrations.ray.SchedulerStateCallback` (or its state file): read as JSON and CSV, nothing
  unpickled, and Ray is not imported;
* a :class:`~mf_sched.racing.engine.RungEliminator` or a :class:`RaceData`.

`mf-sched report STORAGE_OR_FOLDER` writes the same figure, the certificate and a table of the runs into one
self-contained HTML page (:func:`mf_sched.visualization.report.write_report`).

Plotting needs `plotly` (`pip install "mf-sched[viz]"`) or `matplotlib`; both are imported only when a
figure is drawn.

Example:
    >>> from mf_sched import FidelityLadder
    >>> from mf_sched.racing.engine import RungEliminator
    >>> from mf_sched.visualization import plot_race
    >>> ladder = FidelityLadder([1, 3, 9], [0.1, 0.02, 0.0], resources=[1, 3, 9])
    >>> eng = RungEliminator(ladder, sigma=0.01, n_arms=3, rule="race", race_bias=[0.1, 0.02, 0.0])
    >>> eng.report_many(["a", "b", "c"], [[0.6, 0.7, 0.8], [0.3, float("nan"), float("nan")],
    ...                                  [0.5, 0.66, 0.75]])
    >>> _ = eng.eliminate()
    >>> fig = plot_race(eng)                     # a plotly Figure: fig.show(), fig.write_html("race.html")
    >>> fig.layout.title.text.startswith("Race: a = 0.8")
    True
"""

from __future__ import annotations

import os
from typing import Any

from mf_sched.visualization._data import FATES, IncumbentStep, RaceData, RaceRun

__all__ = ["plot_race", "race_data", "RaceData", "RaceRun", "IncumbentStep", "FATES"]


def race_data(source: Any) -> RaceData:
    """The race of `source` as :class:`RaceData` (see the module docstring for what `source` may be).

    Args:
        source: an Optuna study, a Ray Tune experiment folder (or its state file), a
            :class:`~mf_sched.racing.engine.RungEliminator` or a :class:`RaceData`.

    Raises:
        TypeError: `source` is none of these.
        FileNotFoundError: a folder without the scheduler's state file.
        ValueError: a malformed state file, or a study with nothing raced.
    """
    from mf_sched.racing.engine import RungEliminator

    if isinstance(source, RaceData):
        return source
    if isinstance(source, RungEliminator):
        return RaceData.from_engine(source)
    if isinstance(source, (str, os.PathLike)):
        from mf_sched.visualization._tune import read_experiment

        return read_experiment(source)
    if hasattr(source, "_storage") and hasattr(source, "_study_id") and hasattr(source, "direction"):
        # an optuna.Study: its reader lives with the Optuna adapter (imported here, lazily, so that the core never
        # imports Optuna at module import)
        from mf_sched.integrations._optuna_readback import study_race_data

        return study_race_data(source)
    raise TypeError(
        f"source = {type(source).__name__} cannot be plotted; accepted: an optuna.Study, a Ray Tune experiment "
        "folder, a RungEliminator or a RaceData"
    )


def plot_race(source: Any) -> Any:
    """The race as a plotly figure (see the module docstring): `plot_race(study).show()`.

    Args:
        source: see :func:`race_data`.

    Returns:
        a `plotly.graph_objects.Figure`.

    Raises:
        ImportError: plotly is not installed (`pip install "mf-sched[viz]"`).
    """
    from mf_sched.visualization._plotly import race_figure

    return race_figure(race_data(source))
