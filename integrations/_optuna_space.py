"""Search spaces for MFSampler: Optuna distributions as arms (a grid or scrambled-Sobol candidates) or as an
:class:`mf_sched.continuous.space.SearchSpace` for MF-GP-UCB."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

__all__ = [
    "SearchState",
    "candidate_set",
    "as_distributions",
    "to_python",
    "to_space",
    "point_of",
    "params_key",
    "same_distribution",
]


def same_distribution(a: BaseDistribution | None, b: BaseDistribution) -> bool:
    """``a == b``, with a C-speed first try for categoricals (Optuna compares choices one by one in Python)."""
    if isinstance(a, CategoricalDistribution) and isinstance(b, CategoricalDistribution) and a.choices == b.choices:
        return True
    return a == b


def point_of(policy: Any, pull: Any) -> dict[str, Any]:
    return {k: to_python(v) for k, v in policy.point(pull).items()}


def to_space(space: Mapping[str, BaseDistribution]) -> Any:
    """Optuna distributions as an :class:`mf_sched.continuous.space.SearchSpace` (stepped floats become their grid)."""
    from mf_sched.continuous.space import Categorical, Float, Int, SearchSpace

    dims = []
    for name in sorted(space):
        d = space[name]
        if isinstance(d, CategoricalDistribution):
            dims.append(Categorical(name, list(d.choices)))
        elif isinstance(d, IntDistribution):
            if d.step != 1:
                dims.append(Categorical(name, list(range(d.low, d.high + 1, d.step))))
            else:
                dims.append(Int(name, d.low, d.high, log=d.log))
        elif isinstance(d, FloatDistribution) and d.step is not None:
            dims.append(Categorical(name, _grid(d, 10**6)))
        elif isinstance(d, FloatDistribution):
            dims.append(Float(name, d.low, d.high, log=d.log))
        else:  # pragma: no cover - Optuna has no other distribution types
            raise ValueError(f"unsupported distribution {d!r} for {name!r}")
    return SearchSpace(dims)


def _grid(dist: BaseDistribution, max_points: int) -> list[Any] | None:
    if isinstance(dist, CategoricalDistribution):
        return list(dist.choices)
    if isinstance(dist, IntDistribution):
        n = (dist.high - dist.low) // dist.step + 1
        return list(range(dist.low, dist.high + 1, dist.step)) if n <= max_points and not dist.log else None
    if isinstance(dist, FloatDistribution) and dist.step is not None:
        n = int(round((dist.high - dist.low) / dist.step)) + 1
        return [float(dist.low + i * dist.step) for i in range(n)] if n <= max_points else None
    return None


def _from_unit(dist: BaseDistribution, u: float) -> Any:
    if isinstance(dist, CategoricalDistribution):
        return dist.choices[min(int(u * len(dist.choices)), len(dist.choices) - 1)]
    lo, hi = float(dist.low), float(dist.high)
    x = math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo))) if dist.log else lo + u * (hi - lo)
    if isinstance(dist, IntDistribution):
        k = int(round((x - dist.low) / dist.step))
        return int(min(dist.high, dist.low + k * dist.step))
    if dist.step is not None:
        k = int(round((x - lo) / dist.step))
        return float(min(hi, lo + k * dist.step))
    return float(min(hi, max(lo, x)))


def to_python(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v


def as_distributions(space: Mapping[str, Any]) -> dict[str, BaseDistribution]:
    out: dict[str, BaseDistribution] = {}
    for name, d in space.items():
        if isinstance(d, BaseDistribution):
            out[name] = d
        elif isinstance(d, (list, tuple)) and len(d) > 0:
            out[name] = CategoricalDistribution([to_python(x) for x in d])
        else:
            raise ValueError(
                f"search_space[{name!r}] = {d!r} is not accepted; accepted: a non-empty list of values or an "
                "optuna distribution"
            )
    if not out:
        raise ValueError("search_space is empty; accepted: a mapping name -> values or distribution")
    return out


def candidate_set(
    space: Mapping[str, BaseDistribution], *, max_grid: int = 1000, n_candidates: int = 64, seed: int = 0
) -> list[dict[str, Any]]:
    """The arms of a search space: its full grid when finite with ``≤ max_grid`` points, else ``n_candidates``
    scrambled-Sobol points (deterministic in ``seed``; discrete dimensions are snapped)."""
    names = sorted(space)
    grids = [_grid(space[n], max_grid) for n in names]
    if all(g is not None for g in grids) and math.prod(len(g) for g in grids) <= max_grid:
        return [dict(zip(names, combo)) for combo in itertools.product(*grids)]
    from scipy.stats import qmc

    u = qmc.Sobol(d=len(names), scramble=True, seed=seed).random(n_candidates)
    out, seen = [], set()
    for row in u:
        c = {n: _from_unit(space[n], float(x)) for n, x in zip(names, row)}
        key = tuple(repr(c[n]) for n in names)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def params_key(params: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """A hashable key of a configuration (for O(1) parameter → arm lookup): sorted names with ``repr`` values."""
    return tuple((k, repr(to_python(params[k]))) for k in sorted(params))


@dataclass
class SearchState:
    """The search space an MFSampler works over, shared by the sampler and its strategy (finite arms or a
    continuous GP): the Optuna distributions (``space``; given by ``search_space=`` when ``explicit``, else learnt
    from the first trial), the arms built from them (``candidates``, finite-armed policies only), and whether the
    space turned out conditional or changing (``dynamic``: the fallback sampler then takes over).

    >>> from optuna.distributions import CategoricalDistribution
    >>> s = SearchState(max_grid=100, n_candidates=10, candidate_seed=0)
    >>> s.set_candidates({"q": CategoricalDistribution([0.3, 0.6])})
    >>> s.candidates, s.arm_of_params({"q": 0.6}), s.arm_of_params({"q": 0.9})
    ([{'q': 0.3}, {'q': 0.6}], 1, None)
    """

    max_grid: int
    n_candidates: int
    candidate_seed: int
    space: dict[str, BaseDistribution] | None = None
    explicit: bool = False
    dynamic: bool = False
    candidates: list[dict[str, Any]] | None = None
    index: dict[Any, int] = field(default_factory=dict)

    def set_candidates(self, space: Mapping[str, BaseDistribution]) -> None:
        """Take ``space`` as the search space and build its candidates (:func:`candidate_set`)."""
        self.space = dict(space)
        self.candidates = candidate_set(
            self.space, max_grid=self.max_grid, n_candidates=self.n_candidates, seed=self.candidate_seed
        )
        self.index = {params_key(c): i for i, c in enumerate(self.candidates)}

    def arm_of_params(self, params: Mapping[str, Any]) -> int | None:
        """The candidate whose parameters are ``params``; None if none is (or the candidates are not built). An
        objective with no parameters has one candidate, ``{}``."""
        if self.candidates is None:
            return None
        try:
            return self.index.get(params_key(params))
        except TypeError:  # pragma: no cover - unhashable parameter values
            return None
