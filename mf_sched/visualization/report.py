"""One self-contained HTML page for a raced study or experiment: `mf-sched report STORAGE_OR_FOLDER`.

The page holds the certificate (the answer, ε, δ, where the bias bound came from, the runs left uncovered), the
race plot (:func:`mf_sched.visualization.plot_race`: interactive, with plotly.js inlined, so the page opens with
no network; or a PNG from the matplotlib twin with `interactive=False` or without plotly), a table of every run
with its fate and the reason, and the incumbent over time. Every text taken from the study is HTML-escaped.

What :func:`load` reads:

* an Optuna storage: a database URL (`sqlite:///study.db`, `postgresql://...`), a SQLite file, or a journal
  file (:class:`optuna.storages.journal.JournalFileBackend`); `study_name` picks the study (needed when the
  storage holds several). A journal file is read once, line by line, as JSON (nothing in it is executed), and
  each record is checked to be a journal operation; an incomplete last record (a worker killed while writing)
  or a line that is not a record is skipped with an :class:`IncompleteJournalWarning` naming the file and what
  was skipped, and the page says so too;
* a Ray Tune experiment folder (or its scheduler state file), see :mod:`mf_sched.visualization`.

Example:
    >>> import tempfile, pathlib
    >>> from mf_sched import FidelityLadder
    >>> from mf_sched.racing.engine import RungEliminator
    >>> from mf_sched.visualization.report import write_report
    >>> eng = RungEliminator(FidelityLadder([1, 3, 9], [0.1, 0.02, 0.0], resources=[1, 3, 9]), sigma=0.01,
    ...                      n_arms=3, rule="race", race_bias=[0.1, 0.02, 0.0])
    >>> eng.report_many(["a", "b", "c"], [[0.6, 0.7, 0.8], [0.3, float("nan"), float("nan")],
    ...                                  [0.5, 0.66, 0.75]])
    >>> _ = eng.eliminate()
    >>> path = write_report(eng, pathlib.Path(tempfile.mkdtemp()) / "race.html")
    >>> "stopped by the rule" in path.read_text()
    True
"""

from __future__ import annotations

import base64
import datetime
import html
import io
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mf_sched.visualization._data import FATES, RaceData, fmt
from mf_sched.visualization._style import COLORS, LABELS

__all__ = ["IncompleteJournalWarning", "load", "render_html", "write_report"]

_SQLITE_MAGIC = b"SQLite format 3\x00"
#: the runs table lists at most this many runs (the best first, by fate), then counts the rest by fate
MAX_ROWS = 1000


class IncompleteJournalWarning(UserWarning):
    """An Optuna journal file holds an incomplete last record (a worker killed while writing it) or lines that are
    not journal records: the report reads the complete records and names the file and what it skipped."""


def _journal_ops() -> frozenset[int]:
    """The `op_code`s of Optuna's journal operations."""
    try:
        from optuna.storages.journal._storage import JournalOperation
    except ImportError:  # pragma: no cover - Optuna moved it: the eleven operations of Optuna 3.1 to 5
        return frozenset(range(11))
    return frozenset(int(o) for o in JournalOperation)


def _journal_record(line: bytes, ops: frozenset[int]) -> dict[str, Any] | None:
    """One journal line as its record, or None when it is not one: JSON (never evaluated) holding an object with an
    integer `op_code` among `ops` and a string `worker_id`."""
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None
    if not isinstance(rec, dict) or not isinstance(rec.get("worker_id"), str):
        return None
    op = rec.get("op_code")
    if isinstance(op, bool) or not isinstance(op, int) or op not in ops:
        return None
    return rec


