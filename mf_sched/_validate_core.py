"""Argument checks shared by the core modules (the simulators, curves, constrained and rung code).

Every error names the argument and the accepted range, e.g. ``runs = 0 is out of range; accepted: an integer
>= 1``. A ``bool`` is not an integer here (``True`` is refused where a count is expected); numpy integers are.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["check_fraction", "check_int", "check_optional_int"]


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


def check_fraction(name: str, value: Any, low: float = 0.0) -> float:
    """``value`` as a ``float`` strictly between ``low`` and 1 (a probability, a quantile, a confidence δ);
    else ValueError naming ``name`` and the range.

    >>> check_fraction("delta", 0.05)
    0.05
    >>> check_fraction("confidence", 0.3, 0.5)
    Traceback (most recent call last):
    ...
    ValueError: confidence = 0.3 is out of range; accepted: 0.5 < confidence < 1
    """
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in ({low:g}, 1), got {value!r}") from None
    if not low < f < 1:
        raise ValueError(f"{name} = {value} is out of range; accepted: {low:g} < {name} < 1")
    return f
