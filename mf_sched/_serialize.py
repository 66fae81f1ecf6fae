"""Exact, validated, JSON-safe encoding of policy state.

numpy arrays are stored as `{"__ndarray__": {"dtype": ..., "shape": [...], "b64": ...}}` (the raw
little-endian bytes, base64): exact for every float (NaN and ±inf included), compact for large K,
and checked on load (dtype from an allow-list, byte length against the shape). Nothing is ever
evaluated or unpickled. Tuples become lists; dict keys must be strings.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["encode", "decode", "StateFormatError"]

_ALLOWED_DTYPES = {"float64", "float32", "int64", "int32", "bool", "uint8", "uint64"}


class StateFormatError(ValueError):
    """A saved state is malformed (wrong type, dtype, shape or size)."""


def encode(value: Any) -> Any:
    """Turn `value` into JSON-safe data (numpy arrays and scalars included).

    >>> encode({"a": np.arange(3), "b": (1, 2.5)})["b"]
    [1, 2.5]
    """
    if isinstance(value, np.ndarray):
        dt = value.dtype.name
        if dt not in _ALLOWED_DTYPES:
            raise TypeError(f"cannot encode array of dtype {dt}; allowed: {sorted(_ALLOWED_DTYPES)}")
        arr = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<"))
        return {
            "__ndarray__": {
                "dtype": dt,
                "shape": list(value.shape),
                "b64": base64.b64encode(arr.tobytes()).decode("ascii"),
            }
        }
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        if math.isfinite(f):
            return f
        return {"__float__": repr(f)}  # 'nan', 'inf', '-inf' — strict JSON has no literal for them
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"state dict keys must be strings, got {k!r}")
            out[k] = encode(v)
        return out
    raise TypeError(f"cannot encode value of type {type(value).__name__} in a policy state")


def decode(value: Any) -> Any:
    """Inverse of :func:`encode`, validating every array it rebuilds."""
    if isinstance(value, Mapping):
        if "__ndarray__" in value:
            if len(value) != 1:
                raise StateFormatError("an encoded array must have the single key '__ndarray__'")
            return _decode_array(value["__ndarray__"])
        if "__float__" in value:
            s = value["__float__"]
            if s not in ("nan", "inf", "-inf"):
                raise StateFormatError(f"invalid encoded float {s!r}; accepted: 'nan', 'inf', '-inf'")
            return float(s)
        return {str(k): decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise StateFormatError(f"unexpected value of type {type(value).__name__} in a saved state")


def _decode_array(spec: Any) -> np.ndarray:
    if not isinstance(spec, Mapping) or set(spec) != {"dtype", "shape", "b64"}:
        raise StateFormatError("an encoded array needs exactly the keys dtype, shape, b64")
    dt = spec["dtype"]
    if dt not in _ALLOWED_DTYPES:
        raise StateFormatError(f"array dtype {dt!r} is not allowed; allowed: {sorted(_ALLOWED_DTYPES)}")
    shape = spec["shape"]
    if not isinstance(shape, list) or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
        raise StateFormatError(f"array shape {shape!r} must be a list of non-negative integers")
    try:
        raw = base64.b64decode(spec["b64"], validate=True)
    except (ValueError, TypeError) as e:
        raise StateFormatError(f"array data is not valid base64: {e}") from None
    dtype = np.dtype(dt).newbyteorder("<")
    n = int(np.prod(shape)) if shape else 1
    if len(raw) != n * dtype.itemsize:
        raise StateFormatError(f"array data has {len(raw)} bytes but shape {shape} of {dt} needs {n * dtype.itemsize}")
    arr = np.frombuffer(raw, dtype=dtype).reshape(shape)
    return arr.astype(np.dtype(dt), copy=True)
