"""Search spaces for MFSampler: Optuna distributions as arms — a grid, arms whose configurations a proposer
(TPE by default) gives one at a time (:class:`ProposedArms`), or scrambled-Sobol candidates — or as an
:class:`mf_sched.continuous.space.SearchSpace` for MF-GP-UCB."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.trial import FrozenTrial

from ._optuna_race import ARM, DISCOVERY

__all__ = [
    "SearchState",
    "ProposedArms",
    "candidate_set",
    "grid_points",
    "as_distributions",
    "to_python",
    "to_space",
    "point_of",
    "params_key",
    "same_distribution",
]


def same_distribution(a: BaseDistribution | None, b: BaseDistribution) -> bool:
    """`a == b`, with a C-speed first try for categoricals (Optuna compares choices one by one in Python)."""
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


def grid_points(space: Mapping[str, BaseDistribution], max_grid: int = 1000) -> list[dict[str, Any]] | None:
    """Every configuration of `space` when it is a finite grid of `≤ max_grid` points (categoricals, integer
    ranges without `log`, stepped floats), else None."""
    names = sorted(space)
    grids = [_grid(space[n], max_grid) for n in names]
    if all(g is not None for g in grids) and math.prod(len(g) for g in grids) <= max_grid:  # type: ignore[arg-type]
        return [dict(zip(names, combo)) for combo in itertools.product(*grids)]  # type: ignore[arg-type]
    return None


def candidate_set(
    space: Mapping[str, BaseDistribution], *, max_grid: int = 1000, n_candidates: int = 64, seed: int = 0
) -> list[dict[str, Any]]:
    """The arms of a search space: its full grid when finite with `≤ max_grid` points, else `n_candidates`
    scrambled-Sobol points (deterministic in `seed`; discrete dimensions are snapped). MFSampler uses the Sobol
    points only with `proposer="sobol"` (or a registered policy other than `race`); by default the arms of a
    space that is not a small grid are proposed one at a time (:class:`ProposedArms`).

    Args:
        space: the search space, parameter name → Optuna distribution.
        max_grid: the largest grid enumerated in full (every parameter finite: categorical, stepped or integer).
        n_candidates: the number of Sobol points drawn otherwise (duplicates after snapping are dropped).
        seed: seeds the scrambling.
    """
    grid = grid_points(space, max_grid)
    if grid is not None:
        return grid
    names = sorted(space)
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
    """A hashable key of a configuration (for O(1) parameter → arm lookup): sorted names with `repr` values."""
    return tuple((k, repr(to_python(params[k]))) for k in sorted(params))


@dataclass
class SearchState:
    """The search space an MFSampler works over, shared by the sampler and its strategy (finite arms or a
    continuous GP): the Optuna distributions (`space`; given by `search_space=` when `explicit`, else learnt
    from the first trial), the arms built from them (`candidates`: a grid, or scrambled-Sobol points; finite-armed
    policies only), and whether the space turned out conditional or changing (`dynamic`: the fallback sampler
    then takes over). With `propose` (the `race` policy with a proposer), a space that is not a grid of
    `≤ max_grid` points has `n_candidates` arms whose configurations the proposer gives one at a time
    (`lazy`; :class:`ProposedArms`) instead of fixed candidates.

    >>> from optuna.distributions import CategoricalDistribution, FloatDistribution
    >>> s = SearchState(max_grid=100, n_candidates=10, candidate_seed=0)
    >>> s.set_candidates({"q": CategoricalDistribution([0.3, 0.6])})
    >>> s.candidates, s.arm_of_params({"q": 0.6}), s.arm_of_params({"q": 0.9})
    ([{'q': 0.3}, {'q': 0.6}], 1, None)
    >>> lazy = SearchState(max_grid=100, n_candidates=10, candidate_seed=0, propose=True)
    >>> lazy.set_candidates({"lr": FloatDistribution(1e-4, 1e-1, log=True)})
    >>> lazy.lazy, lazy.candidates, lazy.n_arms
    (True, None, 10)
    """

    max_grid: int
    n_candidates: int
    candidate_seed: int
    space: dict[str, BaseDistribution] | None = None
    explicit: bool = False
    dynamic: bool = False
    candidates: list[dict[str, Any]] | None = None
    index: dict[Any, int] = field(default_factory=dict)
    propose: bool = False
    lazy: bool = False

    @property
    def known(self) -> bool:
        """Whether the arms are known (the space is, and its candidates are built or proposed lazily)."""
        return self.candidates is not None or self.lazy

    @property
    def n_arms(self) -> int | None:
        """The number of arms K (None while the space is unknown)."""
        if self.lazy:
            return self.n_candidates
        return None if self.candidates is None else len(self.candidates)

    def set_candidates(self, space: Mapping[str, BaseDistribution]) -> None:
        """Take `space` as the search space and build its arms: its grid when finite (`≤ max_grid` points);
        else, with `propose`, `n_candidates` lazily proposed arms; else scrambled-Sobol points
        (:func:`candidate_set`)."""
        self.space = dict(space)
        grid = grid_points(self.space, self.max_grid)
        if grid is None and self.propose:
            self.lazy, self.candidates, self.index = True, None, {}
            return
        self.candidates = grid if grid is not None else candidate_set(
            self.space, max_grid=self.max_grid, n_candidates=self.n_candidates, seed=self.candidate_seed
        )  # fmt: skip
        self.index = {params_key(c): i for i, c in enumerate(self.candidates)}

    def arm_of_params(self, params: Mapping[str, Any]) -> int | None:
        """The candidate whose parameters are `params`; None if none is (or the candidates are not built). An
        objective with no parameters has one candidate, `{}`."""
        if self.candidates is None:
            return None
        try:
            return self.index.get(params_key(params))
        except TypeError:  # pragma: no cover - unhashable parameter values
            return None


def _int_attr(attrs: Mapping[str, Any], key: str) -> int | None:
    v = attrs.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


class ProposedArms:
    """The arms of one study whose configurations a proposer gives one at a time (:attr:`SearchState.lazy`).

    Arm `k`'s configuration is that of the trial that started it: per parameter, the value of the
    lowest-numbered trial assigned arm `k` — system attribute `mf:arm`, or `mf:discovery` for a trial started
    before the search space was known — that suggested it (a retry of a trial that failed before suggesting
    everything completes it). It is a function of the study's trials alone, so every process rebuilds the same
    arms from the storage (:meth:`rebuild`; the leading run of finished trials, which never change, is folded
    once). A trial assigned arm `k` whose values differ from arm `k`'s (two workers that started the same arm
    at the same moment: the lower-numbered one's values are the arm's) does not evaluate arm `k`.

    >>> import optuna
    >>> from optuna.distributions import FloatDistribution, IntDistribution
    >>> optuna.logging.set_verbosity(optuna.logging.WARNING)
    >>> d = {"lr": FloatDistribution(1e-4, 1e-1, log=True), "n": IntDistribution(1, 8)}
    >>> study = optuna.create_study()
    >>> for arm, params in [(0, {"lr": 0.01, "n": 3}), (1, {"lr": 0.002}), (1, {"lr": 0.002, "n": 5}),
    ...                     (0, {"lr": 0.05, "n": 3})]:
    ...     study.add_trial(optuna.trial.create_trial(
    ...         value=0.0, params=params, distributions={k: d[k] for k in params}, system_attrs={"mf:arm": arm}))
    >>> arms = ProposedArms(4)
    >>> arms.rebuild(study.trials)
    >>> arms.params(0), arms.params(1), arms.params(2)
    ({'lr': 0.01, 'n': 3}, {'lr': 0.002, 'n': 5}, {})
    >>> [arms.arm_of(t) for t in study.trials]     # trial 3 claimed arm 0 with other values
    [0, 1, 1, None]
    >>> arms.arm_of_params({"n": 5, "lr": 0.002}), arms.started
    (1, 2)
    """

    def __init__(self, n_arms: int) -> None:
        self.n_arms = int(n_arms)
        self._params: list[dict[str, Any]] = [{} for _ in range(self.n_arms)]
        self._base: list[dict[str, Any]] = [{} for _ in range(self.n_arms)]  # after the finished prefix
        self._prefix = 0  # trials[:_prefix] (numbers 0 .. _prefix - 1) are finished and folded into _base
        self._index: dict[Any, int] | None = None

    def index_of(self, t: FrozenTrial) -> int | None:
        """The arm `t` was assigned (`mf:arm`, else `mf:discovery`), whatever its values; None if none."""
        attrs = t.system_attrs
        a = _int_attr(attrs, ARM)
        if a is None:
            a = _int_attr(attrs, DISCOVERY)
        return a if a is not None and 0 <= a < self.n_arms else None

    def rebuild(self, trials: Sequence[FrozenTrial]) -> None:
        """Rebuild the arms from the study's `trials` (all of them, as the storage returns them)."""
        ordered = list(trials)
        n = len(ordered)
        contiguous = n == 0 or (ordered[0].number == 0 and ordered[-1].number == n - 1)
        if not contiguous:
            ordered.sort(key=lambda x: x.number)
        start = self._prefix if contiguous and self._prefix <= n else 0
        if start == 0:
            self._base = [{} for _ in range(self.n_arms)]
            self._prefix = 0
        params = [dict(p) for p in self._base]
        prefix = None
        for i in range(start, n):
            t = ordered[i]
            if prefix is None and not t.state.is_finished():
                prefix = i
                if contiguous:
                    self._base, self._prefix = [dict(p) for p in params], i
            k = self.index_of(t)
            if k is None or not t.params:
                continue
            arm = params[k]
            for name, v in t.params.items():
                arm.setdefault(name, v)
        if prefix is None and contiguous:
            self._base, self._prefix = [dict(p) for p in params], n
        self._params = params
        self._index = None

    def params(self, k: int) -> dict[str, Any]:
        """Arm `k`'s configuration as far as it is known (`{}` before a trial started it)."""
        return dict(self._params[k])

    @property
    def started(self) -> int:
        """How many arms have a configuration (some of its values at least)."""
        return sum(1 for p in self._params if p)

    def arm_of(self, t: FrozenTrial) -> int | None:
        """The arm trial `t` evaluates: the one it was assigned if its values are that arm's, else the arm whose
        whole configuration its parameters are (an enqueued trial), else None."""
        k = self.index_of(t)
        if k is not None:
            arm = self._params[k]
            if all(arm.get(name, v) == v for name, v in t.params.items()):
                return k
        return self.arm_of_params(t.params)

    def arm_of_params(self, params: Mapping[str, Any]) -> int | None:
        """The arm whose configuration is exactly `params`; None if none is."""
        if not params:
            return None
        if self._index is None:
            self._index = {}
            for k, p in enumerate(self._params):
                if p:
                    try:
                        self._index.setdefault(params_key(p), k)
                    except TypeError:  # pragma: no cover - unhashable parameter values
                        pass
        try:
            return self._index.get(params_key(params))
        except TypeError:  # pragma: no cover - unhashable parameter values
            return None
