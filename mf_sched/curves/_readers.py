"""Reading and validating the columns of a learning-curve table (see :mod:`mf_sched.curves.learning_curves`).

Every source of rows (mappings, a CSV file, a data frame, one row per run holding JSON lists) is turned into
one list or array per column here (:func:`record_columns`, :func:`csv_file_columns`, :func:`frame_columns`,
:func:`expand_lists`); the constructor of :class:`~mf_sched.curves.learning_curves.LearningCurves` then has
the columns checked and the labels coded by :func:`validate_columns`. Nothing read from a file is ever
evaluated: numbers are parsed with `float`, curve lists with :func:`json.loads` and then checked to hold
numbers only. CSV files may be gzip-compressed (recognised by their magic bytes) and are read as UTF-8, at
most 2 GiB.

The public functions here (:func:`check_mode`, :func:`parse_fidelities`, :func:`read_csv_columns`) are
imported from :mod:`mf_sched.curves.learning_curves` (or :mod:`mf_sched.curves`), where they are documented.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

_MODES = ("max", "min")
_NONFINITE = ("error", "drop")
_MAX_CSV_BYTES = 2 * 1024**3


def check_mode(mode: Any) -> str:
    """Validate an optimisation direction: `"max"` (accuracy) or `"min"` (loss).

    Args:
        mode: the direction to check: `"max"` when higher is better, `"min"` when lower is better.

    Returns:
        `mode` as a string.

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

    Args:
        text: the fidelities: a comma-separated string (as on the command line) or a sequence of numbers
            (booleans are rejected).
        name: what the fidelities are called in error messages (`"rungs"`, `"list_fidelities"`).

    Returns:
        The fidelities as a float array.

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
    columns hold one of the given values (filtered while reading, so large files stay cheap).

    Args:
        path: the file, UTF-8, plain or gzip-compressed (recognised by its magic bytes); a header row names
            the columns. Blank lines are skipped; a row with another number of fields than the header is an
            error that names its line.
        names: the columns to return.
        where: column name → accepted values (compared as strings), e.g. `{"workload": ["wmt_jax"]}`;
            a row is kept when every such column holds one of its values. None: every row.
        delimiter: the field separator.
        optional: columns of `names` that may be absent: they are left out of the result. Any other missing
            column (in `names` or `where`) is an error that lists the file's columns.

    Returns:
        Column name → its values as strings, in file order.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "c.csv"
    >>> _ = p.write_text("task,config,acc\\na,1,0.5\\nb,1,0.7\\n")
    >>> read_csv_columns(p, ["config", "acc", "cost"], where={"task": ["b"]}, optional={"cost"})
    {'config': ['1'], 'acc': ['0.7']}
    """
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
    """The column names of a table's roles; `seed`, `cost` and `task` are None when absent."""

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


def _spec_columns(spec: _Spec) -> list[str]:
    names = [spec.config, spec.fidelity, spec.metric]
    names += [k for k in (spec.seed, spec.cost, spec.task) if k is not None]
    if len(set(names)) != len(names):
        raise ValueError(f"the same column is named for two roles: {names}")
    return names


# ------------------------------------------------------------------------------------------ the table's columns
def validate_columns(
    config: Any,
    fidelity: Any,
    metric: Any,
    *,
    seed: Any,
    cost: Any,
    task: Any,
    metric_name: str,
    mode: str,
    fidelity_name: str,
    cost_name: str | None,
    params: Mapping[Any, Mapping[str, Any]] | None,
    nonfinite: str,
) -> dict[str, Any]:
    """Validate the raw columns of a table and code its labels (what `LearningCurves(...)` checks).

    Args:
        config: configuration label of every row (strings or numbers; never missing).
        fidelity: position on the curve of every row: finite and `≥ 0`.
        metric: the reported values; NaN/inf are handled by `nonfinite`.
        seed: replicate label of every row, or None (one seed, labelled 0).
        cost: elapsed cost of every row (finite, `≥ 0`, empty/NaN for unknown), or None (no cost column).
        task: task label of every row, or None (one task, labelled `"all"`); a configuration is then
            the pair (task, config).
        metric_name: display name of the metric, used in error messages.
        mode: `"max"` or `"min"` (checked by :func:`check_mode`).
        fidelity_name: display name of the fidelity, used in error messages.
        cost_name: display name of the cost (None: `"cost"`).
        params: configuration label → hyperparameters, or None; every label must have rows.
        nonfinite: `"error"` rejects a non-finite metric naming its row; `"drop"` removes those rows.

    Returns:
        The keyword arguments of the table's `_init`: the integer-coded columns `config`, `seed` and
        `config_task` (codes in first-appearance order), the float columns `fidelity`, `metric` and
        `cost` (unsorted), the labels, display names, `params` in configuration-code order and
        `n_dropped`.
    """
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
    return {
        "config": cfg_codes,
        "fidelity": fid,
        "metric": met,
        "seed": seed_codes,
        "cost": cst,
        "config_task": config_task,
        "config_labels": tuple(k[1] if task is not None else k for k in cfg_keys),
        "seed_labels": seed_names,
        "task_labels": task_names,
        "metric_name": str(metric_name),
        "mode": mode,
        "fidelity_name": str(fidelity_name),
        "cost_name": None if cost is None else str(cost_name or "cost"),
        "params": ps,
        "n_dropped": n_dropped,
    }


