"""What every benchmark script shares: seeding, running jobs in processes with progress, where results go, the
run's metadata, writing the JSON, matplotlib with the Agg backend, saving a figure, and printing a result table.

A script prints its table, writes ``benchmarks/results/<name>.json`` and, when matplotlib is installed (the
``bench`` extra), a plot beside it:

>>> import argparse, tempfile
>>> from pathlib import Path
>>> rows = [{"policy": "iise", "cost": 1234.5}, {"policy": "se", "cost": None}]
>>> print_table([("policy", "<8"), ("mean cost", ">10.1f")], [(r["policy"], r["cost"]) for r in rows], rule=True)
policy    mean cost
-------------------
iise         1234.5
se                -
>>> with tempfile.TemporaryDirectory() as d:
...     write_json(Path(d) / "x.json", {"meta": meta(argparse.Namespace(quick=True)), "rows": rows}, quiet=True)
...     sorted(json.loads((Path(d) / "x.json").read_text())["meta"])
['args', 'machine', 'numpy', 'python']
"""

from __future__ import annotations

import itertools
import json
import platform
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from mf_sched._parallel import process_pool
from mf_sched._progress import Progress

__all__ = ["RESULTS", "cost_columns", "meta", "print_table", "pyplot", "run_jobs", "save_figure", "seeds", "write_json"]

T = TypeVar("T")
R = TypeVar("R")

#: where the scripts write their JSON and plots (``benchmarks/results``; git ignores it)
RESULTS = Path(__file__).resolve().parent / "results"


def seeds(root: int, *keys: int) -> tuple[np.random.Generator, int, int]:
    """An instance generator plus a policy seed and an observation seed, all derived from
    ``SeedSequence([root, *keys])`` (independent of the order and the process the job runs in)."""
    ss = np.random.SeedSequence([root, *keys])
    a, b, c = ss.spawn(3)
    return np.random.default_rng(a), int(b.generate_state(1)[0]), int(c.generate_state(1)[0])


def run_jobs(fn: Callable[[T], R], jobs: Sequence[T], n_jobs: int, desc: str, progress: bool = True) -> list[R]:
    """``[fn(j) for j in jobs]`` in order, in ``n_jobs`` worker processes (:func:`mf_sched._parallel.process_pool`:
    spawned, stopped cleanly on Ctrl-C; ``n_jobs <= 1``: in this process), with a progress bar ``desc``."""
    out: list[R] = []
    with Progress(len(jobs), desc, progress) as bar:
        if n_jobs <= 1 or len(jobs) <= 1:
            for j in jobs:
                out.append(fn(j))
                bar.update()
        else:
            with process_pool(min(n_jobs, len(jobs))) as ex:
                for r in ex.map(fn, jobs):
                    out.append(r)
                    bar.update()
    return out


def meta(args: Any = None, **extra: Any) -> dict[str, Any]:
    """The run's context for its JSON: Python and numpy versions, the machine, the parsed arguments (``args``,
    an ``argparse.Namespace``) and any ``extra`` items."""
    out: dict[str, Any] = {"python": sys.version.split()[0], "numpy": np.__version__, "machine": platform.machine()}
    if args is not None:
        out["args"] = vars(args)
    return out | extra


def cost_columns(summary: Any) -> dict[str, Any]:
    """The columns every fixed-confidence reproduction reports from a :class:`mf_sched.sim.simulate.Summary`
    (``run_many``'s result): runs, cost mean / 95% CI half-width / standard deviation, error and certified rates,
    and the mean pulls per fidelity."""
    return {
        "runs": summary.runs,
        "cost_mean": summary.cost_mean,
        "cost_ci95": summary.cost_ci95,
        "cost_std": summary.cost_std,
        "error_rate": summary.error_rate,
        "certified_rate": summary.certified_rate,
        "pulls_per_fidelity": summary.pulls_per_fidelity_mean,
    }


def _plain(o: Any) -> Any:
    """JSON fallback: numpy arrays and scalars as lists and numbers, paths and anything else as text."""
    return o.tolist() if hasattr(o, "tolist") else str(o)


def write_json(path: str | Path, payload: Mapping[str, Any], *, indent: int | None = 1, quiet: bool = False) -> None:
    """Write ``payload`` as JSON to ``path`` (parents created) and say so unless ``quiet``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=indent, default=_plain))
    if not quiet:
        print(f"wrote {path}")


def table_after(text: str, mark: str) -> str:
    """The block right after the line ``mark`` of a page (up to the first blank line): where a benchmark's published
    table stands. ``ValueError`` when the page has no such line."""
    if mark not in text:
        raise ValueError(f"no line {mark!r} in the page")
    return text.split(mark, 1)[1].lstrip("\n").split("\n\n", 1)[0].strip()


def put_table_after(doc: Path, mark: str, table: str) -> None:
    """Write ``table`` into the page ``doc`` right after the line ``mark``, replacing the table that stood there
    (its ``|`` lines and the blank lines after them); ``SystemExit`` when the page has no such line."""
    text = doc.read_text(encoding="utf-8")
    if mark not in text:
        raise SystemExit(f"{doc} has no line {mark!r} to put the table after")
    before, after = text.split(mark, 1)
    rest = after.lstrip("\n").split("\n")
    while rest and rest[0].startswith("|"):
        rest.pop(0)
    while rest and not rest[0].strip():
        rest.pop(0)
    doc.write_text(before + mark + "\n" + table + "\n\n" + "\n".join(rest), encoding="utf-8")


def pyplot() -> Any:
    """matplotlib's pyplot with the Agg backend, or None (after saying so) when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install 'mf-sched[bench]'): no plot")
        return None
    return plt


def save_figure(fig: Any, path: str | Path, *, dpi: int = 120) -> None:
    """Lay out ``fig``, save it to ``path``, close it and say so."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    print(f"wrote {path}")


def print_table(columns: Sequence[tuple[str, str]], rows: Iterable[Sequence[Any]], *, rule: bool = False) -> None:
    """Print a table: ``columns`` are ``(header, format spec)`` pairs, ``rows`` the cells of each row in that
    order. A header takes the alignment and width of its spec (``"<8"``, ``">10.1f"``; numbers align right,
    text left); a None cell prints as ``-``; ``rule`` draws a line of dashes under the header."""
    heads = []
    for header, spec in columns:
        width = "".join(itertools.takewhile(str.isdigit, spec.lstrip("<>^")))
        heads.append(f"{header:{spec[0] if spec[:1] in '<>^' else '>'}{width}}")
    head = " ".join(heads).rstrip()
    print(head)
    if rule:
        print("-" * len(head))
    for cells in rows:
        out = []
        for (_, spec), v in zip(columns, cells, strict=True):
            out.append(format("-", spec.split(".")[0].rstrip("dfgeE%s")) if v is None else format(v, spec))
        print(" ".join(out).rstrip())
