"""What the `mf-sched` subcommands share: argparse value types, the two-column result table, loading an
instance file with its assumption warnings on stderr, and the run options that `simulate` forwards.

>>> positive_float("2.5")
2.5
>>> int_at_least(0, " (0: all CPUs)")("-1")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: expected an integer >= 0 (0: all CPUs), got -1
>>> print_table([("policy", "se"), ("runs", 3)])
policy  se
runs    3
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

__all__ = [
    "int_at_least",
    "load_reporting_warnings",
    "nonnegative_float",
    "param",
    "positive_float",
    "print_table",
    "run_options",
    "seconds",
]

T = TypeVar("T")


def param(text: str) -> tuple[str, Any]:
    """`--param KEY=VALUE`: the key as a Python name (`-` read as `_`), the value parsed as JSON (numbers,
    lists, true/false/null; never evaluated as code), else kept as the string.

    >>> param("pull-budget=300"), param("score=lagrangian")
    (('pull_budget', 300), ('score', 'lagrangian'))
    """
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--param expects KEY=VALUE, got {text!r}")
    key, raw = text.split("=", 1)
    key = key.strip().replace("-", "_")
    if not key.isidentifier():
        raise argparse.ArgumentTypeError(f"--param key {key!r} is not a valid parameter name")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key, value


def positive_float(text: str) -> float:
    """An argparse type: a number `> 0` (`inf` allowed)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text}")
    return v


def nonnegative_float(text: str) -> float:
    """An argparse type: a finite number `>= 0`."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
    if not (math.isfinite(v) and v >= 0):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {v}")
    return v


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds `> 0`."""
    v = positive_float(text)
    if v == float("inf"):
        raise argparse.ArgumentTypeError("expected a finite number of seconds")
    return v


def int_at_least(low: int, note: str = "") -> Callable[[str], int]:
    """An argparse type: an integer `>= low` (`note` follows the bound in the error message)."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if v < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}{note}, got {v}")
        return v

    return parse


def print_table(rows: Sequence[tuple[str, Any]]) -> None:
    """Print `(label, value)` rows as two columns, the labels left-aligned to the longest one."""
    w = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{w}}  {v}")


def load_reporting_warnings(load: Callable[[str], T], path: str, category: type[Warning]) -> T:
    """`load(path)`, printing each `category` warning it raises on stderr as `warning: …`."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", category)
        loaded = load(path)
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    return loaded


def run_options(args: argparse.Namespace) -> dict[str, Any]:
    """The `simulate` options that every runner takes (runs, seed, budget, workers, completion, pull cap,
    processes, progress), as keyword arguments."""
    return {
        "runs": args.runs,
        "seed": args.seed,
        "budget": args.budget,
        "workers": args.workers,
        "completion": args.completion,
        "max_pulls": args.max_pulls,
        "n_jobs": None if args.jobs == 0 else args.jobs,
        "progress": not args.no_progress,
    }
