"""Noise models that a policy *assumes* about its observations.

Two models:

* :class:`Bounded` — rewards in `[low, high]`. By Hoeffding's lemma such a reward is sub-Gaussian with
  scale `σ = (high − low) / 2`, which is how every radius in :mod:`mf_sched.confidence` treats it.
  Values outside the range are rejected by :meth:`NoiseModel.validate` (never silently clipped).
* :class:`SubGaussian` — `σ`-sub-Gaussian rewards (Poiani et al. 2022 §2; Kandasamy et al. 2016 §2).

The *simulated* distributions of an instance (Gaussian, Bernoulli, truncated Gaussian) live in
:mod:`mf_sched.sim.instance`; an instance tells which :class:`NoiseModel` its policies should assume.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["NoiseModel", "Bounded", "SubGaussian", "noise_from_dict", "as_real", "as_real_array"]

#: types that ``float()`` would accept but that are not observations: strings ("0.5") and booleans (True)
_NOT_NUMBERS = (bool, np.bool_, str, bytes, bytearray)


def as_real(value: Any, name: str = "value") -> float:
    """`value` as a float if it is a real number (not a bool, a string, a complex or an array).

    Args:
        value: the value to convert: a Python or numpy integer or float, or a 0-d numeric array.
        name: the name used in the error message.

    >>> as_real(np.float32(0.5)), as_real(3)
    (0.5, 3.0)
    >>> as_real("0.5")
    Traceback (most recent call last):
    ...
    ValueError: value must be a real number, got '0.5' (str)
    """
    bad = isinstance(value, _NOT_NUMBERS) or value is None or isinstance(value, (complex, np.complexfloating))
    if isinstance(value, np.ndarray):
        bad = bad or value.ndim != 0 or value.dtype.kind not in "iuf"
    if not bad:
        try:
            return float(value)
        except (TypeError, ValueError, OverflowError):
            pass
    raise ValueError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")


def as_real_array(values: Any, name: str = "values") -> np.ndarray:
    """`values` as a float64 array if every element is a real number (no bools, strings, None).

    Args:
        values: a (nested) list or tuple of real numbers, or an array of a numeric or object dtype; rows must
            have equal lengths.
        name: the name used in error messages (elements are named `name[i]`).

    >>> as_real_array([1, 0.5]).tolist()
    [1.0, 0.5]
    >>> as_real_array([0.5, True])
    Traceback (most recent call last):
    ...
    ValueError: values[1] must be a real number, got True (bool)
    """
    if isinstance(values, (list, tuple)):  # numpy would turn True into 1.0 and "0.5" into a string array
        flat = list(values)
        if all(isinstance(v, (float, int)) and not isinstance(v, bool) for v in flat):
            return np.array(flat, dtype=float)
        if not any(isinstance(v, (list, tuple, np.ndarray)) for v in flat):
            return np.array([as_real(v, f"{name}[{i}]") for i, v in enumerate(flat)], dtype=float)
        rows = [as_real_array(v, f"{name}[{i}]") for i, v in enumerate(flat)]
        if len({r.shape for r in rows}) > 1:
            raise ValueError(f"{name} must be a rectangular array of real numbers (rows of different lengths)")
        return np.array(rows, dtype=float)
    if isinstance(values, (str, bytes, bytearray)) or values is None:
        raise ValueError(f"{name} must be an array of real numbers, got {values!r}")
    try:
        a = np.asarray(values)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be an array of real numbers") from None
    if a.dtype.kind in "iuf":
        return a.astype(float)
    if a.dtype.kind == "O":
        flat = a.ravel()
        return np.array([as_real(v, f"{name}[{i}]") for i, v in enumerate(flat)], dtype=float).reshape(a.shape)
    if a.dtype.kind == "b" or a.dtype.kind in "US":
        bad = a.ravel()[0].item() if a.size else a
        raise ValueError(f"{name}[0] must be a real number, got {bad!r} ({type(bad).__name__})")
    raise ValueError(f"{name} must be real numbers, got values of dtype {a.dtype}")


class NoiseModel:
    """Base class: what a policy may assume about observation noise."""

    sigma: float

    def validate(self, value: float, *, name: str = "value") -> float:
        """Return `value` as a float, or raise ValueError if it is not a finite real number (strings and
        booleans are refused) or out of range.

        Args:
            value: one observation.
            name: the name used in the error message.
        """
        v = as_real(value, name)
        if not math.isfinite(v):
            raise ValueError(f"{name} = {v} is not finite; observations must be finite real numbers")
        return v

    def validate_array(self, values: Any, *, name: str = "values") -> np.ndarray:
        """Vectorised :meth:`validate`; returns a float64 array.

        Args:
            values: the observations (see :func:`as_real_array` for what is accepted).
            name: the name used in error messages (elements are named `name[i]`).
        """
        a = as_real_array(values, name)
        if not np.all(np.isfinite(a)):
            bad = int(np.flatnonzero(~np.isfinite(a.ravel()))[0])
            raise ValueError(f"{name}[{bad}] = {a.ravel()[bad]} is not finite; observations must be finite")
        return a

    def to_dict(self) -> dict[str, Any]:  # pragma: no cover - overridden
        raise NotImplementedError


@dataclass(frozen=True)
class SubGaussian(NoiseModel):
    """σ-sub-Gaussian observations: `E exp(s(X − µ)) ≤ exp(s²σ²/2)`.

    Attributes:
        sigma: the sub-Gaussian scale `σ`, finite and > 0 (stored as a float).

    >>> SubGaussian(0.5).sigma
    0.5
    """

    sigma: float

    def __post_init__(self) -> None:
        if isinstance(self.sigma, bool) or not isinstance(self.sigma, (int, float, np.floating, np.integer)):
            raise ValueError(f"sigma must be a positive number, got {self.sigma!r}")
        if not (math.isfinite(self.sigma) and self.sigma > 0):
            raise ValueError(f"sigma = {self.sigma} must be finite and > 0")
        object.__setattr__(self, "sigma", float(self.sigma))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "subgaussian", "sigma": self.sigma}


@dataclass(frozen=True)
class Bounded(NoiseModel):
    """Rewards bounded in `[low, high]` (Hoeffding); sub-Gaussian with `σ = (high − low)/2`.

    Attributes:
        low: the smallest possible reward, finite; default 0.
        high: the largest possible reward, finite and greater than `low`; default 1.

    Out-of-range observations are an error, not clipped:

    >>> Bounded(0, 1).sigma
    0.5
    >>> Bounded(0, 1).validate(1.5)
    Traceback (most recent call last):
    ...
    ValueError: value = 1.5 is outside the declared reward range [0.0, 1.0]
    """

    low: float = 0.0
    high: float = 1.0

    def __post_init__(self) -> None:
        lo, hi = float(self.low), float(self.high)
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise ValueError(f"low = {lo} and high = {hi} must be finite")
        if not hi > lo:
            raise ValueError(f"high = {hi} must be greater than low = {lo}")
        object.__setattr__(self, "low", lo)
        object.__setattr__(self, "high", hi)

    @property
    def sigma(self) -> float:  # type: ignore[override]
        return (self.high - self.low) / 2.0

    @property
    def width(self) -> float:
        return self.high - self.low

    def validate(self, value: float, *, name: str = "value") -> float:
        v = super().validate(value, name=name)
        if not self.low <= v <= self.high:
            raise ValueError(f"{name} = {v} is outside the declared reward range [{self.low}, {self.high}]")
        return v

    def validate_array(self, values: Any, *, name: str = "values") -> np.ndarray:
        a = super().validate_array(values, name=name)
        out = (a < self.low) | (a > self.high)
        if np.any(out):
            bad = int(np.flatnonzero(out.ravel())[0])
            raise ValueError(
                f"{name}[{bad}] = {a.ravel()[bad]} is outside the declared reward range [{self.low}, {self.high}]"
            )
        return a

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "bounded", "low": self.low, "high": self.high}


def noise_from_dict(d: Mapping[str, Any] | NoiseModel) -> NoiseModel:
    """Build a :class:`NoiseModel` from `{"kind": "subgaussian", "sigma": s}` or
    `{"kind": "bounded", "low": a, "high": b}` (or return a model unchanged).

    Args:
        d: a mapping with a `kind` (`"subgaussian"` with `sigma`; `"bounded"` with `low` and `high`, default 0
            and 1), or a :class:`NoiseModel`, returned as it is.

    >>> noise_from_dict({"kind": "bounded", "low": 0, "high": 1})
    Bounded(low=0.0, high=1.0)
    """
    if isinstance(d, NoiseModel):
        return d
    if not isinstance(d, Mapping) or "kind" not in d:
        raise ValueError(f"noise must be a NoiseModel or a mapping with a 'kind', got {d!r}")
    kind = d["kind"]
    if kind == "subgaussian":
        return SubGaussian(d["sigma"])
    if kind == "bounded":
        return Bounded(d.get("low", 0.0), d.get("high", 1.0))
    raise ValueError(f"noise kind {kind!r} is unknown; accepted: 'subgaussian', 'bounded'")
