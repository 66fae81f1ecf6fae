"""Argument checks shared by the core modules (the simulators, curves, constrained and rung code).

Every error names the argument and the accepted range, e.g. ``runs = 0 is out of range; accepted: an integer
>= 1``. A ``bool`` is not an integer here (``True`` is refused where a count is expected); numpy integers are.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["check_int", "check_optional_int"]


def _accepted(low: int, high: int | None) -> str:
    return f"an integer >= {low}" if high is None else f"an integer in {low}..{high}"


def check_int(name: str, value: Any, low: int = 1, high: int | None = None) -> int:
    """``value`` as an ``int`` when it is an integer in ``low..high`` (no upper end when ``high`` is None);
    else ValueError naming ``name`` and the range.

    >>> check_int("runs", 3)
    3
    >>> check_int("rung", 4, 0, 3)
    Traceback (most recent call last):
    ...
    ValueError: rung = 4 is out of range; accepted: an integer in 0..3
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or value < low
        or (high is not None and value > high)
    ):
        raise ValueError(f"{name} = {value!r} is out of range; accepted: {_accepted(low, high)}")
    return int(value)


def check_optional_int(name: str, value: Any, low: int = 1, high: int | None = None, *, none: str = "") -> int | None:
    """:func:`check_int`, or None when ``value`` is None; ``none`` says what None means (shown in the error).

    >>> check_optional_int("n_jobs", None) is None
    True
    >>> check_optional_int("n_jobs", 0, none="all CPUs")
    Traceback (most recent call last):
    ...
    ValueError: n_jobs = 0 is out of range; accepted: an integer >= 1, or None (all CPUs)
    """
    if value is None:
        return None
    try:
        return check_int(name, value, low, high)
    except ValueError:
        meaning = f" ({none})" if none else ""
        raise ValueError(
            f"{name} = {value!r} is out of range; accepted: {_accepted(low, high)}, or None{meaning}"
        ) from None
