"""The `mf-sched` command line (:mod:`~mf_sched.cli.app`; `mf-sched calibrate` in
:mod:`~mf_sched.cli._calibrate_cli`). `main` is re-exported here for the console script and
`python -m mf_sched.cli`."""

from __future__ import annotations

from mf_sched.cli.app import SUBCOMMANDS, build_parser, main

__all__ = ["SUBCOMMANDS", "build_parser", "main"]
