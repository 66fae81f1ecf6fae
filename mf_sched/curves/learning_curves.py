"""Learning curves: the table that ζ(m), γ(m), σ and λ(m) are estimated from, and replayed.

A :class:`LearningCurves` table holds one row per observation of a training run:

=============  =========================================================================================
column         meaning
=============  =========================================================================================
`config`     the configuration (an arm): any hashable label; with `task` given, a configuration is
               the pair (task, config), so ids may repeat across tasks
`fidelity`   where on its curve the run is: epoch, training step, data fraction, seconds (finite, ≥ 0)
`seed`       the independent replicate (training seed, study); one seed per configuration is allowed
`metric`     the value reported there (accuracy, loss, ...); `mode` says whether higher is better
`cost`       elapsed cost to reach that point from scratch (seconds, GPU-hours); optional
`task`       the dataset / workload / problem; optional (one task)
=============  =========================================================================================

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
import gzip
import io
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["LearningCurves", "RungValues", "check_mode", "parse_fidelities", "read_csv_columns"]

_MODES = ("max", "min")
_HOWS = ("previous", "interpolate", "exact")
_NONFINITE = ("error", "drop")
_MAX_CSV_BYTES = 2 * 1024**3


def check_mode(mode: Any) -> str:
    """Validate an optimisation direction: `"max"` (accuracy) or `"min"` (loss).

    >>> check_mode("min")
    'min'
    >>> check_mode("minimize")
    Traceback (most recent call last):
    ...
    ValueError: mode = 'minimize' is unknown; accepted: 'max' (higher is better) or 'min' (lower is better)
    """
    if mode not in _MODES:
        raise ValueError(f"mode = {mode!r} is unknown; accepted: 'max' (higher is better) or 'min' (lower is better)")
    return str(mode)


def parse_fidelities(text: str | Sequence[float], name: str = "fidelities") -> np.ndarray:
    """Parse a ladder of fidelities (`"1,3,9,27"` or a sequence): finite, > 0, strictly increasing.

    >>> parse_fidelities("1, 3,9,27").tolist()
    [1.0, 3.0, 9.0, 27.0]
    >>> parse_fidelities("3,1")
    Traceback (most recent call last):
    ...
    ValueError: fidelities must be strictly increasing: fidelities[1] = 1.0 is not greater than 3.0
    """
    if isinstance(text, str):
        parts = [p.strip() for p in text.split(",")]
        if not text.strip() or any(not p for p in parts):
            raise ValueError(f"{name} must be a comma-separated list of numbers like 1,3,9,27, got {text!r}")
        vals = []
        for i, p in enumerate(parts):
            try:
                vals.append(float(p))
            except ValueError:
                raise ValueError(f"{name}[{i}] = {p!r} is not a number") from None
    else:
        vals = [_number(v, f"{name}[{i}]") for i, v in enumerate(text)]
    a = np.asarray(vals, dtype=float)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name} must hold at least one fidelity")
    for i, v in enumerate(a.tolist()):
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"{name}[{i}] = {v} is out of range; accepted: a finite number > 0")
        if i and not v > a[i - 1]:
            raise ValueError(f"{name} must be strictly increasing: {name}[{i}] = {v} is not greater than {a[i - 1]}")
    return a


def _number(v: Any, name: str) -> float:
    if isinstance(v, bool):
        raise ValueError(f"{name} must be a number, got {v!r}")
    try:
        return float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {v!r}") from None


# ------------------------------------------------------------------------------------------ column parsing
def _float_column(values: Any, name: str, *, allow_missing: bool) -> np.ndarray:
    """A float64 array from numbers or numeric strings; '' / None are NaN when `allow_missing`."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "iuf":
        return values.astype(float, copy=False).ravel()
    if isinstance(values, np.ndarray) and values.dtype.kind == "b":
        raise ValueError(f"column {name!r} must hold numbers, got booleans")
    seq = values.tolist() if isinstance(values, np.ndarray) else list(values)
    clean: list[Any] = []
    for i, v in enumerate(seq):
        if isinstance(v, bool):
            raise ValueError(f"{name}[{i}] = {v!r} must be a number")
        if v is None or (isinstance(v, str) and not v.strip()):
            if not allow_missing:
                raise ValueError(f"{name}[{i}] is missing; every row needs a {name}")
            clean.append(math.nan)
        elif isinstance(v, str):
            try:
                clean.append(float(v))
            except ValueError:
                raise ValueError(f"{name}[{i}] = {v!r} is not a number") from None
        else:
            clean.append(v)
    try:
        return np.asarray(clean, dtype=float).ravel()
    except (TypeError, ValueError):
        for i, v in enumerate(clean):
            try:
                float(v)
            except (TypeError, ValueError):
                raise ValueError(f"{name}[{i}] = {v!r} is not a number") from None
        raise  # pragma: no cover