def _read_journal(path: Path) -> tuple[Any, str]:
    """`(backend, what was skipped)`: a read-only journal backend holding the complete, valid records of the file
    at `path` (read once), and a sentence naming the file and what it skipped (empty: nothing)."""
    from optuna.storages.journal import BaseJournalBackend

    data = path.read_bytes()
    lines = data.split(b"\n")
    tail = lines.pop()  # what follows the last end of line: empty unless the last record was cut
    logs: list[dict[str, Any]] = []
    bad: list[int] = []
    bad_bytes = 0
    ops = _journal_ops()
    for i, line in enumerate(lines, 1):
        rec = _journal_record(line.rstrip(b"\r"), ops)
        if rec is None:
            if line.strip():
                bad.append(i)
                bad_bytes += len(line) + 1
            continue
        logs.append(rec)
    if not logs:
        raise ValueError(f"{path}: not an Optuna journal file (no line is a journal record) nor a SQLite file")
    skipped = []
    if tail.strip():
        skipped.append(
            f"an incomplete last record ({len(tail)} bytes after the last complete line, line {len(lines) + 1}: a "
            "worker was likely killed while writing it)"
        )
    if bad:
        shown = ", ".join(map(str, bad[:10])) + (f" and {len(bad) - 10} more" if len(bad) > 10 else "")
        skipped.append(
            f"{len(bad)} line{'s' * (len(bad) != 1)} that {'are' if len(bad) != 1 else 'is'} not journal records "
            f"(line{'s' * (len(bad) != 1)} {shown}; {bad_bytes} bytes)"
        )
    note = (
        f"{path}: skipped {' and '.join(skipped)}; the report reads its {len(logs)} complete records" if skipped else ""
    )

    class _Snapshot(BaseJournalBackend):  # type: ignore[misc]
        """The journal as read once; reading a report never writes to it."""

        def read_logs(self, log_number_from: int) -> Iterator[dict[str, Any]]:
            return iter(logs[log_number_from:])

        def append_logs(self, logs: list[dict[str, Any]]) -> None:
            raise PermissionError(f"{path}: the report reads the journal and never writes to it")

    return _Snapshot(), note


def _optuna() -> Any:
    try:
        import optuna
    except ImportError as e:
        raise ImportError('reading an Optuna storage needs Optuna: pip install "mf-sched[optuna]"') from e
    return optuna


def _storage(target: str) -> tuple[Any, str]:
    """`(storage, note)`: an Optuna storage for `target` (a database URL, a SQLite file or a journal file; never
    creates one) and what reading it skipped, in words (empty: nothing)."""
    optuna = _optuna()
    if "://" in target:
        if target.startswith("sqlite:///"):
            path = target[len("sqlite:///") :]
            if path not in ("", ":memory:") and not Path(path).is_file():
                raise FileNotFoundError(f"{target}: no SQLite file at {path!r}")
        return optuna.storages.RDBStorage(target), ""
    p = Path(target)
    if not p.is_file():
        raise FileNotFoundError(f"{target!r} is neither a Ray Tune experiment folder, a file, nor a database URL")
    with p.open("rb") as f:
        head = f.read(len(_SQLITE_MAGIC))
    if head == _SQLITE_MAGIC:
        return optuna.storages.RDBStorage(f"sqlite:///{p.resolve()}"), ""
    from optuna.storages.journal import JournalStorage

    backend, note = _read_journal(p)
    try:
        return JournalStorage(backend), note
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:  # a record well formed but not whole
        raise ValueError(f"{target}: a journal record could not be replayed ({type(e).__name__}: {e})") from None


def load(target: str | Path, *, study_name: str | None = None) -> tuple[RaceData, str]:
    """`(race, name)` of the study or experiment at `target` (see the module docstring).

    Args:
        target: a Ray Tune experiment folder (or its scheduler state file), a database URL, or a SQLite or
            journal file of an Optuna storage.
        study_name: the study to read from an Optuna storage (required when it holds several); not allowed with a
            Ray Tune folder.

    Raises:
        FileNotFoundError: nothing at `target`.
        ValueError: the storage has no study named `study_name`, or several and none was named, or the
            study has nothing raced yet, or a file is neither SQLite nor an Optuna journal.

    Warns:
        IncompleteJournalWarning: a journal file's last record is incomplete or some of its lines are not records
            (skipped; the race's :attr:`~mf_sched.visualization.RaceData.warnings` say so too).
    """
    from mf_sched.visualization import race_data
    from mf_sched.visualization._tune import STATE_FILE

    p = Path(target)
    if p.is_dir() or p.name == STATE_FILE:
        if study_name is not None:
            raise ValueError("--study applies to an Optuna storage, not to a Ray Tune experiment folder")
        race = race_data(p)
        return race, (p if p.is_dir() else p.parent).resolve().name
    optuna = _optuna()
    storage, note = _storage(str(target))
    if note:
        warnings.warn(note, IncompleteJournalWarning, stacklevel=2)
    names = [s.study_name for s in storage.get_all_studies()]
    if not names:
        raise ValueError(f"{target}: the storage holds no study")
    if study_name is None:
        if len(names) > 1:
            raise ValueError(f"{target} holds {len(names)} studies; choose one with --study: {', '.join(names)}")
        study_name = names[0]
    elif study_name not in names:
        raise ValueError(f"{target} has no study {study_name!r}; its studies: {', '.join(names)}")
    study = optuna.load_study(study_name=study_name, storage=storage)
    race = race_data(study)
    if note:
        race.warnings.append(note)
    return race, study_name


