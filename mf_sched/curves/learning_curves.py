"""Learning curves: the table that ζ(m), γ(m), σ and λ(m) are estimated from, and replayed.

A :class:`LearningCurves` table holds one row per observation of a training run:

| column     | meaning                                                                                   |
|------------|-------------------------------------------------------------------------------------------|
| `config`   | the configuration (an arm): any hashable label; with `task`, the pair (task, config)      |
| `fidelity` | where on its curve the run is: epoch, training step, data fraction, seconds (finite, ≥ 0) |
| `seed`     | the independent replicate (training seed, study); one seed per configuration is allowed   |
| `metric`   | the value reported there (accuracy, loss, ...); `mode` says whether higher is better      |
| `cost`     | elapsed cost to reach that point from scratch (seconds, GPU-hours); optional              |
| `task`     | the dataset / workload / problem; optional (one task)                                     |

With `task` given, configuration ids may repeat across tasks.

Internally the columns are numpy arrays (`config`, `seed` and `task` as integer codes with their
labels kept in first-appearance order), sorted by (configuration, seed, fidelity); a configuration, seed
and fidelity may appear only once. Metrics must be finite: constructors reject NaN/inf (a diverged run)
with an error that names the row, or drop those rows with `nonfinite="drop"` (the count is kept in
:attr:`LearningCurves.n_dropped`). Nothing read from a file is ever evaluated: numbers are parsed with
`float`, curve lists with :func:`json.loads` and then validated.

Where the rows come from:

* :meth:`LearningCurves.from_records` — an iterable of mappings (one per observation). This is how the
  integrations build a table: an Optuna study gives `config = trial.number`, `fidelity = step`,
  `metric` = the intermediate value at that step, `seed` = a user attribute or 0, `cost` = seconds
  since the trial started; a Ray Tune results directory gives `config` = trial id,
  `fidelity = training_iteration`, `metric` = the reported metric, `cost = time_total_s`.
* :meth:`LearningCurves.from_csv` — a long table (one row per observation), or a wide one whose metric
  column holds each run's whole curve as a JSON list (`layout="list"`, as in the TaskSet file).
* :meth:`LearningCurves.from_dataframe` — a pandas (or any column-indexable) data frame, duck-typed.
* the loaders of :mod:`mf_sched.curves.datasets` (LCBench, TaskSet, DeepOBS, AlgoPerf).

:meth:`LearningCurves.values_at` reads every run at a ladder of fidelities (`how="previous"`: the last
value reported at or before the rung, what a pruner sees; `"interpolate"`; `"exact"`) and returns a
:class:`RungValues` — dense `(configurations, seeds, rungs)` arrays with NaN where a run has no value —
from which :mod:`mf_sched.curves.calibration` estimates the ladder and :mod:`mf_sched.curves.replay` builds benchmarks.

Example:
    >>> curves = LearningCurves.from_records(
    ...     [{"config": c, "epoch": e, "acc": a}
    ...      for c, accs in {"a": [0.5, 0.7, 0.8], "b": [0.6, 0.65, 0.7]}.items()
    ...      for e, a in zip([1, 3, 9], accs)],
    ...     metric="acc", mode="max", fidelity="epoch")
    >>> curves
    LearningCurves(acc, mode=max, 2 configurations, 1 seed, 1 task, 6 rows, epoch 1..9)
    >>> rv = curves.values_at([1, 3, 9])
    >>> rv.bias().round(2).tolist()        # score(m) − score(top), higher is better
    [[-0.3, -0.1, 0.0], [-0.1, -0.05, 0.0]]
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mf_sched.curves._readers import (
    _Spec,
    check_mode,
    csv_file_columns,
    expand_lists,
    frame_columns,
    parse_fidelities,
    read_csv_columns,
    record_columns,
    validate_columns,
)
from mf_sched.curves._rung_values import RungValues, read_runs_at

__all__ = ["LearningCurves", "RungValues", "check_mode", "parse_fidelities", "read_csv_columns"]

_HOWS = ("previous", "interpolate", "exact")


# ------------------------------------------------------------------------------------------ the table
class LearningCurves:
    """A table of learning curves: (configuration, fidelity, seed, metric, elapsed cost, task) rows.

    Args:
        config: configuration label of every row (strings or integers).
        fidelity: position on the curve (epoch, step, fraction, ...), finite and `≥ 0`.
        metric: the reported value; finite (see `nonfinite`).
        seed: replicate label of every row (default: one seed).
        cost: elapsed cost to reach the row from scratch (default: unknown); NaN marks a missing value.
        task: task label of every row (default: one task). A configuration is (task, config).
        metric_name: display name of the metric.
        fidelity_name: display name of the fidelity.
        cost_name: display name of the cost.
        mode: `"max"` when higher is better (accuracy), `"min"` when lower is better (loss).
        params: optional hyperparameters per configuration: a mapping from the configuration's label
            (`(task, config)` when tasks are given) to a JSON-safe mapping.
        source: free text saying where the curves come from.
        nonfinite: `"error"` (default) rejects a NaN/inf metric naming its row; `"drop"` removes
            those rows (diverged runs) and counts them in :attr:`n_dropped`.

    Example:
        >>> c = LearningCurves(config=[0, 0, 1, 1], fidelity=[1, 2, 1, 2], metric=[0.9, 0.5, 0.8, 0.6],
        ...                    mode="min", metric_name="loss")
        >>> c.n_configs, c.fidelities.tolist(), c.score[:2].tolist()
        (2, [1.0, 2.0], [-0.9, -0.5])
    """

    def __init__(
        self,
        config: Any,
        fidelity: Any,
        metric: Any,
        *,
        seed: Any = None,
        cost: Any = None,
        task: Any = None,
        metric_name: str = "metric",
        mode: str = "max",
        fidelity_name: str = "fidelity",
        cost_name: str | None = None,
        params: Mapping[Any, Mapping[str, Any]] | None = None,
        source: str | None = None,
        nonfinite: str = "error",
    ) -> None:
        columns = validate_columns(
            config,
            fidelity,
            metric,
            seed=seed,
            cost=cost,
            task=task,
            metric_name=metric_name,
            mode=mode,
            fidelity_name=fidelity_name,
            cost_name=cost_name,
            params=params,
            nonfinite=nonfinite,
        )
        self._init(**columns, source=source)

    # ------------------------------------------------------------------ construction from validated codes
    def _init(
        self,
        config: np.ndarray,
        fidelity: np.ndarray,
        metric: np.ndarray,
        seed: np.ndarray,
        cost: np.ndarray,
        config_task: np.ndarray,
        *,
        config_labels: tuple[Any, ...],
        seed_labels: tuple[Any, ...],
        task_labels: tuple[Any, ...],
        metric_name: str,
        mode: str,
        fidelity_name: str,
        cost_name: str | None,
        params: tuple[Mapping[str, Any] | None, ...] | None,
        source: str | None,
        n_dropped: int,
    ) -> None:
        order = np.lexsort((fidelity, seed, config))
        config, seed, fidelity = config[order], seed[order], fidelity[order]
        dup = (np.diff(config) == 0) & (np.diff(seed) == 0) & (np.diff(fidelity) == 0)
        if dup.any():
            i = int(np.flatnonzero(dup)[0])
            task = task_labels[config_task[config[i]]]
            where = "" if len(task_labels) == 1 else f"task {task!r}, "
            raise ValueError(
                f"duplicate observation: {where}configuration {config_labels[config[i]]!r}, "
                f"seed {seed_labels[seed[i]]!r}, {fidelity_name} {fidelity[i]:g} appears more than once"
            )
        self.config = config
        self.seed = seed
        self.fidelity = fidelity
        self.metric = metric[order]
        self.cost = cost[order]
        self.config_task = config_task
        self.task = config_task[config]
        for a in (self.config, self.seed, self.fidelity, self.metric, self.cost, self.config_task, self.task):
            a.setflags(write=False)
        self.config_labels = config_labels
        self.seed_labels = seed_labels
        self.task_labels = task_labels
        self.metric_name = metric_name
        self.mode = mode
        self.fidelity_name = fidelity_name
        self.cost_name = cost_name
        self.params = params
        self.source = source
        self.n_dropped = n_dropped

    def _derive(self, keep: np.ndarray, *, fidelity: np.ndarray | None = None, note: str = "") -> LearningCurves:
        """A table of the rows `keep` (boolean mask), configurations/seeds/tasks re-coded."""
        if not keep.any():
            raise ValueError("the selection leaves no rows")
        cfg_old = self.config[keep]
        cfg_used = np.unique(cfg_old)
        cfg_map = np.full(self.n_configs, -1, dtype=np.int64)
        cfg_map[cfg_used] = np.arange(cfg_used.size)
        task_used = np.unique(self.config_task[cfg_used])
        task_map = np.full(self.n_tasks, -1, dtype=np.int64)
        task_map[task_used] = np.arange(task_used.size)
        seed_used = np.unique(self.seed[keep])
        seed_map = np.full(self.n_seeds, -1, dtype=np.int64)
        seed_map[seed_used] = np.arange(seed_used.size)
        out = LearningCurves.__new__(LearningCurves)
        out._init(
            cfg_map[cfg_old],
            (self.fidelity if fidelity is None else fidelity)[keep],
            self.metric[keep],
            seed_map[self.seed[keep]],
            self.cost[keep],
            task_map[self.config_task[cfg_used]],
            config_labels=tuple(self.config_labels[i] for i in cfg_used.tolist()),
            seed_labels=tuple(self.seed_labels[i] for i in seed_used.tolist()),
            task_labels=tuple(self.task_labels[i] for i in task_used.tolist()),
            metric_name=self.metric_name,
            mode=self.mode,
            fidelity_name=self.fidelity_name,
            cost_name=self.cost_name,
            params=None if self.params is None else tuple(self.params[i] for i in cfg_used.tolist()),
            source=(self.source or "") + note if note else self.source,
            n_dropped=self.n_dropped,
        )
        return out

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_records(
        cls,
        records: Iterable[Mapping[str, Any]],
        *,
        metric: str,
        mode: str,
        config: str = "config",
        fidelity: str = "fidelity",
        seed: str | None = None,
        cost: str | None = None,
        task: str | None = None,
        **kwargs: Any,
    ) -> LearningCurves:
        """Build from mappings, one per observation; the keyword arguments name their keys.

        Args:
            records: the observations, e.g. `{"config": 3, "epoch": 9, "acc": 0.71}`; every one must hold
                every key named below (an error names the first record that lacks one).
            metric: key of the metric.
            mode: `"max"` when higher is better (accuracy), `"min"` when lower is better (loss).
            config: key of the configuration label.
            fidelity: key of the fidelity (epoch, step, ...).
            seed: key of the seed, or None: one seed.
            cost: key of the elapsed cost, or None: no cost.
            task: key of the task, or None: one task.
            **kwargs: passed to the constructor: `source`, `params`, `nonfinite`, and the display names
                `metric_name`, `fidelity_name`, `cost_name` (default: the keys).

        >>> LearningCurves.from_records([{"config": 1, "fidelity": 2, "loss": 0.5}], metric="loss",
        ...                             mode="min").n_rows
        1
        """
        spec = _Spec(metric, fidelity, config, seed, cost, task)
        return cls._from_columns(record_columns(records, spec), spec, mode=mode, **kwargs)

    @classmethod
    def from_dataframe(
        cls,
        df: Any,
        *,
        metric: str,
        mode: str,
        config: str = "config",
        fidelity: str = "fidelity",
        seed: str | None = None,
        cost: str | None = None,
        task: str | None = None,
        layout: str = "long",
        **kwargs: Any,
    ) -> LearningCurves:
        """Build from a data frame (pandas, or anything with `df[name]` and `.columns`; duck-typed, so
        the core does not import pandas). Columns as in :meth:`from_csv`.

        Args:
            df: the data frame; each named column is read with `to_numpy()` when it has one.
            metric: column name of the metric.
            mode: `"max"` when higher is better (accuracy), `"min"` when lower is better (loss).
            config: column name of the configuration.
            fidelity: column name of the fidelity (may be absent with `layout="list"`).
            seed: column name of the seed, or None: one seed.
            cost: column name of the cost, or None: no cost.
            task: column name of the task, or None: one task.
            layout: `"long"` (one row per observation) or `"list"` (one row per run whose metric cell, and
                cost and fidelity cells, hold lists or JSON lists; see :meth:`from_csv`).
            **kwargs: passed to the constructor: `source`, `params`, `nonfinite`, display names; with
                `layout="list"` also `list_fidelities` (see :meth:`from_csv`).

        >>> class Frame(dict):                      # the smallest duck-typed frame
        ...     columns = property(lambda self: list(self))
        >>> LearningCurves.from_dataframe(Frame(config=["a", "a"], fidelity=[1, 2], acc=[0.5, 0.6]),
        ...                               metric="acc", mode="max").n_rows
        2
        """
        spec = _Spec(metric, fidelity, config, seed, cost, task)
        cols = frame_columns(df, spec, layout)
        if layout == "list":
            return cls._from_list_columns(cols, spec, mode=mode, **kwargs)
        return cls._from_columns(cols, spec, mode=mode, **kwargs)

    @classmethod
    def from_csv(
        cls,
        path: str | os.PathLike[str],
        *,
        metric: str,
        mode: str,
        config: str = "config",
        fidelity: str = "fidelity",
        seed: str | None = None,
        cost: str | None = None,
        task: str | None = None,
        layout: str = "long",
        list_fidelities: Sequence[float] | None = None,
        where: Mapping[str, Sequence[str]] | None = None,
        delimiter: str = ",",
        **kwargs: Any,
    ) -> LearningCurves:
        """Read a CSV file (plain or gzip-compressed), validating every field.

        Args:
            path: the file (at most 2 GiB, UTF-8); a header row names the columns.
            metric: column name of the metric.
            mode: `"max"` when higher is better (accuracy), `"min"` when lower is better (loss).
            config: column name of the configuration.
            fidelity: column name of the fidelity.
            seed: column name of the seed (optional).
            cost: column name of the cost (optional).
            task: column name of the task (optional).
            layout: `"long"` (one row per observation) or `"list"`: one row per run whose `metric`
                column (and `cost`, and `fidelity` when present) holds a JSON list; the fidelities are
                then that column's lists, else `list_fidelities`, else `1, 2, …, n`. `null` and
                `NaN` entries are non-finite metrics (see `nonfinite`).
            list_fidelities: with `layout="list"` and no fidelity column, the fidelities of every list
                (strictly increasing, > 0; every list must be this long). None: `1, 2, …, n`.
            where: keep only rows whose column values are among the given strings, e.g.
                `{"workload": ["wmt_jax"]}` (filtered while reading: large files stay cheap).
            delimiter: the field separator (`","`; e.g. `";"` for semicolon-separated files).
            **kwargs: passed to the constructor: `source` (default: the path), `params`, `nonfinite`, and
                the display names `metric_name`, `fidelity_name`, `cost_name` (default: the column names).

        Example:
            >>> import tempfile, pathlib
            >>> p = pathlib.Path(tempfile.mkdtemp()) / "c.csv"
            >>> _ = p.write_text('run,loss\\nr1,"[0.9, 0.5, 0.4]"\\nr2,"[0.8, 0.7, NaN]"\\n')
            >>> c = LearningCurves.from_csv(p, metric="loss", mode="min", config="run", layout="list",
            ...                             nonfinite="drop")
            >>> c.n_rows, c.n_dropped, c.fidelities.tolist()
            (5, 1, [1.0, 2.0, 3.0])
        """
        p = Path(path)
        spec = _Spec(metric, fidelity, config, seed, cost, task)
        cols = csv_file_columns(p, spec, layout=layout, where=where, delimiter=delimiter)
        kwargs.setdefault("source", str(p))
        try:
            if layout == "list":
                return cls._from_list_columns(cols, spec, mode=mode, list_fidelities=list_fidelities, **kwargs)
            return cls._from_columns(cols, spec, mode=mode, **kwargs)
        except ValueError as e:
            raise ValueError(f"{p}: {e}") from None

    @classmethod
    def _from_columns(cls, cols: Mapping[str, Any], spec: _Spec, *, mode: str, **kwargs: Any) -> LearningCurves:
        return cls(
            config=cols[spec.config],
            fidelity=cols[spec.fidelity],
            metric=cols[spec.metric],
            seed=None if spec.seed is None else cols[spec.seed],
            cost=None if spec.cost is None else cols[spec.cost],
            task=None if spec.task is None else cols[spec.task],
            metric_name=kwargs.pop("metric_name", spec.metric),
            fidelity_name=kwargs.pop("fidelity_name", spec.fidelity),
            cost_name=kwargs.pop("cost_name", spec.cost),
            mode=mode,
            **kwargs,
        )

    @classmethod
    def _from_list_columns(
        cls,
        cols: Mapping[str, Any],
        spec: _Spec,
        *,
        mode: str,
        list_fidelities: Sequence[float] | None = None,
        **kwargs: Any,
    ) -> LearningCurves:
        """Expand one-row-per-run columns whose cells are JSON lists (or Python sequences)."""
        return cls._from_columns(expand_lists(cols, spec, list_fidelities), spec, mode=mode, **kwargs)

    # ------------------------------------------------------------------ accessors
    @property
    def n_rows(self) -> int:
        """Number of observations."""
        return int(self.metric.size)

    def __len__(self) -> int:
        return self.n_rows

    @property
    def n_configs(self) -> int:
        """Number of configurations (a (task, config) pair counts once)."""
        return len(self.config_labels)

    @property
    def n_seeds(self) -> int:
        """Number of distinct seed labels."""
        return len(self.seed_labels)

    @property
    def n_tasks(self) -> int:
        """Number of distinct task labels."""
        return len(self.task_labels)

    @property
    def fidelities(self) -> np.ndarray:
        """The distinct fidelities, sorted."""
        return np.unique(self.fidelity)

    @property
    def score(self) -> np.ndarray:
        """The metric oriented so that higher is better (`−metric` for `mode="min"`): what policies maximise."""
        return self.metric if self.mode == "max" else -self.metric

    @property
    def has_cost(self) -> bool:
        """True when some row has a measured elapsed cost."""
        return bool(np.isfinite(self.cost).any())

    def seeds_per_config(self) -> np.ndarray:
        """Number of distinct seeds of each configuration."""
        pairs = np.unique(self.config * self.n_seeds + self.seed)
        return np.bincount(pairs // self.n_seeds, minlength=self.n_configs)

    def config_key(self, k: int) -> Any:
        """The label of configuration `k`: `(task, config)` when there are several tasks.

        Args:
            k: the configuration's integer code, `0 .. n_configs − 1`.
        """
        lab = self.config_labels[k]
        return (self.task_labels[self.config_task[k]], lab) if self.n_tasks > 1 else lab

    def __repr__(self) -> str:
        f = self.fidelities
        s = "s" if self.n_seeds != 1 else ""
        t = "s" if self.n_tasks != 1 else ""
        return (
            f"LearningCurves({self.metric_name}, mode={self.mode}, {self.n_configs} configurations, "
            f"{self.n_seeds} seed{s}, {self.n_tasks} task{t}, {self.n_rows} rows, "
            f"{self.fidelity_name} {f[0]:g}..{f[-1]:g})"
        )

    # ------------------------------------------------------------------ transformations
    def select(self, *, tasks: Iterable[Any] | None = None, configs: Iterable[int] | None = None) -> LearningCurves:
        """The rows of some tasks (by label) and/or some configurations (by integer code).

        Configurations, seeds and tasks are coded again from 0 in the result.

        Args:
            tasks: task labels to keep (each must exist), or None: every task.
            configs: configuration codes (`0 .. n_configs − 1`) to keep, or None: every configuration.

        >>> c = LearningCurves(config=[0, 1, 2], fidelity=[1, 1, 1], metric=[1., 2., 3.], task=["a", "b", "b"])
        >>> c.select(tasks=["b"]).n_configs, c.select(configs=[0]).task_labels
        (2, ('a',))
        """
        keep = np.ones(self.n_rows, dtype=bool)
        if tasks is not None:
            want = list(tasks)
            unknown = [t for t in want if t not in self.task_labels]
            if unknown:
                shown = list(self.task_labels[:10]) + (["..."] if self.n_tasks > 10 else [])
                raise ValueError(f"unknown task(s) {unknown}; known: {shown}")
            codes = [self.task_labels.index(t) for t in want]
            keep &= np.isin(self.task, codes)
        if configs is not None:
            idx = np.asarray(list(configs), dtype=np.int64)
            if idx.size and (idx.min() < 0 or idx.max() >= self.n_configs):
                raise ValueError(f"configs must be integer codes in 0..{self.n_configs - 1}")
            keep &= np.isin(self.config, idx)
        return self._derive(keep)

    def runs(self) -> tuple[np.ndarray, np.ndarray]:
        """`(starts, lengths)`: the first row and the number of rows of every run (configuration, seed),
        in the table's sorted row order; run `i` is rows `starts[i] .. starts[i] + lengths[i] − 1`, so
        its last fidelity is `fidelity[starts + lengths − 1]`."""
        change = np.ones(self.n_rows, dtype=bool)
        change[1:] = (np.diff(self.config) != 0) | (np.diff(self.seed) != 0)
        starts = np.flatnonzero(change)
        return starts, np.diff(np.append(starts, self.n_rows))

    _runs = runs  # the former private name, kept as an alias

    def to_fraction(self, *, min_length: float = 0.9) -> LearningCurves:
        """Fidelity as the fraction of each run completed (last observation = 1.0).

        Args:
            min_length: in `[0, 1]`: runs whose last fidelity is below `min_length` times the longest run of
                their task are dropped (crashed or cut-short runs would otherwise look complete); 0 keeps
                all.

        >>> c = LearningCurves(config=[0, 0, 1, 1], fidelity=[50, 100, 10, 20], metric=[1., 2., 3., 4.])
        >>> f = c.to_fraction(); f.fidelities.tolist(), f.n_configs
        ([0.5, 1.0], 1)
        """
        if not 0 <= min_length <= 1:
            raise ValueError(f"min_length = {min_length} is out of range; accepted: 0..1")
        starts, lengths = self.runs()
        last = self.fidelity[starts + lengths - 1]
        run_task = self.task[starts]
        longest = np.zeros(self.n_tasks)
        np.maximum.at(longest, run_task, last)
        ok_run = (last >= min_length * longest[run_task]) & (last > 0)  # a run that diverged at once is too short
        if min_length == 0 and np.any(last <= 0):
            raise ValueError("a run ends at fidelity 0; fractions of it are undefined (use min_length > 0)")
        per_row_last = np.repeat(np.where(last > 0, last, 1.0), lengths)
        keep = np.repeat(ok_run, lengths)
        note = f" (fraction of each run; runs shorter than {min_length:g} of their task's longest dropped)"
        out = self._derive(keep, fidelity=self.fidelity / per_row_last, note=note)
        out.fidelity_name = f"fraction of {self.fidelity_name}"
        return out

    # ------------------------------------------------------------------ export
    def to_records(self) -> list[dict[str, Any]]:
        """One dict per row with keys config, fidelity, seed, metric, cost (None if unknown), task."""
        cfg = [self.config_labels[i] for i in self.config.tolist()]
        seeds = [self.seed_labels[i] for i in self.seed.tolist()]
        tasks = [self.task_labels[i] for i in self.task.tolist()]
        return [
            {
                "config": c,
                "fidelity": f,
                "seed": s,
                "metric": m,
                "cost": None if math.isnan(x) else x,
                "task": t,
            }
            for c, f, s, m, x, t in zip(
                cfg, self.fidelity.tolist(), seeds, self.metric.tolist(), self.cost.tolist(), tasks
            )
        ]

    def to_csv(self, path: str | os.PathLike[str]) -> None:
        """Write a long CSV readable by :meth:`from_csv` (columns task, config, seed, fidelity, metric, cost).

        Numbers are written with `repr` (read back exactly); an unknown cost is an empty field.

        Args:
            path: the file to write (overwritten).

        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "c.csv"
        >>> c = LearningCurves(config=["x", "x"], fidelity=[1, 2], metric=[0.2, 0.3], cost=[5, 9])
        >>> c.to_csv(p)
        >>> LearningCurves.from_csv(p, metric="metric", mode="max", seed="seed", cost="cost",
        ...                         task="task").cost.tolist()
        [5.0, 9.0]
        """
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["task", "config", "seed", "fidelity", "metric", "cost"])
            for r in self.to_records():
                cost = "" if r["cost"] is None else repr(r["cost"])
                w.writerow([r["task"], r["config"], r["seed"], repr(r["fidelity"]), repr(r["metric"]), cost])

    # ------------------------------------------------------------------ reading at rungs
    def values_at(self, rungs: Sequence[float], *, how: str = "previous", tolerance: float = 0.0) -> RungValues:
        """Every run's metric (and cost) at a ladder of fidelities.

        Args:
            rungs: strictly increasing fidelities; the last is the target (full fidelity).
            how: `"previous"` — the last value reported at or before the rung (what a pruner at the
                rung sees), provided the run reached the rung; `"interpolate"` — linear between the
                reports around the rung; `"exact"` — only a report at the rung itself.
            tolerance: relative slack: a run that stops within `tolerance × rung` below a rung still
                counts as having reached it (its last value is used), and `"exact"` accepts a report that
                close to the rung. Default 0.

        Returns:
            a :class:`RungValues` with `(configurations, seeds, rungs)` arrays, NaN where missing.

        >>> c = LearningCurves(config=[0, 0, 0], fidelity=[1, 2, 4], metric=[1.0, 2.0, 4.0])
        >>> c.values_at([1, 3, 4]).metric[0, 0].tolist()
        [1.0, 2.0, 4.0]
        >>> c.values_at([1, 3, 4], how="interpolate").metric[0, 0].tolist()
        [1.0, 3.0, 4.0]
        >>> c.values_at([1, 3, 5]).metric[0, 0].tolist()    # the run never reached 3 exactly nor 5
        [1.0, 2.0, nan]
        """
        r = parse_fidelities(rungs, "rungs")
        if how not in _HOWS:
            raise ValueError(f"how = {how!r} is unknown; accepted: {', '.join(map(repr, _HOWS))}")
        if not (math.isfinite(tolerance) and 0 <= tolerance < 1):
            raise ValueError(f"tolerance = {tolerance} is out of range; accepted: 0 <= tolerance < 1")
        starts, lengths = self.runs()
        run_met, run_cst = read_runs_at(
            r, self.fidelity, self.metric, self.cost, starts, lengths, how=how, tolerance=tolerance
        )
        met = np.full((self.n_configs, self.n_seeds, r.size), np.nan)
        cst = np.full_like(met, np.nan)
        met[self.config[starts], self.seed[starts]] = run_met  # a run is one (configuration, seed) pair
        cst[self.config[starts], self.seed[starts]] = run_cst
        return RungValues(
            rungs=r,
            metric=met,
            cost=cst,
            mode=self.mode,
            metric_name=self.metric_name,
            config_task=np.asarray(self.config_task),
            n_tasks=self.n_tasks,
        )