def _label_column(values: Any, name: str, n: int) -> list[Any]:
    seq = values.tolist() if isinstance(values, np.ndarray) else list(values)
    if len(seq) != n:
        raise ValueError(f"column {name!r} has {len(seq)} values but there are {n} rows")
    for i, v in enumerate(seq):
        if v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and not v.strip()):
            raise ValueError(f"{name}[{i}] is missing; every row needs a {name} label")
        if not isinstance(v, (str, int, float, tuple)) or isinstance(v, bool):
            raise ValueError(f"{name}[{i}] = {v!r} must be a string or a number")
    return seq


def _factorize(labels: list[Any]) -> tuple[np.ndarray, tuple[Any, ...]]:
    """Integer codes in first-appearance order, and the labels."""
    index: dict[Any, int] = {}
    codes = np.fromiter((index.setdefault(v, len(index)) for v in labels), dtype=np.int64, count=len(labels))
    return codes, tuple(index)


def _open_text(path: Path) -> io.TextIOBase:
    with open(path, "rb") as fh:
        magic = fh.read(2)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")  # noqa: SIM115 - closed by the caller


def _json_list(cell: str, name: str, row: int) -> list[Any]:
    try:
        v = json.loads(cell)
    except (json.JSONDecodeError, TypeError):
        raise ValueError(f"{name} in row {row} is not a JSON list: {cell[:60]!r}") from None
    if not isinstance(v, list) or not v:
        raise ValueError(f"{name} in row {row} must be a non-empty JSON list of numbers, got {cell[:60]!r}")
    for j, x in enumerate(v):
        if x is not None and (isinstance(x, bool) or not isinstance(x, (int, float))):
            raise ValueError(f"{name}[{j}] in row {row} = {x!r} is not a number")
    return v


def read_csv_columns(
    path: Path,
    names: Sequence[str],
    *,
    where: Mapping[str, Sequence[str]] | None = None,
    delimiter: str = ",",
    optional: set[str] | frozenset[str] = frozenset(),
) -> dict[str, list[str]]:
    """Read some columns of a CSV file (plain or gzip) as strings, keeping only the rows whose `where`
    columns hold one of the given values (filtered while reading, so large files stay cheap). Missing
    `optional` columns are left out of the result; any other missing column is an error."""
    filters = {k: set(map(str, v)) for k, v in (where or {}).items()}
    with _open_text(path) as fh:
        reader = csv.reader(fh, delimiter=delimiter)
        try:
            header = next(reader)
        except StopIteration:
            raise ValueError(f"{path} is empty; expected a header row") from None
        except (UnicodeDecodeError, OSError, csv.Error, EOFError) as e:
            raise ValueError(f"{path} is not a readable CSV file: {e}") from None
        pos = {name: i for i, name in enumerate(header)}
        for k in list(names) + list(filters):
            if k not in pos and k not in optional:
                raise ValueError(f"{path} has no column {k!r}; its columns are {header}")
        used = [k for k in names if k in pos]
        idx = [pos[k] for k in used]
        fidx = [(pos[k], v) for k, v in filters.items()]
        cols: dict[str, list[str]] = {k: [] for k in used}
        lists = [cols[k] for k in used]
        width = len(header)
        try:
            for line, row in enumerate(reader, start=2):
                if len(row) != width:
                    if not row:
                        continue
                    raise ValueError(f"{path}, line {line}: {len(row)} fields, the header has {width}")
                if fidx and not all(row[i] in allowed for i, allowed in fidx):
                    continue
                for lst, i in zip(lists, idx):
                    lst.append(row[i])
        except (UnicodeDecodeError, OSError, csv.Error, EOFError) as e:
            raise ValueError(f"{path} could not be read: {e}") from None
    return cols


