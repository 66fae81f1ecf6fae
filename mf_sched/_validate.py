"""Argument checks shared by the policies (and any module that takes user arguments).

Each check returns the value in its canonical type or raises a ValueError whose message names the
argument and the accepted range, in one form: ``"<name> = <value> is out of range; accepted: <range>"``
(``"... is unknown; accepted: ..."`` for a choice, ``"<name> must be <kind>, got <value>"`` for a
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

__all__ = ["check_choice", "check_delta", "check_int", "check_numbers", "check_real"]


def check_int(name: str, value: Any, low: int, high: int | None = None, *, none_ok: bool = False) -> Any:
    """An integer in ``low..high`` (``high=None``: no upper end), as an ``int``.

    Args:
        name: the argument's name, for the message.
        value: what the caller gave (an ``int`` or a NumPy integer; ``bool`` is refused).
        low, high: the accepted range, both ends included.
        none_ok: accept ``None`` (returned as is), e.g. for "no cap".

    >>> check_int("n", 0, 1, none_ok=True)
    Traceback (most recent call last):
    ...
    ValueError: n = 0 is out of range; accepted: >= 1, or None
    """
    if value is None and none_ok:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer{', or None' if none_ok else ''}, got {value!r}")
    v = int(value)
    if v < low or (high is not None and v > high):
        rng = f"{low}..{high}" if high is not None else f">= {low}"
        raise ValueError(f"{name} = {v} is out of range; accepted: {rng}{', or None' if none_ok else ''}")
    return v


def check_real(
    name: str,
    value: Any,
    *,
    gt: float | None = None,
    ge: float | None = None,
    none_ok: bool = False,
    accepted: str | None = None,
) -> Any:
    """A finite real number ``> gt`` / ``>= ge`` (each optional), as a ``float``.

    Args:
        name: the argument's name, for the message.
        value: what the caller gave: a real number (``int``, ``float`` or a NumPy number; ``bool`` and
            strings are refused).
        gt, ge: strict and inclusive lower bounds.
        none_ok: accept ``None`` (returned as is).
        accepted: the accepted range as the message states it (default: built from ``gt``/``ge``), for
            bounds that have a name (``">= 4KM = 16"``).

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
    """Every element of ``values`` as a ``float`` (range checks are the caller's).

    Args:
        name: the argument's name; an element is named ``name[i]`` in the message.
        values: a collection of the types ``kinds`` (a string is not one).
        kinds: the collection types accepted (default any iterable).
        what: what ``values`` must be, as the message states it.

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
    """One of the strings ``choices``.

    >>> check_choice("solver", "simplex", ("highs", "enumerate"))
    Traceback (most recent call last):
    ...
    ValueError: solver = 'simplex' is unknown; accepted: 'highs', 'enumerate'
    """
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} = {value!r} is unknown; accepted: {', '.join(repr(c) for c in choices)}")
    return value


def check_delta(delta: Any) -> float:
    """A confidence parameter δ ∈ (0, 1), as a ``float``.

    >>> check_delta(0.05)
    0.05
    """
    try:
        d = float(delta)
    except (TypeError, ValueError):
        raise ValueError(f"delta must be a number in (0, 1), got {delta!r}") from None
    if not (0.0 < d < 1.0):
        raise ValueError(f"delta = {d} is out of range; accepted: 0 < delta < 1")
    return d