# ------------------------------------------------------------------------------------------ sources → columns
def record_columns(records: Iterable[Mapping[str, Any]], spec: _Spec) -> dict[str, list[Any]]:
    """The columns named by `spec`, gathered from mappings (one per observation).

    Args:
        records: the observations; every one must be a mapping holding every column `spec` names.
        spec: the column names of the table's roles (`seed`, `cost`, `task` may be None: absent).

    Returns:
        One list per named column, in the order of the records.
    """
    cols: dict[str, list[Any]] = {k: [] for k in _spec_columns(spec)}
    for i, rec in enumerate(records):
        if not isinstance(rec, Mapping):
            raise ValueError(f"record {i} must be a mapping of column name to value, got {type(rec).__name__}")
        for k, lst in cols.items():
            if k not in rec:
                raise ValueError(f"record {i} has no key {k!r}; it has {sorted(map(str, rec))}")
            lst.append(rec[k])
    return cols


def _column_array(col: Any) -> np.ndarray:
    """A duck-typed frame's column as an array: cells that are lists of different lengths (the `"list"` layout) as an
    object array of those lists, as pandas' `to_numpy` gives them, instead of numpy's "inhomogeneous shape" error."""
    vals = list(col)
    if any(isinstance(v, (list, tuple, np.ndarray)) for v in vals):
        out = np.empty(len(vals), dtype=object)
        for i, v in enumerate(vals):
            out[i] = v
        return out
    return np.asarray(vals)


def frame_columns(df: Any, spec: _Spec, layout: str) -> dict[str, Any]:
    """The columns named by `spec`, taken from a data frame (duck-typed: `df.columns` and `df[name]`).

    Args:
        df: a pandas data frame, or anything with `.columns` and `df[name]`.
        spec: the column names of the table's roles.
        layout: `"long"` (one row per observation: object columns become lists) or `"list"` (one row per
            run: the fidelity column may be absent, see :func:`expand_lists`).

    Returns:
        One numpy array (`"list"` layout, or numeric columns) or list per column present.
    """
    if not hasattr(df, "columns"):
        raise ValueError(f"df must be a data frame with .columns, got {type(df).__name__}")
    have = [str(c) for c in df.columns]
    cols: dict[str, Any] = {}
    for k in _spec_columns(spec):
        if k not in have:
            if layout == "list" and k == spec.fidelity:
                continue
            raise ValueError(f"the data frame has no column {k!r}; it has {have}")
        col = df[k]
        cols[k] = col.to_numpy() if hasattr(col, "to_numpy") else _column_array(col)
    if _check_layout(layout) == "list":
        return cols
    if any(isinstance(v, np.ndarray) and v.dtype == object for v in cols.values()):
        cols = {k: v.tolist() for k, v in cols.items()}
    return cols


def csv_file_columns(
    path: Path, spec: _Spec, *, layout: str, where: Mapping[str, Sequence[str]] | None, delimiter: str
) -> dict[str, list[str]]:
    """The columns named by `spec`, read from a CSV file (see :func:`read_csv_columns`) as strings.

    Args:
        path: the file (plain or gzip); at most 2 GiB.
        spec: the column names of the table's roles.
        layout: `"long"` or `"list"` (then the fidelity column is optional).
        where: keep only the rows whose columns hold one of the given values (None: every row).
        delimiter: the field separator.

    Returns:
        One list of strings per column present; at least one data row.
    """
    if not path.is_file():
        raise FileNotFoundError(f"learning-curve file {str(path)!r} does not exist")
    if path.stat().st_size > _MAX_CSV_BYTES:
        raise ValueError(f"{path} is larger than {_MAX_CSV_BYTES} bytes; split it")
    _check_layout(layout)
    wanted = _spec_columns(spec)
    optional = {spec.fidelity} if layout == "list" else set()
    cols = read_csv_columns(path, wanted, where=where, delimiter=delimiter, optional=optional)
    if not cols[spec.metric]:
        raise ValueError(f"{path} has no data rows" + (f" matching {dict(where or {})}" if where else ""))
    return cols


def expand_lists(
    cols: Mapping[str, Any], spec: _Spec, list_fidelities: Sequence[float] | None = None
) -> dict[str, Any]:
    """One row per observation from one-row-per-run columns whose cells are JSON lists (or sequences).

    Args:
        cols: the columns, one entry per run; the metric cell (and the cost and fidelity cells, when
            those columns are present) holds the run's values as a JSON list or a sequence.
        spec: the column names of the table's roles.
        list_fidelities: the fidelities of every list when there is no fidelity column (each list must be
            this long); None: `1, 2, …, n` for a list of `n` values.

    Returns:
        The long columns: each run's label, seed and task repeated once per value of its lists.
    """

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
    return flat
