"""Search spaces for continuous-domain policies: box-bounded floats, integers and categoricals.

A :class:`SearchSpace` is an ordered list of dimensions — :class:`Float`, :class:`Int`,
:class:`Categorical` — and a fixed encoding of a parameter setting as a point of the unit cube
`[0, 1]^D`, which is where GP policies (MF-GP-UCB, GP-UCB) model and optimise:

* `Float(low, high)`: one coordinate, `u = (v − low)/(high − low)`; with `log=True` the same in
  `log v` (`low > 0`).
* `Int(low, high)`: one coordinate; the integers own equal-width bins, `u = (v − low + ½)/(high −
  low + 1)` (with `log=True`: bins of equal width in `log` over `[low − ½, high + ½]`, so
  `low ≥ 1`). Decoding rounds to the nearest integer of the bin.
* `Categorical(choices)`: `k` coordinates, a one-hot vector; decoding takes the arg-max (the first
  choice on ties). Choices must be JSON-safe scalars (`str`, `int`, `float`, `bool`, `None`).

:meth:`SearchSpace.snap` maps any point of the cube to the canonical encoding of the setting it decodes
to (bin centres for integers, exact one-hot vectors for categoricals). GP policies evaluate their
acquisition function on snapped points, so it is piecewise constant along integer and categorical
coordinates and a model never sees two encodings of one setting (Garrido-Merchán and
Hernández-Lobato 2020, *Dealing with categorical and integer-valued variables in Bayesian optimization
with Gaussian processes*, Neurocomputing 380).

Steps (Optuna's `step` other than 1) are not a dimension type: an adapter maps a stepped range to an
:class:`Int` over the step indices and back.

The space round-trips through :meth:`SearchSpace.to_dict` / :meth:`SearchSpace.from_dict` (JSON-safe),
so a policy's configuration can hold it. The Optuna adapter maps `FloatDistribution`,
`IntDistribution` (`step` 1) and `CategoricalDistribution` one to one onto these classes.

Example:
    >>> space = SearchSpace([Float("lr", 1e-4, 1e-1, log=True), Int("layers", 1, 4),
    ...                      Categorical("act", ["relu", "tanh"])])
    >>> space.dim                       # 1 + 1 + 2 encoded coordinates
    4
    >>> z = space.encode({"lr": 1e-2, "layers": 3, "act": "tanh"})
    >>> z.round(4).tolist()
    [0.6667, 0.625, 0.0, 1.0]
    >>> space.decode([0.6667, 0.6, 0.7, 0.2])
    {'lr': 0.0100..., 'layers': 3, 'act': 'relu'}
    >>> space.snap([0.5, 0.01, 0.3, 0.4]).tolist()
    [0.5, 0.125, 0.0, 1.0]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Float", "Int", "Categorical", "Dimension", "SearchSpace"]


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise ValueError(f"a dimension name must be a non-empty string, got {name!r}")
    return name


def as_number(label: str, v: Any) -> float:
    """`v` as a finite float, else ValueError naming `label` (booleans are not numbers).

    Args:
        label: the name used in the error message.
        v: the value to convert (anything `float()` accepts, except a bool).
    """
    if isinstance(v, bool):
        raise ValueError(f"{label} must be a number, got {v!r}")
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{label} must be a number, got {v!r}") from None
    if not math.isfinite(f):
        raise ValueError(f"{label} = {f} must be finite")
    return f


def _finite(name: str, what: str, v: Any) -> float:
    return as_number(f"{name}: {what}", v)


class _Range:
    """What :class:`Float` and :class:`Int` share: one encoded coordinate and validated, stored bounds."""

    name: str
    low: Any
    high: Any
    log: bool

    @property
    def width(self) -> int:
        return 1

    def _store(self, lo: Any, hi: Any) -> None:
        object.__setattr__(self, "low", lo)
        object.__setattr__(self, "high", hi)
        object.__setattr__(self, "log", bool(self.log))


@dataclass(frozen=True)
class Float(_Range):
    """A real parameter in `[low, high]` (`low < high`); `log=True` encodes `log v` (`low > 0`).

    Attributes:
        name: the parameter's name, a non-empty string.
        low: the smallest value, finite.
        high: the largest value, finite and greater than `low`.
        log: encode on a log scale (`low` must then be > 0); default linear.

    >>> Float("x", 0.0, 2.0).encode_value(0.5)
    0.25
    """

    name: str
    low: float
    high: float
    log: bool = False

    def __post_init__(self) -> None:
        _check_name(self.name)
        lo, hi = _finite(self.name, "low", self.low), _finite(self.name, "high", self.high)
        if not hi > lo:
            raise ValueError(f"{self.name}: high = {hi} must be greater than low = {lo}")
        if self.log and lo <= 0:
            raise ValueError(f"{self.name}: low = {lo} must be > 0 on a log scale")
        self._store(lo, hi)

    def _ends(self) -> tuple[float, float]:
        return (math.log(self.low), math.log(self.high)) if self.log else (self.low, self.high)

    def encode_value(self, v: Any) -> float:
        f = _finite(self.name, "value", v)
        if not self.low <= f <= self.high:
            raise ValueError(f"{self.name} = {f} is outside its range [{self.low}, {self.high}]")
        a, b = self._ends()
        return ((math.log(f) if self.log else f) - a) / (b - a)

    def decode_value(self, u: float) -> float:
        a, b = self._ends()
        s = a + float(u) * (b - a)
        v = math.exp(s) if self.log else s
        # round-off of exp/log may step one ulp outside the range: keep decoded values inside it
        return min(max(v, self.low), self.high)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "float", "name": self.name, "low": self.low, "high": self.high, "log": self.log}


@dataclass(frozen=True)
class Int(_Range):
    """An integer parameter in `{low, …, high}` (`low ≤ high`); `log=True` needs `low ≥ 1`.

    Attributes:
        name: the parameter's name, a non-empty string.
        low: the smallest value, an integer.
        high: the largest value, an integer `≥ low`.
        log: encode on a log scale (`low` must then be `≥ 1`); default linear.

    >>> d = Int("n", 1, 4)
    >>> [d.decode_value(u) for u in (0.0, 0.2, 0.5, 1.0)]
    [1, 1, 3, 4]
    """

    name: str
    low: int
    high: int
    log: bool = False

    def __post_init__(self) -> None:
        _check_name(self.name)
        for what in ("low", "high"):
            v = getattr(self, what)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise ValueError(f"{self.name}: {what} must be an integer, got {v!r}")
        lo, hi = int(self.low), int(self.high)
        if hi < lo:
            raise ValueError(f"{self.name}: high = {hi} must be >= low = {lo}")
        if self.log and lo < 1:
            raise ValueError(f"{self.name}: low = {lo} must be >= 1 on a log scale")
        self._store(lo, hi)

    def _ends(self) -> tuple[float, float]:
        a, b = self.low - 0.5, self.high + 0.5
        return (math.log(a), math.log(b)) if self.log else (a, b)

    def encode_value(self, v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer, float, np.floating)) or float(v) != round(v):
            raise ValueError(f"{self.name} = {v!r} must be an integer")
        i = int(v)
        if not self.low <= i <= self.high:
            raise ValueError(f"{self.name} = {i} is outside its range [{self.low}, {self.high}]")
        a, b = self._ends()
        return ((math.log(i) if self.log else i) - a) / (b - a)

    def decode_value(self, u: float) -> int:
        a, b = self._ends()
        s = a + float(u) * (b - a)
        v = math.exp(s) if self.log else s
        # u = 1 lands on the upper bin edge high + ½: it belongs to the last bin
        return int(min(max(math.floor(v + 0.5), self.low), self.high))

    def to_dict(self) -> dict[str, Any]:
        return {"type": "int", "name": self.name, "low": self.low, "high": self.high, "log": self.log}


_SCALAR_TYPES = (str, int, float, bool, type(None))


@dataclass(frozen=True)
class Categorical:
    """One of `choices` (distinct JSON-safe scalars), one-hot encoded in `len(choices)` coordinates.

    Attributes:
        name: the parameter's name, a non-empty string.
        choices: the values it can take: a non-empty sequence of distinct str, int, finite float, bool or `None`
            (stored as a tuple; `1` and `True` are different choices).

    >>> Categorical("opt", ["sgd", "adam"]).decode_value([0.2, 0.9])
    'adam'
    """

    name: str
    choices: tuple[Any, ...]

    def __post_init__(self) -> None:
        _check_name(self.name)
        if isinstance(self.choices, (str, bytes)) or not isinstance(self.choices, Iterable):
            raise ValueError(f"{self.name}: choices must be a sequence, got {self.choices!r}")
        ch = tuple(self.choices)
        if not ch:
            raise ValueError(f"{self.name}: choices must not be empty")
        for c in ch:
            if not isinstance(c, _SCALAR_TYPES) or (isinstance(c, float) and not math.isfinite(c)):
                raise ValueError(
                    f"{self.name}: choice {c!r} is not a JSON-safe scalar (str, int, finite float, bool, None)"
                )
        keys = [(type(c).__name__, c) for c in ch]
        if len(set(keys)) != len(keys):
            raise ValueError(f"{self.name}: choices must be distinct, got {list(ch)!r}")
        object.__setattr__(self, "choices", ch)

    @property
    def width(self) -> int:
        return len(self.choices)

    def index(self, v: Any) -> int:
        for i, c in enumerate(self.choices):
            if type(c) is type(v) and c == v:
                return i
        raise ValueError(f"{self.name} = {v!r} is not one of its choices {list(self.choices)!r}")

    def decode_value(self, u: Sequence[float]) -> Any:
        return self.choices[int(np.argmax(np.asarray(u, dtype=float)))]

    def to_dict(self) -> dict[str, Any]:
        return {"type": "categorical", "name": self.name, "choices": list(self.choices)}


Dimension = Float | Int | Categorical


class SearchSpace:
    """An ordered set of named dimensions and their unit-cube encoding (see the module docstring).

    Args:
        dims: the dimensions, in order; names must be distinct.

    Attributes:
        dims: the dimensions.
        names: their names.
        dim: the number of encoded coordinates `D`.
        continuous: boolean mask (length `D`) of the coordinates of :class:`Float` dimensions — the only
            ones a gradient-based optimiser may move (the others are piecewise constant after
            :meth:`snap`).
    """

    def __init__(self, dims: Iterable[Dimension]) -> None:
        ds = tuple(dims)
        if not ds:
            raise ValueError("a search space needs at least one dimension")
        for d in ds:
            if not isinstance(d, (Float, Int, Categorical)):
                raise ValueError(f"dimensions must be Float, Int or Categorical, got {type(d).__name__}")
        names = [d.name for d in ds]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"dimension names must be distinct; repeated: {dup}")
        self.dims: tuple[Dimension, ...] = ds
        self.names: tuple[str, ...] = tuple(names)
        widths = [d.width for d in ds]
        self._starts = np.concatenate([[0], np.cumsum(widths)[:-1]]).astype(np.int64)
        self.dim = int(sum(widths))
        self.continuous = np.zeros(self.dim, dtype=bool)
        # vectorised snapping: integer coordinates and categorical blocks
        self._int_idx: list[int] = []
        self._cat_blocks: list[tuple[int, int]] = []
        for d, s in zip(ds, self._starts.tolist()):
            if isinstance(d, Float):
                self.continuous[s] = True
            elif isinstance(d, Int):
                self._int_idx.append(s)
            else:
                self._cat_blocks.append((s, d.width))
        ints = [d for d in ds if isinstance(d, Int)]
        self._int_cols = np.asarray(self._int_idx, dtype=np.int64)
        lo = np.array([d.low for d in ints], dtype=float)
        hi = np.array([d.high for d in ints], dtype=float)
        lg = np.array([d.log for d in ints], dtype=bool)
        a = np.where(lg, np.log(np.maximum(lo - 0.5, 1e-300)), lo - 0.5)
        b = np.where(lg, np.log(np.maximum(hi + 0.5, 1e-300)), hi + 0.5)
        self._int_lo, self._int_hi, self._int_log, self._int_a, self._int_b = lo, hi, lg, a, b

    # ------------------------------------------------------------------ construction helpers
    @classmethod
    def box(cls, low: Sequence[float], high: Sequence[float], names: Sequence[str] | None = None) -> SearchSpace:
        """A box of :class:`Float` dimensions named `x0, x1, …` (or `names`).

        Args:
            low: the lower bound of each dimension.
            high: the upper bound of each dimension, above `low`, as many as `low`.
            names: the dimensions' names, as many as `low`; `None`: `x0, x1, …`.

        >>> SearchSpace.box([0, 0], [1, 2]).names
        ('x0', 'x1')
        """
        lo, hi = list(low), list(high)
        if len(lo) != len(hi):
            raise ValueError(f"low has {len(lo)} entries but high has {len(hi)}; they must match")
        nm = [f"x{i}" for i in range(len(lo))] if names is None else list(names)
        if len(nm) != len(lo):
            raise ValueError(f"names has {len(nm)} entries but the box has {len(lo)} dimensions")
        return cls([Float(n, a, b) for n, a, b in zip(nm, lo, hi)])

    def __len__(self) -> int:
        return len(self.dims)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SearchSpace) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"SearchSpace({list(self.dims)!r})"

    @property
    def numeric(self) -> bool:
        """True when every dimension is a :class:`Float` or an :class:`Int` (points are numeric vectors)."""
        return not self._cat_blocks

    # ------------------------------------------------------------------ encoding
    def encode(self, params: Mapping[str, Any]) -> np.ndarray:
        """The unit-cube encoding (length :attr:`dim`) of a parameter setting (a mapping name → value).

        Raises ValueError for a missing or unknown name and for a value outside its dimension.

        Args:
            params: a value for every dimension, by name (no other names), each inside its dimension.
        """
        if not isinstance(params, Mapping):
            raise ValueError(f"params must be a mapping name -> value, got {type(params).__name__}")
        missing = [n for n in self.names if n not in params]
        extra = [n for n in params if n not in self.names]
        if missing or extra:
            raise ValueError(f"params must name exactly {list(self.names)}; missing {missing}, unknown {extra}")
        z = np.zeros(self.dim)
        for d, s in zip(self.dims, self._starts.tolist()):
            v = params[d.name]
            if isinstance(d, Categorical):
                z[s + d.index(v)] = 1.0
            else:
                z[s] = d.encode_value(v)
        return z

    def decode(self, z: Sequence[float] | np.ndarray) -> dict[str, Any]:
        """The parameter setting (name → Python value) that a point of the unit cube stands for.

        Args:
            z: a point of the unit cube `[0, 1]^D` (length :attr:`dim`).
        """
        u = self._check_point(z)
        out: dict[str, Any] = {}
        for d, s in zip(self.dims, self._starts.tolist()):
            out[d.name] = d.decode_value(u[s : s + d.width]) if isinstance(d, Categorical) else d.decode_value(u[s])
        return out

    def snap(self, z: Sequence[float] | np.ndarray) -> np.ndarray:
        """Canonical encoding of the setting(s) `z` decodes to; vectorised over rows (shape `(D,)` or
        `(n, D)`). Float coordinates are unchanged; integers move to their bin centre; categorical
        blocks become one-hot (arg-max, first on ties).

        Args:
            z: one point `(D,)` or `n` points `(n, D)` of the encoding (not modified).
        """
        Z = np.array(z, dtype=float, copy=True)
        one = Z.ndim == 1
        Z2 = Z.reshape(1, -1) if one else Z
        if Z2.ndim != 2 or Z2.shape[1] != self.dim:
            raise ValueError(f"points must have {self.dim} coordinates, got shape {Z.shape}")
        if self._int_cols.size:
            u = Z2[:, self._int_cols]
            s = self._int_a + u * (self._int_b - self._int_a)
            v = np.where(self._int_log, np.exp(np.where(self._int_log, s, 0.0)), s)
            i = np.clip(np.floor(v + 0.5), self._int_lo, self._int_hi)
            t = np.where(self._int_log, np.log(np.where(self._int_log, i, 1.0)), i)
            Z2[:, self._int_cols] = (t - self._int_a) / (self._int_b - self._int_a)
        for s, w in self._cat_blocks:
            k = np.argmax(Z2[:, s : s + w], axis=1)
            Z2[:, s : s + w] = 0.0
            Z2[np.arange(Z2.shape[0]), s + k] = 1.0
        return Z2[0] if one else Z2

    def to_array(self, params: Mapping[str, Any]) -> np.ndarray:
        """The values of a numeric setting as a float vector in dimension order (no categoricals).

        Args:
            params: a value for every dimension, by name, each inside its dimension.
        """
        if not self.numeric:
            raise ValueError("to_array needs a space without categorical dimensions")
        self.encode(params)  # validates names and ranges
        return np.array([float(params[n]) for n in self.names])

    def _check_point(self, z: Any) -> np.ndarray:
        u = np.asarray(z, dtype=float)
        if u.shape != (self.dim,):
            raise ValueError(f"a point must have {self.dim} coordinates, got shape {u.shape}")
        if not np.all(np.isfinite(u)) or u.min() < 0.0 or u.max() > 1.0:
            raise ValueError(f"a point must lie in the unit cube [0, 1]^{self.dim}, got {u.tolist()}")
        return u

    # ------------------------------------------------------------------ (de)serialisation
    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form; :meth:`from_dict` rebuilds an equal space."""
        return {"dims": [d.to_dict() for d in self.dims]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SearchSpace:
        """Inverse of :meth:`to_dict`; unknown dimension types are rejected.

        Args:
            d: the output of :meth:`to_dict` (a mapping with a `dims` list of `float`, `int` and `categorical`
                entries), or a :class:`SearchSpace`, returned as it is.

        >>> s = SearchSpace([Int("k", 2, 9, log=True), Categorical("c", [1, "a", None])])
        >>> SearchSpace.from_dict(s.to_dict()) == s
        True
        """
        if isinstance(d, SearchSpace):
            return d
        if not isinstance(d, Mapping) or not isinstance(d.get("dims"), list):
            raise ValueError("a search space dict needs a 'dims' list")
        dims: list[Dimension] = []
        for i, e in enumerate(d["dims"]):
            if not isinstance(e, Mapping):
                raise ValueError(f"dims[{i}] must be a mapping, got {e!r}")
            kind = e.get("type")
            if kind == "float":
                dims.append(Float(e["name"], e["low"], e["high"], bool(e.get("log", False))))
            elif kind == "int":
                dims.append(Int(e["name"], e["low"], e["high"], bool(e.get("log", False))))
            elif kind == "categorical":
                dims.append(Categorical(e["name"], tuple(e["choices"])))
            else:
                raise ValueError(f"dims[{i}] has unknown type {kind!r}; accepted: float, int, categorical")
        return cls(dims)
