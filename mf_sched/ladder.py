"""The fidelity ladder: costs λ(m), bias bounds ζ(m) and optional resources.

Notation follows Wang et al. (2023) §1.1 and Poiani et al. (2022) §2: fidelity `m` (0-based here,
`0 .. M-1`; the papers count `1 .. M`) costs `λ(m)` per pull and its mean is at most `ζ(m)`
away from the full-fidelity mean, `|µ_k^(m) − µ_k^(M)| ≤ ζ(m)`, with `ζ(M) = 0`. Poiani et al.
call the same objects `λ_m` and `ξ_m`.

Rules enforced when a ladder is built (a violation raises :class:`ValueError` naming the value and the
rule):

* costs are finite, strictly positive and strictly increasing. Wang et al. allow equal costs, Poiani et
  al. require strict increase; a fidelity that costs as much as the next one is dominated (Poiani et
  al., footnote 1) and must be removed, so we require strict increase;
* `ζ(m)` is finite and non-negative, and `ζ(M) = 0` (the last fidelity defines the target);
* the optional order-aware bias spread `γ(m)` (Poiani et al. 2022 §5, used by IISE-γ and MF-UCB-style
  policies) is finite, non-negative, with `γ(M) = 0`;
* the optional resources (e.g. epochs 1, 3, 9, 27, 81) are finite, positive and strictly increasing;
* all sequences have the same length `M ≥ 1`.

ζ need not be monotone (Wang et al. do not assume it); :attr:`FidelityLadder.is_zeta_monotone` reports it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mf_sched._validate import check_numbers

__all__ = ["FidelityLadder"]


def _as_float_tuple(name: str, values: Iterable[Any]) -> tuple[float, ...]:
    out = check_numbers(name, values)
    for i, f in enumerate(out):
        if not math.isfinite(f):
            raise ValueError(f"{name}[{i}] = {f} is not finite; every {name} value must be a finite number")
    return tuple(out)


@dataclass(frozen=True)
class FidelityLadder:
    """M fidelity levels with their costs `λ(m)`, bias bounds `ζ(m)` and optional extras.

    Args:
        costs: `λ(1) < … < λ(M)`, strictly positive and strictly increasing.
        zeta: bias bounds `ζ(m) ≥ 0` with `ζ(M) = 0`. Defaults to all zeros except that this is
            only allowed for `M = 1` (a multi-fidelity ladder without biases is almost always a
            mistake; pass zeros explicitly if you mean it).
        gamma: optional order-aware bias spread `γ(m) = max_{i,j} |ξ_{i,m} − ξ_{j,m}|` (or an upper
            bound `φ(m) ≥ γ(m)`), `γ(M) = 0`; used by IISE-γ (Poiani et al. 2022, §5).
        resources: optional resource per level (e.g. epochs `1, 3, 9, 27, 81`) that adapters map to
            training steps; strictly increasing and positive.
        names: optional labels for display (e.g. `"3 epochs"`).

    Example:
        >>> ladder = FidelityLadder(costs=[1, 3, 9], zeta=[0.2, 0.05, 0.0], resources=[1, 3, 9])
        >>> ladder.M, ladder.top
        (3, 2)
        >>> ladder.cost(1)
        3.0
        >>> FidelityLadder(costs=[1, 1], zeta=[0.1, 0.0])
        Traceback (most recent call last):
        ...
        ValueError: costs must be strictly increasing: costs[1] = 1.0 is not greater than costs[0] = 1.0 ...
    """

    costs: tuple[float, ...]
    zeta: tuple[float, ...] = field(default=())
    gamma: tuple[float, ...] | None = None
    resources: tuple[float, ...] | None = None
    names: tuple[str, ...] | None = None

    def __init__(
        self,
        costs: Sequence[float],
        zeta: Sequence[float] | None = None,
        gamma: Sequence[float] | None = None,
        resources: Sequence[float] | None = None,
        names: Sequence[str] | None = None,
    ) -> None:
        c = _as_float_tuple("costs", costs)
        if len(c) == 0:
            raise ValueError("costs must hold at least one fidelity level (M >= 1), got an empty sequence")
        for i, v in enumerate(c):
            if v <= 0:
                raise ValueError(f"costs[{i}] = {v} must be > 0 (every fidelity has a positive cost λ(m))")
        for i in range(1, len(c)):
            if not c[i] > c[i - 1]:
                raise ValueError(
                    f"costs must be strictly increasing: costs[{i}] = {c[i]} is not greater than "
                    f"costs[{i - 1}] = {c[i - 1]} (a fidelity that costs no less than a later one is "
                    "dominated; remove it)"
                )
        M = len(c)
        if zeta is None:
            if M > 1:
                raise ValueError(
                    "zeta is required when there is more than one fidelity: give the bias bound ζ(m) of "
                    "each level (e.g. estimated with mf_sched.curves.calibration), with zeta[-1] = 0"
                )
            z: tuple[float, ...] = (0.0,)
        else:
            z = _as_float_tuple("zeta", zeta)
        self._check_bias("zeta", z, M)
        g = None
        if gamma is not None:
            g = _as_float_tuple("gamma", gamma)
            self._check_bias("gamma", g, M)
        r = None
        if resources is not None:
            r = _as_float_tuple("resources", resources)
            if len(r) != M:
                raise ValueError(f"resources has length {len(r)} but costs has length {M}; they must match")
            for i, v in enumerate(r):
                if v <= 0:
                    raise ValueError(f"resources[{i}] = {v} must be > 0")
            for i in range(1, M):
                if not r[i] > r[i - 1]:
                    raise ValueError(
                        f"resources must be strictly increasing: resources[{i}] = {r[i]} is not greater "
                        f"than resources[{i - 1}] = {r[i - 1]}"
                    )
        n = None
        if names is not None:
            if isinstance(names, (str, bytes)) or not isinstance(names, Iterable):
                raise ValueError(f"names must be a sequence of labels (one per fidelity), got {names!r}")
            items = list(names)
            for i, x in enumerate(items):
                if isinstance(x, bool) or not isinstance(x, (str, int, float)):
                    raise ValueError(f"names[{i}] must be a string, got {x!r}")
            n = tuple(str(x) for x in items)
            if len(n) != M:
                raise ValueError(f"names has length {len(n)} but costs has length {M}; they must match")
        object.__setattr__(self, "costs", c)
        object.__setattr__(self, "zeta", z)
        object.__setattr__(self, "gamma", g)
        object.__setattr__(self, "resources", r)
        object.__setattr__(self, "names", n)

    @staticmethod
    def _check_bias(name: str, values: tuple[float, ...], M: int) -> None:
        if len(values) != M:
            raise ValueError(f"{name} has length {len(values)} but costs has length {M}; they must match")
        for i, v in enumerate(values):
            if v < 0:
                raise ValueError(f"{name}[{i}] = {v} must be >= 0 (a bias bound is a distance)")
        if values[-1] != 0.0:
            raise ValueError(
                f"{name}[-1] = {values[-1]} must be 0: the last fidelity defines the target metric, "
                f"so its bias bound is 0 by definition"
            )

    # ------------------------------------------------------------------ accessors
    @property
    def M(self) -> int:
        """Number of fidelity levels."""
        return len(self.costs)

    @property
    def top(self) -> int:
        """Index of the highest fidelity, `M − 1`."""
        return len(self.costs) - 1

    def cost(self, m: int) -> float:
        """Cost `λ(m)` of one pull at fidelity `m` (0-based).

        Args:
            m: the fidelity index, an integer in `0 .. M − 1` (ValueError otherwise).
        """
        return self.costs[self.check_index(m)]

    def check_index(self, m: int) -> int:
        """`m` as a plain `int` when it is a fidelity index of this ladder (`0 .. M − 1`); otherwise a
        `ValueError` naming the accepted range.

        Args:
            m: the index to check; a Python or numpy integer (not a bool) in `0 .. M − 1`.

        >>> lad = FidelityLadder([1, 3, 9], zeta=[0.2, 0.1, 0.0])
        >>> lad.check_index(2)
        2
        >>> lad.check_index(3)
        Traceback (most recent call last):
        ...
        ValueError: fidelity index 3 is out of range; accepted: integers 0..2
        """
        if not isinstance(m, (int, np.integer)) or isinstance(m, bool) or not 0 <= m < self.M:
            raise ValueError(f"fidelity index {m!r} is out of range; accepted: integers 0..{self.M - 1}")
        return int(m)

    _check_index = check_index  # the former private name, kept as an alias

    @property
    def costs_array(self) -> np.ndarray:
        """Costs as a read-only float64 array."""
        a = np.asarray(self.costs, dtype=float)
        a.setflags(write=False)
        return a

    @property
    def zeta_array(self) -> np.ndarray:
        """Bias bounds as a read-only float64 array."""
        a = np.asarray(self.zeta, dtype=float)
        a.setflags(write=False)
        return a

    @property
    def is_zeta_monotone(self) -> bool:
        """True when ζ is non-increasing in m (usual in tuning; not required by the theory)."""
        return all(self.zeta[i] >= self.zeta[i + 1] for i in range(self.M - 1))

    def incremental_cost(self, m: int, from_m: int | None) -> float:
        """Cost of reaching fidelity `m` from `from_m` in a resumable run: `λ(m) − λ(from_m)`.

        Used by the *resumable runs* observation semantics (`semantics="resumable"` of
        :func:`mf_sched.sim.simulate.run_policy`), where an arm is a training run advancing through fidelities.

        Args:
            m: the fidelity the run advances to, an integer in `0 .. M − 1`.
            from_m: the fidelity the run has already reached, an integer below `m`; `None` for a fresh run (the
                cost is then `λ(m)`).

        >>> FidelityLadder([1, 3, 9], [0.2, 0.1, 0]).incremental_cost(2, from_m=0)
        8.0
        """
        m = self.check_index(m)
        if from_m is None:
            return self.costs[m]
        from_m = self.check_index(from_m)
        if from_m >= m:
            raise ValueError(f"from_m={from_m} must be below m={m} to advance a run")
        return self.costs[m] - self.costs[from_m]

    # ------------------------------------------------------------------ (de)serialisation
    def to_dict(self) -> dict[str, Any]:
        """JSON-safe representation (round-trips through :meth:`from_dict`)."""
        d: dict[str, Any] = {"costs": list(self.costs), "zeta": list(self.zeta)}
        if self.gamma is not None:
            d["gamma"] = list(self.gamma)
        if self.resources is not None:
            d["resources"] = list(self.resources)
        if self.names is not None:
            d["names"] = list(self.names)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FidelityLadder:
        """Build from :meth:`to_dict` output; unknown keys are rejected.

        Args:
            d: a mapping with the keys of :meth:`to_dict`: `costs` (required), `zeta` (required when `M > 1`),
                `gamma`, `resources` and `names` (optional); each is validated as by the constructor.
        """
        if not isinstance(d, Mapping):
            raise ValueError(f"a ladder must be a mapping with keys costs, zeta, ...; got {type(d).__name__}")
        allowed = {"costs", "zeta", "gamma", "resources", "names"}
        extra = set(d) - allowed
        if extra:
            raise ValueError(f"unknown ladder keys {sorted(extra)}; accepted: {sorted(allowed)}")
        if "costs" not in d:
            raise ValueError("a ladder needs 'costs'")
        return cls(
            costs=d["costs"],
            zeta=d.get("zeta"),
            gamma=d.get("gamma"),
            resources=d.get("resources"),
            names=d.get("names"),
        )

    def with_zeta(self, zeta: Sequence[float]) -> FidelityLadder:
        """A copy with other bias bounds (e.g. from a calibration).

        Args:
            zeta: the new bias bounds, one per fidelity, finite, `≥ 0`, with `zeta[-1] = 0`.
        """
        return FidelityLadder(self.costs, zeta, self.gamma, self.resources, self.names)

    def with_gamma(self, gamma: Sequence[float] | None) -> FidelityLadder:
        """A copy with another order-aware bias spread γ.

        Args:
            gamma: the new bias spread, one per fidelity, finite, `≥ 0`, with `gamma[-1] = 0`; `None` removes it.
        """
        return FidelityLadder(self.costs, self.zeta, gamma, self.resources, self.names)

    def describe(self) -> str:
        """A small human-readable table."""
        rows = [
            "m  cost        zeta      " + ("gamma     " if self.gamma else "") + ("resource" if self.resources else "")
        ]
        for m in range(self.M):
            row = f"{m:<2d} {self.costs[m]:<11.6g} {self.zeta[m]:<9.4g}"
            if self.gamma is not None:
                row += f" {self.gamma[m]:<9.4g}"
            if self.resources is not None:
                row += f" {self.resources[m]:g}"
            rows.append(row)
        return "\n".join(rows)
