"""`mf-sched report`: one self-contained HTML page for a raced Optuna study or Ray Tune experiment.

mf-sched report STORAGE_OR_FOLDER [--study NAME] [-o PATH] [--static]
    STORAGE_OR_FOLDER   an Optuna storage (sqlite:///study.db, postgresql://..., a SQLite or journal file) or a
                        Ray Tune experiment folder written with SchedulerStateCallback
    --study NAME        the study (needed when the storage holds several)
    -o, --output PATH   the HTML file (default: ./<study or experiment>-race.html)
    --static            a PNG figure (matplotlib) instead of the interactive plotly one

Prints the page's path (and, on stderr, what it skipped of a journal file: an incomplete last record). See
:mod:`mf_sched.visualization.report`.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

__all__ = ["add_report"]


def add_report(sub: Any) -> None:
    """Register the `report` subcommand on an argparse subparsers object."""
    p = sub.add_parser(
        "report",
        help="write one HTML page (race plot, certificate, runs) for an Optuna study or a Ray Tune experiment",
        description="Write one self-contained HTML page for a study raced by MFSampler/MFPruner or an experiment "
        "run with IISEScheduler + SchedulerStateCallback: the race plot, the certificate and a table of the runs "
        "with their fate.",
    )
    p.add_argument(
        "target",
        metavar="STORAGE_OR_FOLDER",
        help="an Optuna storage URL or file (sqlite:///study.db, a .db or journal file) or a Ray Tune experiment "
        "folder",
    )
    p.add_argument("--study", default=None, help="the study's name (when the storage holds several)")
    p.add_argument("-o", "--output", default=None, help="the HTML file (default ./<name>-race.html)")
    p.add_argument("--static", action="store_true", help="a PNG figure (matplotlib) instead of plotly")
    p.set_defaults(func=_cmd_report)


def _cmd_report(args: argparse.Namespace) -> int:
    from mf_sched.cli._common import load_reporting_warnings
    from mf_sched.visualization.report import IncompleteJournalWarning, load, render_html

    try:  # a journal's skipped records are said on stderr as well as on the page
        race, name = load_reporting_warnings(
            lambda target: load(target, study_name=args.study), args.target, IncompleteJournalWarning
        )
        page = render_html(race, name=name, interactive=not args.static)
    except ImportError as e:  # a missing optional package is a usage error here, not a crash
        raise ValueError(str(e)) from None
    out = Path(args.output) if args.output else Path(f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', name) or 'race'}-race.html")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    print(out.resolve())
    return 0
