"""Argument checks shared by every module that takes user arguments (policies, simulators, curves, rungs).

Each check returns the value in its canonical type or raises a ValueError whose message names the
argument and the accepted range, in one form: `"<name> = <value> is out of range; accepted: <range>"`
(`"... is unknown; accepted: ..."` for a choice, `"<name> must be <kind>, got <value>"` for a
value of the wrong kind). Booleans are never numbers here.

>>> check_int("rounds", 3, 1)
3
>>> check_real("eta", 1, gt=1.0)
Traceback (most recent call last):
...
ValueError: eta = 1 is out of range; accepted: a finite number > 1
>>> check_choice("t_mode", "round", ("round", "pulls"))
'round'
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "check_choice",
    "check_delta",
    "check_fraction",
    "check_int",
    "check_numbers",
    "check_optional_int",
    "check_real",
]


def _int_range(low: int, high: int | None) -> str:
    return f"an integer >= {low}" if high is None else f"an integer in {low}..{high}"


def check_int(name: str, value: Any, low: int = 1, high: int | None = None, *, none_ok: bool = False) -> Any:
    """An integer in `low..high` (`high=None`: no upper end), as an `int`.

    Args:
        name: the argument's name, for the message.
        value: what the caller gave (an `int` or a NumPy integer; `bool` is refused).
        low, high: the accepted range, both ends included.
        none_ok: accept `None` (returned as is), e.g. for "no cap".

    >>> check_int("runs", 3)
    3
    >>> check_int("rung", 4, 0, 3)
    Traceback (most recent call last):
    ...
    ValueError: rung = 4 is out of range; accepted: an integer in 0..3
    >>> check_int("n", 0, 1, none_ok=True)
    Traceback (most recent call last):
    ...
    ValueError: n = 0 is out of range; accepted: an integer >= 1, or None
    """
    if value is None and none_ok:
        return None
    accepted = _int_range(low, high) + (", or None" if none_ok else "")
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}; accepted: {accepted}")
    v = int(value)
    if v < low or (high is not None and v > high):
        raise ValueError(f"{name} = {v} is out of range; accepted: {accepted}")
    return v


def check_optional_int(name: str, value: Any, low: int = 1, high: int | None = None, *, none: str = "") -> int | None:
    """:func:`check_int`, or None when `value` is None; `none` says what None means (shown in the error).

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
            f"{name} = {value!r} is out of range; accepted: {_int_range(low, high)}, or None{meaning}"
        ) from None


def check_real(
    name: str,
    value: Any,
    *,
    gt: float | None = None,
    ge: float | None = None,
    none_ok: bool = False,
    accepted: str | None = None,
) -> Any:
    """A finite real number `> gt` / `>= ge` (each optional), as a `float`.

    Args:
        name: the argument's name, for the message.
        value: what the caller gave: a real number (`int`, `float` or a NumPy number; `bool` and
            strings are refused).
        gt, ge: strict and inclusive lower bounds.
        none_ok: accept `None` (returned as is).
        accepted: the accepted range as the message states it (default: built from `gt`/`ge`), for
            bounds that have a name (`">= 4KM = 16"`).

    >>> check_real("epsilon", 0.5, ge=0.0)
    0.5
    >>> check_real("c", 0, gt=0.0)
    Traceback (most recent call last):
    ...
    ValueError: c = 0 is out of range; accepted: a finite number > 0
    """
    if value is None and none_ok:
        return None
    if accepted is None:
        parts = [f"> {gt:g}" if gt is not None else "", f">= {ge:g}" if ge is not None else ""]
        accepted = " ".join(["a finite number", *filter(None, parts)]) + (", or None" if none_ok else "")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {value!r}; accepted: {accepted}")
    v = float(value)
    if not math.isfinite(v) or (gt is not None and not v > gt) or (ge is not None and not v >= ge):
        raise ValueError(f"{name} = {value} is out of range; accepted: {accepted}")
    return v


def check_numbers(
    name: str,
    values: Any,
    *,
    kinds: tuple[type, ...] = (Iterable,),
    what: str = "a sequence of numbers",
) -> list[float]:
    """Every element of `values` as a `float` (range checks are the caller's).

    Args:
        name: the argument's name; an element is named `name[i]` in the message.
        values: a collection of the types `kinds` (a string is not one).
        kinds: the collection types accepted (default any iterable).
        what: what `values` must be, as the message states it.

    >>> check_numbers("costs", [1, 2.5])
    [1.0, 2.5]
    >>> check_numbers("costs", [1, True])
    Traceback (most recent call last):
    ...
    ValueError: costs[1] must be a number, got True
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, kinds):
        raise ValueError(f"{name} must be {what}, got {values!r}")
    out = []
    for i, v in enumerate(values):
        try:
            if isinstance(v, bool):
                raise TypeError
            out.append(float(v))
        except (TypeError, ValueError):
            raise ValueError(f"{name}[{i}] must be a number, got {v!r}") from None
    return out


def check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    """One of the strings `choices`.

    >>> check_choice("solver", "simplex", ("highs", "enumerate"))
    Traceback (most recent call last):
    ...
    ValueError: solver = 'simplex' is unknown; accepted: 'highs', 'enumerate'
    """
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} = {value!r} is unknown; accepted: {', '.join(repr(c) for c in choices)}")
    return value


def check_fraction(name: str, value: Any, low: float = 0.0) -> float:
    """`value` as a `float` strictly between `low` and 1 (a probability, a quantile, a confidence δ);
    else ValueError naming `name` and the range.

    >>> check_fraction("quantile", 0.9)
    0.9
    >>> check_fraction("confidence", 0.3, 0.5)
    Traceback (most recent call last):
    ...
    ValueError: confidence = 0.3 is out of range; accepted: 0.5 < confidence < 1
    """
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number in ({low:g}, 1), got {value!r}")
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in ({low:g}, 1), got {value!r}") from None
    if not low < f < 1:
        raise ValueError(f"{name} = {value} is out of range; accepted: {low:g} < {name} < 1")
    return f


def check_delta(delta: Any) -> float:
    """A confidence parameter δ ∈ (0, 1), as a `float` (:func:`check_fraction` named `delta`).

    >>> check_delta(0.05)
    0.05
    """
    return check_fraction("delta", delta)