def _figure_html(race: RaceData, interactive: bool) -> tuple[str, str]:
    """(HTML of the figure, what drew it)."""
    if interactive:
        try:
            from mf_sched.visualization._plotly import race_figure

            fig = race_figure(race)
            return fig.to_html(full_html=False, include_plotlyjs=True, div_id="race-plot"), "plotly"
        except ImportError:
            pass
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from mf_sched.visualization.matplotlib import plot_race

    ax, _ = plot_race(race)
    buf = io.BytesIO()
    ax.figure.savefig(buf, format="png", dpi=110)
    plt.close(ax.figure)
    b64 = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img id="race-plot" alt="the race" src="data:image/png;base64,{b64}">', "matplotlib"


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1280px;color:#1f2328;
padding:0 16px}
h1{font-size:1.45em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #d0d7de}
.muted{color:#57606a;font-size:.9em}.summary{font-size:1.05em;background:#f6f8fa;border-left:4px solid #1a7f37;
padding:8px 12px}
table{border-collapse:collapse;font-size:.86em;margin-top:6px}td,th{border:1px solid #d0d7de;padding:3px 7px;
text-align:left;vertical-align:top}th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
.fate{display:inline-block;width:.8em;height:.8em;border-radius:50%;margin-right:.35em;vertical-align:-1px}
img#race-plot{max-width:100%}.warning{background:#fff8c5;border-left:4px solid #9a6700;padding:8px 12px}
"""


def _row(cells: list[str], num: set[int] | None = None) -> str:
    return (
        "<tr>"
        + "".join(f'<td class="num">{c}</td>' if i in (num or ()) else f"<td>{c}</td>" for i, c in enumerate(cells))
        + "</tr>"
    )


def render_html(race: RaceData, *, name: str = "", interactive: bool = True) -> str:
    """The report page of `race` as one HTML string (see the module docstring).

    Args:
        race: the race to report (from :func:`load` or :func:`mf_sched.visualization.race_data`).
        name: the study or experiment's name, shown in the title; empty: none.
        interactive: an interactive plotly figure (falls back to a matplotlib PNG without plotly); False: a PNG.
    """
    e = html.escape
    c = race.certificate
    fig, drawn_by = _figure_html(race, interactive)
    word = "lower" if race.direction == "maximize" else "upper"
    cert_rows = [
        ("recommended run", e(str(c.get("best") or "none yet"))),
        (f"its {e(race.metric)}", fmt(c.get("value"))),
        ("ε (ε-optimal with probability ≥ 1 − δ)", "-" if c.get("epsilon") is None else fmt(c["epsilon"], 4)),
        ("δ", fmt(c.get("delta"), 4)),
        ("identified (ε = 0, nothing else left)", "yes" if c.get("identified") else "no"),
        ("certified", e(str(c["statement"])) if c.get("statement") else "-"),
        (
            "guarantee holds",
            "no (not raced by mf-sched)"
            if c.get("raced") is False
            else "yes"
            if c.get("guaranteed", True)
            else "no (see the certificate)",
        ),  # fmt: skip
        ("decision rule", e(str(c.get("rule", race.rule)))),
        ("bias bound from", e(str(c.get("bias_source") or "-"))),
        ("runs per status", e(", ".join(f"{k} {v}" for k, v in (c.get("counts") or {}).items()))),
        ("uncovered runs", e(", ".join(c.get("uncovered") or []) or "none")),
        ("cost (Σ λ of the rungs reached)", fmt(c.get("cost"), 6)),
        ("rungs (resource)", e(", ".join(f"{r:g}" for r in race.resources))),
        ("direction", e(race.direction)),
    ]
    if c.get("raced") is False:  # curves only: none of the certificate's rows applies
        keep = ("recommended run", f"its {e(race.metric)}", "certified", "rungs (resource)", "direction")
        cert_rows = [(k, v) for k, v in cert_rows if k in keep]
    order = {f: i for i, f in enumerate(FATES)}
    runs = sorted(race.runs, key=lambda r: (order.get(r.fate, 99), -race.sign * (r.last_value or 0.0)))
    run_rows = []
    for r in runs[:MAX_ROWS]:
        params = "; ".join(f"{k}={v}" for k, v in list(r.params.items())[:12])
        stop = "-" if r.stop_rung is None else str(r.stop_rung)
        run_rows.append(
            _row(
                [
                    e(r.name),
                    e(", ".join(map(str, r.trials))) or "-",
                    e(params) or "-",
                    f'<span class="fate" style="background:{COLORS[r.fate]}"></span>{e(LABELS[r.fate])}',
                    str(r.reached),
                    fmt(r.last_value),
                    fmt(r.bound),
                    stop,
                    e(r.reason),
                ],
                num={4, 5, 6, 7},
            )
        )
    if len(runs) > MAX_ROWS:  # the page stays a few MB however many runs: the rest are counted, not listed
        rest: dict[str, int] = {}
        for r in runs[MAX_ROWS:]:
            rest[LABELS[r.fate]] = rest.get(LABELS[r.fate], 0) + 1
        left = ", ".join(f"{n:,} {label}" for label, n in rest.items())
        run_rows.append(
            f'<tr id="runs-left-out"><td colspan="9">… and {len(runs) - MAX_ROWS:,} more runs, not listed ({e(left)}); '
            "every run is in <code>mf_sched.visualization.race_data(...).to_dict()</code></td></tr>"
        )
    inc_rows = [_row([fmt(s.time, 5), e(s.name), fmt(s.value), fmt(s.bound)], num={0, 2, 3}) for s in race.incumbent]
    warned = "".join(f'<p class="warning" id="warnings">warning: {e(w)}</p>' for w in race.warnings[:1])
    warned += "".join(f'<p class="warning">warning: {e(w)}</p>' for w in race.warnings[1:])
    when = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")
    title = f"Race report: {name}" if name else "Race report"
    try:
        from mf_sched import __version__
    except ImportError:  # pragma: no cover
        __version__ = "?"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{e(title)}</title><style>{_CSS}</style></head>
<body>
<h1>{e(title)}</h1>
<p class="muted">{e(race.source)} · {len(race.runs)} runs · written {e(when)} by mf-sched {e(__version__)}</p>
{warned}<p class="summary" id="summary">{e(race.summary())}</p>
<h2>Certificate</h2>
<table id="certificate">{"".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in cert_rows)}</table>
<h2>The race</h2>
<p class="muted">Top: every run's curve; at each rung its value and the optimistic bound on its final value (triangles);
a run is stopped once that bound cannot reach the incumbent's {word} bound (dashed line); crosses mark the stops
(hover for the reason). Bottom: the incumbent over time and each stop when it happened. Drawn with {drawn_by}.</p>
<div id="figure">{fig}</div>
<h2>Runs</h2>
<table id="runs"><tr><th>run</th><th>trials</th><th>configuration</th><th>fate</th><th>highest rung</th>
<th>last value</th><th>bound</th><th>stopped at rung</th><th>why</th></tr>
{"".join(run_rows)}</table>
<h2>The incumbent over time</h2>
<table id="incumbent"><tr><th>{e(race.time_label)}</th><th>incumbent</th><th>value</th><th>{word} bound</th></tr>
{"".join(inc_rows)}</table>
</body></html>
"""


def write_report(source: Any, path: str | Path, *, study_name: str | None = None, interactive: bool = True) -> Path:
    """Write the report page of `source` to `path` and return the path.

    Args:
        source: a storage URL, a SQLite or journal file, or a Ray Tune experiment folder (read by :func:`load`);
            or anything :func:`mf_sched.visualization.race_data` accepts (an Optuna study, a
            :class:`~mf_sched.racing.engine.RungEliminator`, a :class:`~mf_sched.visualization.RaceData`).
        path: the HTML file to write (its folder is created).
        study_name: the study, for a storage holding several.
        interactive: plotly (default; falls back to a matplotlib PNG without plotly) or a PNG.
    """
    from mf_sched.visualization import race_data

    if isinstance(source, (str, Path)):
        race, name = load(source, study_name=study_name)
    else:
        race = race_data(source)
        name = getattr(source, "study_name", "") or ""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_html(race, name=name, interactive=interactive), encoding="utf-8")
    return out