@dataclass(frozen=True)
class _Spec:
    metric: str
    fidelity: str
    config: str
    seed: str | None
    cost: str | None
    task: str | None


def _check_layout(layout: str) -> str:
    if layout not in ("long", "list"):
        raise ValueError(f"layout = {layout!r} is unknown; accepted: 'long', 'list'")
    return layout


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
        mode = check_mode(mode)
        if nonfinite not in _NONFINITE:
            raise ValueError(f"nonfinite = {nonfinite!r} is unknown; accepted: 'error', 'drop'")
        met = _float_column(metric, metric_name, allow_missing=True)
        n = met.size
        if n == 0:
            raise ValueError("a learning-curve table needs at least one row")
        fid = _float_column(fidelity, fidelity_name, allow_missing=False)
        if fid.size != n:
            raise ValueError(f"column {fidelity_name!r} has {fid.size} values but there are {n} rows")
        bad = ~(np.isfinite(fid) & (fid >= 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{fidelity_name}[{i}] = {fid[i]} is out of range; accepted: a finite number >= 0")
        if cost is None:
            cst = np.full(n, np.nan)
        else:
            cst = _float_column(cost, cost_name or "cost", allow_missing=True)
            if cst.size != n:
                raise ValueError(f"column {cost_name or 'cost'!r} has {cst.size} values but there are {n} rows")
            badc = ~np.isnan(cst) & ~(np.isfinite(cst) & (cst >= 0))
            if badc.any():
                i = int(np.flatnonzero(badc)[0])
                raise ValueError(
                    f"{cost_name or 'cost'}[{i}] = {cst[i]} is out of range; accepted: a finite number >= 0 "
                    "(or empty for unknown)"
                )
        cfg_labels = _label_column(config, "config", n)
        seed_labels = [0] * n if seed is None else _label_column(seed, "seed", n)
        task_labels = ["all"] * n if task is None else _label_column(task, "task", n)
        bad = ~np.isfinite(met)
        n_dropped = 0
        all_keys = None
        if params is not None:  # configurations named before dropping rows (a fully diverged one may vanish)
            all_keys = set(cfg_labels if task is None else zip(task_labels, cfg_labels))
        if bad.any():
            if nonfinite == "error":
                i = int(np.flatnonzero(bad)[0])
                raise ValueError(
                    f"{metric_name}[{i}] = {met[i]} is not finite (configuration {cfg_labels[i]!r}, "
                    f"{fidelity_name} {fid[i]:g}); pass nonfinite='drop' to drop such rows (e.g. diverged runs)"
                )
            keep = ~bad
            n_dropped = int(bad.sum())
            if n_dropped == n:
                raise ValueError(f"every {metric_name} value is non-finite; nothing is left")
            idx = np.flatnonzero(keep).tolist()
            met, fid, cst = met[keep], fid[keep], cst[keep]
            cfg_labels = [cfg_labels[i] for i in idx]
            seed_labels = [seed_labels[i] for i in idx]
            task_labels = [task_labels[i] for i in idx]
        task_codes, task_names = _factorize(task_labels)
        if task is None:
            keys: list[Any] = cfg_labels
        else:
            keys = list(zip(task_labels, cfg_labels))
        cfg_codes, cfg_keys = _factorize(keys)
        seed_codes, seed_names = _factorize(seed_labels)
        config_task = np.zeros(len(cfg_keys), dtype=np.int64)
        config_task[cfg_codes] = task_codes
        ps: tuple[Mapping[str, Any] | None, ...] | None = None
        if params is not None:
            if not isinstance(params, Mapping):
                raise ValueError("params must be a mapping from configuration label to its hyperparameters")
            unknown = [k for k in params if k not in all_keys]
            if unknown:
                raise ValueError(f"params names configurations that have no rows: {unknown[:3]}")
            ps = tuple(params.get(k) for k in cfg_keys)
        self._init(
            cfg_codes,
            fid,
            met,
            seed_codes,
            cst,
            config_task,
            config_labels=tuple(k[1] if task is not None else k for k in cfg_keys),
            seed_labels=seed_names,
            task_labels=task_names,
            metric_name=str(metric_name),
            mode=mode,
            fidelity_name=str(fidelity_name),
            cost_name=None if cost is None else str(cost_name or "cost"),
            params=ps,
            source=source,
            n_dropped=n_dropped,
        )

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

        `seed`, `cost` and `task` are optional keys (`None`: not present). Other keyword
        arguments (`source`, `params`, `nonfinite`) go to the constructor.

        >>> LearningCurves.from_records([{"config": 1, "fidelity": 2, "loss": 0.5}], metric="loss",
        ...                             mode="min").n_rows
        1
        """
        spec = _Spec(metric, fidelity, config, seed, cost, task)
        cols: dict[str, list[Any]] = {k: [] for k in _spec_columns(spec)}
        for i, rec in enumerate(records):
            if not isinstance(rec, Mapping):
                raise ValueError(f"record {i} must be a mapping of column name to value, got {type(rec).__name__}")
            for k, lst in cols.items():
                if k not in rec:
                    raise ValueError(f"record {i} has no key {k!r}; it has {sorted(map(str, rec))}")
                lst.append(rec[k])
        return cls._from_columns(cols, spec, mode=mode, **kwargs)

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

        >>> class Frame(dict):                      # the smallest duck-typed frame
        ...     columns = property(lambda self: list(self))
        >>> LearningCurves.from_dataframe(Frame(config=["a", "a"], fidelity=[1, 2], acc=[0.5, 0.6]),
        ...                               metric="acc", mode="max").n_rows
        2
        """
        if not hasattr(df, "columns"):
            raise ValueError(f"df must be a data frame with .columns, got {type(df).__name__}")
        spec = _Spec(metric, fidelity, config, seed, cost, task)
        have = [str(c) for c in df.columns]
        cols: dict[str, Any] = {}
        for k in _spec_columns(spec):
            if k not in have:
                if layout == "list" and k == fidelity:
                    continue
                raise ValueError(f"the data frame has no column {k!r}; it has {have}")
            col = df[k]
            cols[k] = col.to_numpy() if hasattr(col, "to_numpy") else np.asarray(col)
        if _check_layout(layout) == "list":
            return cls._from_list_columns(cols, spec, mode=mode, **kwargs)
        if any(isinstance(v, np.ndarray) and v.dtype == object for v in cols.values()):
            cols = {k: v.tolist() for k, v in cols.items()}
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
            path: the file; a header row names the columns.
            metric: column name of the metric.
            config: column name of the configuration.
            fidelity: column name of the fidelity.
            seed: column name of the seed (optional).
            cost: column name of the cost (optional).
            task: column name of the task (optional).
            layout: `"long"` (one row per observation) or `"list"`: one row per run whose `metric`
                column (and `cost`, and `fidelity` when present) holds a JSON list; the fidelities are
                then that column's lists, else `list_fidelities`, else `1, 2, …, n`. `null` and
                `NaN` entries are non-finite metrics (see `nonfinite`).
            where: keep only rows whose column values are among the given strings, e.g.
                `{"workload": ["wmt_jax"]}` (filtered while reading: large files stay cheap).
            kwargs: `source`, `params`, `nonfinite`, display names.

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
        if not p.is_file():
            raise FileNotFoundError(f"learning-curve file {str(p)!r} does not exist")
        if p.stat().st_size > _MAX_CSV_BYTES:
            raise ValueError(f"{p} is larger than {_MAX_CSV_BYTES} bytes; split it")
        _check_layout(layout)
        spec = _Spec(metric, fidelity, config, seed, cost, task)
        wanted = _spec_columns(spec)
        optional = {fidelity} if layout == "list" else set()
        cols = read_csv_columns(p, wanted, where=where, delimiter=delimiter, optional=optional)
        if not cols[metric]:
            raise ValueError(f"{p} has no data rows" + (f" matching {dict(where or {})}" if where else ""))
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

        def cell_list(v: Any, name: str, row: int) -> list[Any]:
            if isinstance(v, str):
                return _json_list(v, name, row)
            if isinstance(v, (list, tuple, np.ndarray)):
                return list(v)
            raise ValueError(f"{name} in row {row} must be a JSON list, got {type(v).__name__}")

        mets = [cell_list(v, spec.metric, i) for i, v in enumerate(cols[spec.metric])]
        lengths = np.fromiter((len(m) for m in mets), dtype=np.int64, count=len(mets))

        def flat_lists(name: str, what: str) -> list[Any]:
            """Column `name`'s lists, one per row, each as long as the row's metric list, concatenated."""
            lists = [cell_list(v, name, i) for i, v in enumerate(cols[name])]
            for i, (x, m) in enumerate(zip(lists, mets)):
                if len(x) != len(m):
                    raise ValueError(f"row {i}: {len(x)} {what} but {len(m)} {spec.metric} values")
            return [v for x in lists for v in x]

        fixed = None
        if spec.fidelity in cols:
            flat_fid: Any = flat_lists(spec.fidelity, "fidelities")
        else:
            if list_fidelities is not None:
                fixed = parse_fidelities(list_fidelities, "list_fidelities")
                bad = np.flatnonzero(lengths != fixed.size)
                if bad.size:
                    i = int(bad[0])
                    raise ValueError(f"row {i} has {lengths[i]} values but list_fidelities has {fixed.size}")
                flat_fid = np.tile(fixed, len(mets))
            else:
                flat_fid = np.concatenate([np.arange(1, n + 1, dtype=float) for n in lengths.tolist()])
        flat: dict[str, Any] = {spec.metric: [x for m in mets for x in m], spec.fidelity: flat_fid}
        if spec.cost is not None:
            flat[spec.cost] = flat_lists(spec.cost, f"{spec.cost} values")
        for k in (spec.config, spec.seed, spec.task):
            if k is not None:
                vals = cols[k].tolist() if isinstance(cols[k], np.ndarray) else list(cols[k])
                flat[k] = [v for v, n in zip(vals, lengths.tolist()) for _ in range(n)]
        return cls._from_columns(flat, spec, mode=mode, **kwargs)

    # ------------------------------------------------------------------ accessors
    @property
    def n_rows(self) -> int:
        """Number of observations."""
        return int(self.metric.size)

    def __len__(self) -> int:
        return self.n_rows

    @property
    def n_configs(self) -> int:
        return len(self.config_labels)

    @property
    def n_seeds(self) -> int:
        return len(self.seed_labels)

    @property
    def n_tasks(self) -> int:
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
        """The label of configuration `k`: `(task, config)` when there are several tasks."""
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

        Runs whose last fidelity is below `min_length` times the longest run of their task are dropped
        (crashed or cut-short runs would otherwise look complete); use 0 to keep all.

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
        C, S, R = self.n_configs, self.n_seeds, r.size
        met = np.full((C, S, R), np.nan)
        cst = np.full((C, S, R), np.nan)
        starts, lengths = self.runs()
        ends = starts + lengths  # exclusive
        last = self.fidelity[ends - 1]
        rc, rs = self.config[starts], self.seed[starts]
        fid, m, c = self.fidelity, self.metric, self.cost
        eps = 1e-9
        for j, rung in enumerate(r.tolist()):
            le = fid <= rung * (1 + eps)
            n_le = np.add.reduceat(le.astype(np.int64), starts)
            has_prev = n_le > 0
            prev = starts + np.maximum(n_le, 1) - 1
            reached = last >= rung * (1 - tolerance) - eps * rung
            if how == "previous":
                ok = has_prev & reached
                vm, vc = m[prev], c[prev]
            elif how == "exact":
                nxt = np.minimum(prev + 1, ends - 1)
                d_prev = np.abs(fid[prev] - rung)
                d_next = np.where(nxt > prev, np.abs(fid[nxt] - rung), np.inf)
                pick = np.where(d_next < d_prev, nxt, prev)
                ok = np.abs(fid[pick] - rung) <= max(tolerance, eps) * rung
                vm, vc = m[pick], c[pick]
            else:  # interpolate
                nxt = prev + 1
                inside = has_prev & (nxt < ends)
                nxt = np.minimum(nxt, ends - 1)
                f0, f1 = fid[prev], fid[nxt]
                at = np.abs(f0 - rung) <= eps * max(rung, 1.0)
                w = np.where(inside & ~at & (f1 > f0), (rung - f0) / np.where(f1 > f0, f1 - f0, 1.0), 0.0)
                vm = m[prev] + w * (m[nxt] - m[prev])
                vc = c[prev] + w * (c[nxt] - c[prev])
                ok = has_prev & reached
            met[rc[ok], rs[ok], j] = vm[ok]
            cst[rc[ok], rs[ok], j] = vc[ok]
        return RungValues(
            rungs=r,
            metric=met,
            cost=cst,
            mode=self.mode,
            metric_name=self.metric_name,
            config_task=np.asarray(self.config_task),
            n_tasks=self.n_tasks,
        )


def _spec_columns(spec: _Spec) -> list[str]:
    names = [spec.config, spec.fidelity, spec.metric]
    names += [k for k in (spec.seed, spec.cost, spec.task) if k is not None]
    if len(set(names)) != len(names):
        raise ValueError(f"the same column is named for two roles: {names}")
    return names


# ------------------------------------------------------------------------------------------ rung values
@dataclass(frozen=True)
class RungValues:
    """Every run read at a ladder of fidelities (see :meth:`LearningCurves.values_at`).

    `metric[k, s, m]` and `cost[k, s, m]` are configuration `k`'s value and elapsed cost with seed
    `s` at rung `m` (NaN when the run has none); `config_task[k]` is its task.
    """

    rungs: np.ndarray
    metric: np.ndarray
    cost: np.ndarray
    mode: str
    metric_name: str
    config_task: np.ndarray
    n_tasks: int = 1

    @property
    def n_configs(self) -> int:
        return int(self.metric.shape[0])

    @property
    def M(self) -> int:
        return int(self.rungs.size)

    @property
    def score(self) -> np.ndarray:
        """`metric` oriented so that higher is better."""
        return self.metric if self.mode == "max" else -self.metric

    def bias(self) -> np.ndarray:
        """Signed bias per configuration and rung, `b_k(m) = µ_k(m) − µ_k(M)` in the higher-is-better
        orientation, with `µ` averaged over the seeds that have both rung `m` and the last rung (paired).
        NaN where no seed has both. Negative values mean the rung underestimates the final score (the
        usual case for accuracy curves and losses alike)."""
        s = self.score
        d = s - s[:, :, -1:]
        n = np.sum(~np.isnan(d), axis=1)
        tot = np.nansum(d, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, tot / np.maximum(n, 1), np.nan)

    def gaps(self) -> np.ndarray:
        """`|b_k(m)|`: the quantity ζ(m) bounds."""
        return np.abs(self.bias())

    def means(self) -> np.ndarray:
        """Per configuration and rung, the score averaged over the seeds that have it (NaN if none)."""
        s = self.score
        n = np.sum(~np.isnan(s), axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, np.nansum(s, axis=1) / np.maximum(n, 1), np.nan)

    def seed_variance(self) -> tuple[np.ndarray, np.ndarray]:
        """Per configuration and rung, the sample variance across seeds (ddof = 1) and its degrees of
        freedom (seeds − 1; variance NaN when fewer than 2 seeds)."""
        s = self.score
        n = np.sum(~np.isnan(s), axis=1)
        mu = np.where(n > 0, np.nansum(s, axis=1) / np.maximum(n, 1), 0.0)
        ss = np.nansum((s - mu[:, None, :]) ** 2, axis=1)
        dof = np.maximum(n - 1, 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            var = np.where(dof > 0, ss / np.maximum(dof, 1), np.nan)
        return var, dof

    def subset(self, configs: np.ndarray) -> RungValues:
        """The rows of some configurations (integer indices or a boolean mask)."""
        return RungValues(
            self.rungs,
            self.metric[configs],
            self.cost[configs],
            self.mode,
            self.metric_name,
            self.config_task[configs],
            self.n_tasks,
        )
