"""Constrained best-mixed-arm instances (Tang et al. 2024) and a runner for the mixture policies.

An instance has ``K`` arms with a mean reward ``r_a`` and ``L`` mean costs ``c_{l,a}``, thresholds
``c̄``, a noise model, and optionally *known* arms (exact means, never pulled). Its answer is the
optimal mixture of the LP ``max rᵀp s.t. c p ≤ c̄`` (:mod:`mf_sched.constrained.mixture`), or "infeasible".

File format (JSON; files with a ``"thresholds"`` key are constrained instances, so
``mf-sched simulate`` tells them from the multi-fidelity ones)::

    {"rewards": [r_1, …, r_K],
     "costs": [[c_{1,1}, …, c_{L,1}], …],          # K rows (one per arm) of L costs
     "thresholds": [c̄_1, …, c̄_L],
     "noise": {"kind": "gaussian", "sigma_reward": 1.0, "sigma_cost": 0.5},   # sigma_cost: number or L
     "known": [arm, …],                              # optional: arms whose means are known exactly
     "arm_names": ["…", …], "cost_names": ["…", …],  # optional labels
     "name": "…", "source": "…"}

A second noise kind replays real measurements: ``{"kind": "empirical"}`` with ``"samples"``: one list
per arm of observed vectors ``[reward, cost_1, …, cost_L]``; a pull draws one of them uniformly at
random and the means are the sample means (``rewards``/``costs`` may then be omitted, and must match
when given). Loading validates every field and never evaluates anything.

The runner (:func:`run_constrained`, :func:`run_many_constrained`) drives a mixture policy (``sfsr``,
``uslp``) through :func:`mf_sched.sim.simulate.run_policy` / :func:`~mf_sched.sim.simulate.run_many` (same
workers, completion, seeding and process-parallel machinery) and judges each answer by the paper's
criterion: the output support (slacks of non-binding constraints included) equals the optimal
support ``I*``, or both are "infeasible" (Tang et al. 2024, §2: the error is ``X ≠ I*``, strict set equality).

:func:`tang2024_instance` builds the six L = 2 instances of the paper's Table 1 exactly, and labelled
*stand-ins* for its L = 1 instances, which the paper shows only as figures.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from mf_sched._parallel import process_pool
from mf_sched._progress import Progress
from mf_sched.constrained.mixture import (
    AssumptionCheck,
    Mixture,
    check_assumption,
    check_problem,
    json_number,
    solve_mixture_lp,
)
from mf_sched.ladder import FidelityLadder
from mf_sched.noise import NoiseModel, SubGaussian
from mf_sched.policy import Policy
from mf_sched.sim.instance import _pos_float, read_instance_json
from mf_sched.sim.simulate import RunResult, run_many, run_policy

__all__ = [
    "ConstrainedInstance",
    "ConstrainedNoise",
    "ConstrainedRunResult",
    "ConstrainedSummary",
    "load_constrained_instance",
    "is_constrained_file",
    "constrained_policy",
    "run_constrained",
    "run_many_constrained",
    "wilson_interval",
    "tang2024_instance",
    "TANG2024_INSTANCES",
]

_NOISE_KINDS = ("gaussian", "empirical")
_ENUMERATION_LIMIT = 300_000  # bases enumerated to check Assumption 1 (beyond: linprog only)


@dataclass(frozen=True)
class ConstrainedNoise:
    """How a constrained instance draws one pull ``[reward, cost_1, …, cost_L]``.

    ``kind="gaussian"``: independent ``N(r_a, σ_r²)`` and ``N(c_{l,a}, σ_{c,l}²)`` (the paper's model);
    ``kind="empirical"``: one of the arm's recorded vectors, uniformly at random.
    """

    kind: str
    sigma_reward: float | None = None
    sigma_cost: tuple[float, ...] | None = None

    @classmethod
    def from_dict(cls, d: Any, L: int) -> ConstrainedNoise:
        if not isinstance(d, Mapping):
            raise ValueError(f"noise must be an object like {{'kind': 'gaussian', 'sigma_reward': 1}}, got {d!r}")
        kind = d.get("kind")
        if kind not in _NOISE_KINDS:
            raise ValueError(f"noise.kind = {kind!r} is unknown; accepted: {', '.join(_NOISE_KINDS)}")
        allowed = {"kind", "note"} | ({"sigma_reward", "sigma_cost"} if kind == "gaussian" else set())
        extra = set(d) - allowed
        if extra:
            raise ValueError(f"noise has unknown keys {sorted(extra)} for kind {kind!r}; accepted: {sorted(allowed)}")
        if kind == "empirical":
            return cls(kind)
        for key in ("sigma_reward", "sigma_cost"):
            if key not in d:
                raise ValueError(f"noise.{key} is required for kind 'gaussian'")
        sc = d["sigma_cost"]
        if isinstance(sc, (list, tuple)):
            if len(sc) != L:
                raise ValueError(f"noise.sigma_cost has {len(sc)} entries; accepted: one number or L = {L}")
            scs = tuple(_pos_float(f"noise.sigma_cost[{i}]", v) for i, v in enumerate(sc))
        else:
            scs = (_pos_float("noise.sigma_cost", sc),) * L
        return cls(kind, _pos_float("noise.sigma_reward", d["sigma_reward"]), scs)

    def to_dict(self) -> dict[str, Any]:
        if self.kind == "empirical":
            return {"kind": "empirical"}
        assert self.sigma_cost is not None
        sc: Any = self.sigma_cost[0] if len(set(self.sigma_cost)) == 1 else list(self.sigma_cost)
        return {"kind": "gaussian", "sigma_reward": self.sigma_reward, "sigma_cost": sc}


class ConstrainedInstance:
    """A simulated constrained best-mixed-arm instance.

    Args:
        rewards: ``r`` (K,).
        costs: ``c`` as a K×L matrix (one row of L costs per arm).
        thresholds: ``c̄`` (L,).
        noise: a :class:`ConstrainedNoise` or its dict.
        known: indices of arms whose means are known exactly (never pulled).
        samples: for ``noise.kind == "empirical"``: per arm, an (n_a, 1 + L) array of recorded pulls.
        arm_names, cost_names, name, source: labels.

    Example:
        >>> inst = ConstrainedInstance([0.5, 1.0, 0.3], [[0.5], [1.5], [0.9]], [1.0],
        ...                            {"kind": "gaussian", "sigma_reward": 0.1, "sigma_cost": 0.1})
        >>> inst.K, inst.L, inst.optimum.support, inst.assumption.ok
        (3, 1, (0, 1), True)
        >>> inst.sample(np.array([0, 1]), np.random.default_rng(0)).shape
        (2, 2)
    """

    def __init__(
        self,
        rewards: Any,
        costs: Any,
        thresholds: Any,
        noise: ConstrainedNoise | Mapping[str, Any],
        *,
        known: Sequence[int] | None = None,
        samples: Sequence[Any] | None = None,
        arm_names: Sequence[str] | None = None,
        cost_names: Sequence[str] | None = None,
        name: str | None = None,
        source: str | None = None,
    ) -> None:
        t = np.array(thresholds, dtype=float) if thresholds is not None else np.zeros(0)
        L = int(t.size) if t.ndim == 1 else -1
        self.noise = noise if isinstance(noise, ConstrainedNoise) else ConstrainedNoise.from_dict(noise, max(L, 0))
        self._samples: list[np.ndarray] | None = None
        if self.noise.kind == "empirical":
            if samples is None:
                raise ValueError("noise kind 'empirical' needs 'samples' (one list of [reward, costs…] per arm)")
            arrs = []
            for a, s in enumerate(samples):
                try:
                    arr = np.array(s, dtype=float)
                except (TypeError, ValueError):
                    raise ValueError(f"samples[{a}] must be a list of numeric vectors") from None
                if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] != 1 + L:
                    raise ValueError(f"samples[{a}] must be a non-empty list of vectors of length 1 + L = {1 + L}")
                if not np.all(np.isfinite(arr)):
                    raise ValueError(f"samples[{a}] contains a value that is not finite")
                arr.setflags(write=False)
                arrs.append(arr)
            means = np.array([a.mean(axis=0) for a in arrs]).reshape(len(arrs), 1 + L)
            if rewards is None and costs is None:
                rewards, costs = means[:, 0], means[:, 1:]
            else:
                r0, c0, _ = check_problem(rewards, costs, t)
                if r0.shape[0] != len(arrs) or not np.allclose(np.column_stack([r0, c0]), means, atol=1e-9):
                    raise ValueError("rewards/costs must equal the sample means of 'samples' (or be omitted)")
            self._samples = arrs
        elif samples is not None:
            raise ValueError("'samples' is only allowed with noise kind 'empirical'")
        r, c, t = check_problem(rewards, costs, t)
        for arr in (r, c, t):
            arr.setflags(write=False)
        self.rewards, self.costs, self.thresholds = r, c, t
        mask = np.zeros(r.size, dtype=bool)
        for i in known or ():
            if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= int(i) < r.size:
                raise ValueError(f"known arm {i!r} is out of range; accepted: integers 0..{r.size - 1}")
            mask[int(i)] = True
        if mask.all():
            raise ValueError("every arm is known: there is nothing to learn (at least one arm must be pulled)")
        mask.setflags(write=False)
        self.known = mask
        for label, names, n in (("arm_names", arm_names, self.K), ("cost_names", cost_names, self.L)):
            if names is not None and (len(names) != n or not all(isinstance(x, str) for x in names)):
                raise ValueError(f"{label} must be {n} strings")
        self.arm_names = None if arm_names is None else tuple(arm_names)
        self.cost_names = None if cost_names is None else tuple(cost_names)
        self.name = name
        self.source = source

    # ----------------------------------------------------------------------------- properties
    @property
    def K(self) -> int:
        """Number of arms (pulled and known)."""
        return int(self.rewards.size)

    @property
    def L(self) -> int:
        """Number of cost constraints."""
        return int(self.thresholds.size)

    @property
    def unknown_arms(self) -> np.ndarray:
        """Arms a policy pulls (its arms ``0..K0−1`` in this order)."""
        return np.flatnonzero(~self.known)

    @property
    def known_arms(self) -> np.ndarray:
        """Arms with known means (a policy's arms ``K0..K−1`` in this order)."""
        return np.flatnonzero(self.known)

    @property
    def K0(self) -> int:
        return int(self.unknown_arms.size)

    @cached_property
    def assumption(self) -> AssumptionCheck:
        """Assumption 1 (unique, non-degenerate optimum), checked by enumerating every basis."""
        if math.comb(self.K + self.L, self.L + 1) > _ENUMERATION_LIMIT:
            opt = self.optimum
            ok = len(opt.support) == self.L + 1 if opt.feasible else True
            return AssumptionCheck(opt.feasible, True, ok, opt, math.nan, math.nan)
        return check_assumption(self.rewards, self.costs, self.thresholds)

    @cached_property
    def optimum(self) -> Mixture:
        """The true optimal mixture (the identification target ``I*``), or the infeasible marker."""
        if math.comb(self.K + self.L, self.L + 1) > _ENUMERATION_LIMIT:
            m = solve_mixture_lp(self.rewards, self.costs, self.thresholds, note="true LP optimum")
        else:
            m = self.assumption.optimum
        return m.with_labels(self.arm_names)

    def hardness(self, **kwargs: Any) -> Any:
        """The gaps and error exponents of the paper (:func:`mf_sched.constrained.mixture_hardness.hardness`)."""
        from mf_sched.constrained.mixture_hardness import hardness

        if self.noise.kind != "gaussian":
            raise ValueError("the gaps are defined for Gaussian noise (noise.kind 'gaussian')")
        assert self.noise.sigma_reward is not None and self.noise.sigma_cost is not None
        return hardness(
            self.rewards,
            self.costs,
            self.thresholds,
            sigma_reward=self.noise.sigma_reward,
            sigma_cost=self.noise.sigma_cost,
            known=self.known_arms.tolist(),
            **kwargs,
        )

    def policy_noise(self) -> NoiseModel:
        """What a policy should assume about rewards (only used to validate observations)."""
        if self.noise.kind == "gaussian":
            assert self.noise.sigma_reward is not None
            return SubGaussian(self.noise.sigma_reward)
        assert self._samples is not None
        rs = np.concatenate([s[:, 0] for s in self._samples])
        return SubGaussian(max(float(rs.max() - rs.min()) / 2, 1e-12))

    def problem(
        self, *, delta: float | None = None, budget: float | None = None, seed: int | None = None
    ) -> dict[str, Any]:
        """The constructor ingredients of a mixture policy for this instance (pulled arms first)."""
        kn = self.known_arms
        return {
            "n_arms": self.K0,
            "ladder": FidelityLadder([1.0]),
            "noise": self.policy_noise(),
            "thresholds": self.thresholds.tolist(),
            "known_rewards": self.rewards[kn].tolist() if kn.size else None,
            "known_costs": self.costs[kn].tolist() if kn.size else None,
            "delta": delta,
            "budget": budget,
            "seed": seed,
        }

    # ----------------------------------------------------------------------------- sampling
    def sample(self, arms: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One pull ``[reward, costs…]`` per entry of ``arms`` (instance arm indices), shape (n, 1 + L)."""
        arms = np.asarray(arms, dtype=np.int64)
        if self._samples is None:
            assert self.noise.sigma_reward is not None and self.noise.sigma_cost is not None
            sig = np.array((self.noise.sigma_reward, *self.noise.sigma_cost))
            mean = np.column_stack([self.rewards[arms], self.costs[arms]])
            return mean + sig * rng.standard_normal(mean.shape)
        out = np.empty((arms.size, 1 + self.L))
        for a in np.unique(arms):
            sel = arms == a
            s = self._samples[a]
            out[sel] = s[rng.integers(s.shape[0], size=int(sel.sum()))]
        return out

    # ----------------------------------------------------------------------------- (de)serialisation
    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "rewards": self.rewards.tolist(),
            "costs": self.costs.tolist(),
            "thresholds": self.thresholds.tolist(),
            "noise": self.noise.to_dict(),
        }
        if self._samples is not None:
            d["samples"] = [s.tolist() for s in self._samples]
        if self.known.any():
            d["known"] = self.known_arms.tolist()
        for key in ("arm_names", "cost_names", "name", "source"):
            v = getattr(self, key)
            if v is not None:
                d[key] = list(v) if isinstance(v, tuple) else v
        return d

    @classmethod
    def from_dict(cls, d: Any, *, name: str | None = None) -> ConstrainedInstance:
        """Validate and build an instance from the JSON format (see the module docstring)."""
        if not isinstance(d, Mapping):
            raise ValueError(f"an instance must be a JSON object, got {type(d).__name__}")
        allowed = {"rewards", "costs", "thresholds", "noise", "known", "samples", "arm_names", "cost_names"}
        allowed |= {"name", "source"}
        extra = set(d) - allowed
        if extra:
            raise ValueError(f"constrained instance has unknown keys {sorted(extra)}; accepted: {sorted(allowed)}")
        empirical = isinstance(d.get("noise"), Mapping) and d["noise"].get("kind") == "empirical"
        required = ("thresholds", "noise") + (() if empirical else ("rewards", "costs"))
        for key in required:
            if key not in d:
                raise ValueError(f"constrained instance is missing the required key {key!r}")
        for key in ("rewards", "costs", "thresholds", "known", "samples"):
            if key in d and not isinstance(d[key], list):
                raise ValueError(f"constrained instance '{key}' must be a list")
        _check_numbers("rewards", d.get("rewards", []))
        _check_numbers("costs", d.get("costs", []))
        _check_numbers("thresholds", d["thresholds"])
        _check_numbers("samples", d.get("samples", []))
        for key in ("source", "name"):
            if key in d and d[key] is not None and not isinstance(d[key], str):
                raise ValueError(f"constrained instance '{key}' must be a string")
        return cls(
            d.get("rewards"),
            d.get("costs"),
            d["thresholds"],
            d["noise"],
            known=d.get("known"),
            samples=d.get("samples"),
            arm_names=d.get("arm_names"),
            cost_names=d.get("cost_names"),
            name=d.get("name") or name,
            source=d.get("source"),
        )

    def save(self, path: str | os.PathLike[str]) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1))

    def __repr__(self) -> str:
        return f"ConstrainedInstance(name={self.name!r}, K={self.K}, L={self.L}, noise={self.noise.kind})"


def _check_numbers(name: str, v: Any, path: str = "") -> None:
    """Every leaf of a nested list is a real number (bools and strings are rejected, naming the place)."""
    if isinstance(v, list):
        for i, x in enumerate(v):
            _check_numbers(name, x, f"{path}[{i}]")
    elif isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{name}{path} must be a number, got {v!r}")


def is_constrained_file(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` holds a constrained instance (a JSON object with a ``"thresholds"`` key)."""
    try:
        data = read_instance_json(path)
    except (FileNotFoundError, ValueError):
        return False
    return isinstance(data, Mapping) and "thresholds" in data


def load_constrained_instance(path: str | os.PathLike[str]) -> ConstrainedInstance:
    """Load and validate a constrained instance file (ValueError naming the file and field).

    Warns (:class:`~mf_sched.sim.instance.AssumptionWarning`) when Assumption 1 fails: the optimal support
    is then not identifiable and error rates are not meaningful.
    """
    import warnings

    from mf_sched.sim.instance import AssumptionWarning

    p = Path(path)
    data = read_instance_json(p)
    try:
        inst = ConstrainedInstance.from_dict(data, name=p.stem)
    except ValueError as e:
        raise ValueError(f"{p}: {e}") from None
    if not inst.assumption.ok:
        warnings.warn(f"{p.name}: {inst.assumption.summary()}", AssumptionWarning, stacklevel=2)
    return inst


# ---------------------------------------------------------------------------------------------- runner
class _Sampler:
    """run_policy's sampler interface over the pulled arms, returning vector observations."""

    def __init__(self, instance: ConstrainedInstance, rng: np.random.Generator) -> None:
        self.instance, self.rng = instance, rng
        self.unknown = instance.unknown_arms

    def draw_one(self, arm: int, fidelity: int) -> np.ndarray:
        return self.instance.sample(self.unknown[[arm]], self.rng)[0]

    def draw(self, arms: np.ndarray, fidelities: np.ndarray) -> np.ndarray:
        return self.instance.sample(self.unknown[arms], self.rng)


class _SimView:
    """The part of :class:`~mf_sched.sim.instance.Instance`'s interface that :func:`run_policy` and
    :func:`run_many` use, over the pulled arms of a constrained instance (single fidelity). Their
    best-arm correctness and regrets do not apply; :func:`_judge` replaces them."""

    M = 1
    has_unique_best = False
    best_arm = -1

    def __init__(self, instance: ConstrainedInstance) -> None:
        self.instance = instance
        self.K = instance.K0
        self.ladder = FidelityLadder([1.0])
        self.name = instance.name
        self.true_means = instance.rewards[instance.unknown_arms]

    def sampler(self, rng: np.random.Generator, *, semantics: str = "independent") -> _Sampler:
        if semantics != "independent":
            raise ValueError(f"semantics = {semantics!r}: constrained instances support only 'independent' pulls")
        return _Sampler(self.instance, rng)

    def problem(self, **kwargs: Any) -> dict[str, Any]:
        return self.instance.problem(**kwargs)

    def check_assumptions(self) -> AssumptionCheck:
        return self.instance.assumption


@dataclass
class ConstrainedRunResult:
    """Outcome of one run of a mixture policy on a :class:`ConstrainedInstance`.

    ``output`` is the recommended mixture in the instance's arm numbering; ``correct`` applies the
    paper's criterion (equal supports, or both infeasible); ``value`` and ``max_violation`` evaluate the
    recommended weights under the *true* means (expected reward; ``max_l (c p)_l − c̄_l``, ≤ 0 when every
    constraint holds); ``regret = optimum value − value``.
    """

    policy: str
    seed: int | None
    n_pulls: int
    cost: float
    correct: bool
    output: Mixture | None
    stop_reason: str
    reason: str
    value: float
    regret: float
    max_violation: float
    wall_time: float

    def to_dict(self) -> dict[str, Any]:
        num = json_number

        return {
            "policy": self.policy,
            "seed": self.seed,
            "n_pulls": self.n_pulls,
            "cost": self.cost,
            "correct": self.correct,
            "output": None if self.output is None else self.output.to_dict(),
            "stop_reason": self.stop_reason,
            "reason": self.reason,
            "value": num(self.value),
            "regret": num(self.regret),
            "max_violation": num(self.max_violation),
            "wall_time": self.wall_time,
        }


def _to_instance_numbering(mix: Mixture, instance: ConstrainedInstance) -> Mixture:
    """Map a policy's mixture (pulled arms first, then known arms) to the instance's arm numbering."""
    if not mix.feasible:
        return dataclasses.replace(mix, n_arms=instance.K)
    K = instance.K
    order = np.concatenate([instance.unknown_arms, instance.known_arms, np.arange(K, K + instance.L)])
    sup = order[np.asarray(mix.support, dtype=np.int64)]
    idx = np.argsort(sup, kind="stable")
    out = dataclasses.replace(
        mix, support=tuple(int(i) for i in sup[idx]), values=tuple(mix.values[i] for i in idx.tolist())
    )
    return out.with_labels(instance.arm_names)


def _judge(res: RunResult, instance: ConstrainedInstance) -> ConstrainedRunResult:
    rec = res.recommendation
    mix = rec.mixture
    out = None if mix is None else _to_instance_numbering(mix, instance)
    opt = instance.optimum
    correct = out is not None and out.same_support(opt)
    if out is not None and out.feasible:
        value, costs = out.evaluate(instance.rewards, instance.costs)
        viol = float(np.max(costs - instance.thresholds)) if instance.L else -math.inf
    else:
        value, viol = math.nan, math.nan
    regret = (opt.reward - value) if opt.feasible and math.isfinite(value) else math.nan
    return ConstrainedRunResult(
        policy=res.policy,
        seed=res.seed,
        n_pulls=res.n_pulls,
        cost=res.cost,
        correct=bool(correct),
        output=out,
        stop_reason=res.stop_reason,
        reason=rec.reason,
        value=value,
        regret=regret,
        max_violation=viol,
        wall_time=res.wall_time,
    )


def constrained_policy(
    name: str, instance: ConstrainedInstance, *, pull_budget: int, seed: int | None = None, **params: Any
) -> Policy:
    """Build mixture policy ``name`` (``"sfsr"``, ``"uslp"``) for ``instance`` with budget ``N``.

    >>> inst = tang2024_instance("D1P")
    >>> p = constrained_policy("sfsr", inst, pull_budget=20_000, seed=0, score="lagrangian")
    >>> p.n_arms, p.L, p.score
    (24, 2, 'lagrangian')
    """
    from mf_sched.registry import build_policy

    return build_policy(name, instance.problem(seed=seed), pull_budget=pull_budget, **params)


def run_constrained(
    policy: Policy,
    instance: ConstrainedInstance,
    *,
    seed: int | np.random.SeedSequence | None = None,
    workers: int | None = None,
    completion: str = "batch",
    budget: float | None = None,
    max_pulls: int | None = None,
    fast: bool = False,
) -> ConstrainedRunResult:
    """Play a mixture policy on ``instance`` (:func:`mf_sched.sim.simulate.run_policy` semantics; the
    default ``workers=None, completion="batch"`` hands out a whole round at once).

    ``fast=True`` (Gaussian instances, no budget cap or pull limit) skips the per-pull protocol: each
    round's pulls are drawn as sufficient statistics (exact in distribution; see :func:`_run_fast`), so
    a run costs the same at any N — what the paper reproduction uses for its 5,000-run points.

    >>> inst = tang2024_instance("D1P")
    >>> res = run_constrained(constrained_policy("sfsr", inst, pull_budget=100_000, seed=0), inst, seed=1)
    >>> res.correct, res.output.support, res.n_pulls <= 100_000
    (True, (5, 24, 25), True)
    """
    if fast:
        if budget is not None or max_pulls is not None or workers is not None or completion != "batch":
            raise ValueError("fast=True runs whole rounds: it takes no budget, max_pulls, workers or completion")
        return _run_fast(policy, instance, np.random.default_rng(seed))
    res = run_policy(
        policy,
        _SimView(instance),  # type: ignore[arg-type]
        seed=seed,
        workers=workers,
        completion=completion,
        budget=budget,
        max_pulls=max_pulls,
    )
    return _judge(res, instance)


def _run_fast(policy: Policy, instance: ConstrainedInstance, rng: np.random.Generator) -> ConstrainedRunResult:
    """Sufficient-statistics simulation of a round-based mixture policy on a Gaussian instance: each
    round's ``T`` pulls of an arm are drawn as their totals — sum ``~ N(T·mean, T·σ²)`` per component and
    reward sum of squares ``= sum²/T + σ_r²·χ²_{T−1}`` — which is exact in distribution and independent
    of ``T`` in cost. Decisions go through the policy's own code (scores, rejections, final mixture)."""
    if instance.noise.kind != "gaussian":
        raise ValueError("fast=True needs Gaussian noise (sums of pulls are then Gaussian); use fast=False")
    assert instance.noise.sigma_reward is not None and instance.noise.sigma_cost is not None
    sig = np.array((instance.noise.sigma_reward, *instance.noise.sigma_cost))
    unk = instance.unknown_arms
    mean = np.column_stack([instance.rewards[unk], instance.costs[unk]])
    t0 = time.perf_counter()
    while not policy.done:
        counts = np.bincount(policy._q_arms[policy._q_pos :], minlength=unk.size)  # type: ignore[attr-defined]
        root = np.sqrt(counts)[:, None]
        sums = counts[:, None] * mean + root * sig * rng.standard_normal(mean.shape)
        sq = np.where(counts > 0, sums[:, 0] ** 2 / np.maximum(counts, 1), 0.0)
        sq = sq + sig[0] ** 2 * rng.chisquare(np.maximum(counts - 1, 1)) * (counts > 1)
        policy._simulate_round_totals(counts, sums, sq)  # type: ignore[attr-defined]
    rec = policy.recommendation()
    res = RunResult(
        policy=policy.name,
        seed=None,
        cost=policy.cost,
        n_pulls=policy.n_pulls,
        recommendation=rec,
        correct=False,
        stop_reason="done",
        simple_regret=math.nan,
        regret_kandasamy=math.nan,
        regret_wang=math.nan,
        pulls_per_fidelity=[policy.n_pulls],
        wall_time=time.perf_counter() - t0,
    )
    return _judge(res, instance)


def _fast_job(args: tuple[Any, ...]) -> ConstrainedRunResult:
    name, instance, ss, params = args
    pol_seed, obs_seed = ss.spawn(2)
    policy = constrained_policy(name, instance, seed=int(pol_seed.generate_state(1, dtype=np.uint32)[0]), **params)
    return _run_fast(policy, instance, np.random.default_rng(obs_seed))


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion ``k/n`` (our choice: Tang et al. 2024 do not state theirs).

    >>> lo, hi = wilson_interval(5, 100); round(lo, 4), round(hi, 4)
    (0.0215, 0.1118)
    """
    if n <= 0:
        return math.nan, math.nan
    from scipy import stats  # lazy: scipy.stats is slow to import

    z = float(stats.norm.ppf(0.5 + confidence / 2))
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (0.0 if k == 0 else max(0.0, centre - half)), (1.0 if k == n else min(1.0, centre + half))


@dataclass
class ConstrainedSummary:
    """Aggregate of many runs (see :func:`run_many_constrained`)."""

    policy: str
    instance: str | None
    runs: int
    error_rate: float
    error_ci95: tuple[float, float]
    infeasible_rate: float
    pulls_mean: float
    pulls_max: int
    regret_mean: float
    violation_rate: float
    outputs: dict[str, int]
    stop_reasons: dict[str, int]
    wall_time_mean: float
    optimum: Mixture
    assumption: dict[str, Any]
    params: dict[str, Any] = field(default_factory=dict)
    results: list[ConstrainedRunResult] = field(default_factory=list)

    def to_dict(self, per_run: bool = False) -> dict[str, Any]:
        num = json_number

        d: dict[str, Any] = {
            "policy": self.policy,
            "instance": self.instance,
            "params": self.params,
            "runs": self.runs,
            "error_rate": self.error_rate,
            "error_ci95": list(self.error_ci95),
            "infeasible_rate": self.infeasible_rate,
            "pulls_mean": self.pulls_mean,
            "pulls_max": self.pulls_max,
            "regret_mean": num(self.regret_mean),
            "violation_rate": self.violation_rate,
            "outputs": self.outputs,
            "stop_reasons": self.stop_reasons,
            "wall_time_mean": self.wall_time_mean,
            "optimum": self.optimum.to_dict(),
            "assumption": self.assumption,
        }
        if per_run:
            d["per_run"] = [r.to_dict() for r in self.results]
        return d


def summarize_constrained(
    results: list[ConstrainedRunResult], instance: ConstrainedInstance, params: Mapping[str, Any] | None = None
) -> ConstrainedSummary:
    """Aggregate :class:`ConstrainedRunResult` objects."""
    n = len(results)
    errors = sum(not r.correct for r in results)
    outs = Counter(
        "none" if r.output is None else ("infeasible" if not r.output.feasible else str(list(r.output.support)))
        for r in results
    )
    regrets = [r.regret for r in results if math.isfinite(r.regret)]
    viol = [r.max_violation > 1e-9 for r in results if math.isfinite(r.max_violation)]
    return ConstrainedSummary(
        policy=results[0].policy,
        instance=instance.name,
        runs=n,
        error_rate=errors / n,
        error_ci95=wilson_interval(errors, n),
        infeasible_rate=float(np.mean([r.output is not None and not r.output.feasible for r in results])),
        pulls_mean=float(np.mean([r.n_pulls for r in results])),
        pulls_max=int(max(r.n_pulls for r in results)),
        regret_mean=float(np.mean(regrets)) if regrets else math.nan,
        violation_rate=float(np.mean(viol)) if viol else 0.0,
        outputs=dict(outs.most_common()),
        stop_reasons=dict(Counter(r.stop_reason for r in results)),
        wall_time_mean=float(np.mean([r.wall_time for r in results])),
        optimum=instance.optimum,
        assumption=instance.assumption.to_dict(),
        params=dict(params or {}),
        results=list(results),
    )


def run_many_constrained(
    policy: str,
    instance: ConstrainedInstance,
    *,
    pull_budget: int,
    runs: int = 100,
    seed: int = 0,
    params: Mapping[str, Any] | None = None,
    budget: float | None = None,
    workers: int | None = None,
    completion: str = "batch",
    max_pulls: int | None = None,
    n_jobs: int | None = 1,
    progress: bool = True,
    keep_results: bool = True,
    fast: bool = False,
) -> ConstrainedSummary:
    """Run ``runs`` seeds of mixture policy ``policy`` with budget ``N = pull_budget`` and summarise the
    error rate (with a Wilson 95% interval), pulls used, regret of the recommended mixture and the rate
    of constraint violations under the true means. Seeding is that of :func:`mf_sched.sim.simulate.run_many`
    (results do not depend on ``n_jobs``). ``fast=True``: sufficient-statistics simulation of whole
    rounds (Gaussian instances; exact in distribution, see :func:`run_constrained`).

    >>> s = run_many_constrained("uslp", tang2024_instance("D1P"), pull_budget=5_000, runs=3, progress=False)
    >>> s.runs, 0 <= s.error_rate <= 1, s.pulls_max <= 5_000
    (3, True, True)
    """
    p = dict(params or {})
    p["pull_budget"] = pull_budget
    if fast:
        if budget is not None or max_pulls is not None or workers is not None or completion != "batch":
            raise ValueError("fast=True runs whole rounds: it takes no budget, max_pulls, workers or completion")
        jobs = [(policy, instance, ss, p) for ss in np.random.SeedSequence(seed).spawn(runs)]
        n_jobs = (os.cpu_count() or 1) if n_jobs is None else n_jobs
        results: list[ConstrainedRunResult] = []
        with Progress(runs, f"{policy} x{runs} (fast)", progress) as bar:
            if n_jobs <= 1 or runs == 1:
                for j in jobs:
                    results.append(_fast_job(j))
                    bar.update()
            else:
                with process_pool(min(n_jobs, runs)) as ex:  # Ctrl-C stops the workers
                    for r in ex.map(_fast_job, jobs, chunksize=max(1, runs // (8 * n_jobs))):
                        results.append(r)
                        bar.update()
        for i, r in enumerate(results):
            r.seed = i
        out = summarize_constrained(results, instance, p)
        if not keep_results:
            out.results = []
        return out
    summary = run_many(
        policy,
        _SimView(instance),  # type: ignore[arg-type]
        runs=runs,
        seed=seed,
        budget=budget,
        params=p,
        workers=workers,
        completion=completion,
        max_pulls=max_pulls,
        n_jobs=n_jobs,
        progress=progress,
        keep_results=True,
    )
    results = [_judge(r, instance) for r in summary.results]
    out = summarize_constrained(results, instance, p)
    if not keep_results:
        out.results = []
    return out


# ---------------------------------------------------------------------------------------------- paper instances
_TABLE1_C1 = (0.4, 0.6, 0.8, 1.0, 1.2, 1.4)
_TABLE1_C2 = (0.7, 0.9, 1.1, 1.3)
#: Table 1 of Tang et al. (2024), mean rewards, rows c1 = 0.4..1.4, columns c2 = 0.7..1.3 (row-major arms)
_TABLE1 = {
    "D1P": "0.88 0.80 0.82 0.66 0.72 1.02 0.70 0.54 0.92 0.74 0.94 0.84 0.76 0.60 0.56 0.86 "
    "0.98 0.64 0.68 0.78 0.62 0.96 0.90 0.58",
    "D2P": "0.08 0.28 -0.02 0.22 0.20 0.46 0.54 0.40 0.42 0.52 0.80 0.34 0.92 0.78 0.96 0.70 "
    "0.94 0.76 1.10 0.86 1.42 1.16 1.04 1.24",
    "D3P": "1.04 1.22 1.28 1.26 0.98 1.22 1.60 1.54 1.26 1.40 1.88 1.84 1.72 1.76 1.64 1.92 "
    "1.78 1.70 1.96 2.08 1.94 2.30 2.32 2.50",
    "D1I": "0.84 1.02 0.74 0.76 0.84 0.88 0.96 0.90 0.90 0.98 0.92 0.80 0.98 0.98 0.90 0.74 "
    "0.94 0.90 0.88 0.72 0.78 0.82 0.88 0.84",
    "D2I": "0.40 0.18 0.28 0.14 0.44 0.54 0.40 0.32 0.56 0.52 0.68 0.64 0.84 0.80 0.82 0.74 "
    "0.94 1.18 1.02 1.12 1.42 1.16 1.24 1.24",
    "D3I": "0.92 1.12 1.32 1.42 1.14 1.42 1.62 1.68 1.30 1.70 1.68 2.06 1.46 1.82 2.02 2.04 "
    "1.84 2.02 2.12 2.24 2.06 2.28 2.32 2.58",
}
#: names accepted by :func:`tang2024_instance`
TANG2024_INSTANCES = (*_TABLE1, "A1-standin", "A2-standin", "A3-standin", "H2-standin")


def _standin_a(kind: str, index: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``index``-th random 16-arm L = 1 instance (like those of §5, Fig. 2) whose optimum is of type ``kind``
    (``"deterministic"`` or a two-arm ``"mix"``): costs U[0.4, 1.6], rewards ``0.5 + s·c + U(−0.15,
    0.15)`` with a random slope ``s``; accepted when Assumption 1 holds with a value gap ≥ 0.05."""
    found = 0
    for seed in range(10_000):
        rng = np.random.default_rng([2024, seed])
        c = np.round(rng.uniform(0.4, 1.6, 16), 4)
        r = np.round(0.5 + rng.uniform(-0.1, 0.6) * c + rng.uniform(-0.15, 0.15, 16), 4)
        chk = check_assumption(r, c[:, None], [1.0])
        if chk.ok and chk.value_gap >= 0.05 and (kind == "deterministic") == (len(chk.optimum.arms) == 1):
            if found == index:
                return r, c[:, None]
            found += 1
    raise RuntimeError("no stand-in found")  # pragma: no cover


def tang2024_instance(name: str) -> ConstrainedInstance:
    """An instance of Tang et al. (2024)'s experiments (``σ_r = 1``, ``σ_c = 0.5``, all arms unknown).

    * ``"D1P" "D2P" "D3P" "D1I" "D2I" "D3I"``: the six L = 2, K = 24 instances of Appendix C, Table 1,
      exactly (arm ``4·i + j`` has costs ``(c1_i, c2_j)``, ``c1 ∈ {0.4, …, 1.4}``, ``c2 ∈ {0.7, …, 1.3}``;
      ``c̄ = (1, 1)``).
    * ``"A1-standin" "A2-standin" "A3-standin"``: **stand-ins** for the L = 1, K = 16 instances A1–A3 of
      Fig. 2, whose means the paper shows only as a plot: random instances of the documented type (one
      with a deterministic optimum, two with a two-arm mix), not the paper's.
    * ``"H2-standin"``: a **stand-in** with the structure of H2 (Appendix A, Fig. 4): arm 0
      cheap and poor, arm 1 good and slightly infeasible, 14 identical near-boundary arms.

    >>> inst = tang2024_instance("D3P")
    >>> inst.K, inst.L, inst.optimum.support, [round(w, 3) for w in inst.optimum.weights]
    (24, 2, (10, 12, 21), [0.6, 0.1, 0.3])
    """
    noise = {"kind": "gaussian", "sigma_reward": 1.0, "sigma_cost": 0.5}
    src = "Tang, Jain, Nayyar, Nuzzo 2024 (arXiv 2405.15090)"
    if name in _TABLE1:
        r = np.array([float(x) for x in _TABLE1[name].split()])
        c = np.array([(a, b) for a in _TABLE1_C1 for b in _TABLE1_C2])
        names = [f"c=({a},{b})" for a, b in c]
        return ConstrainedInstance(
            r, c, [1.0, 1.0], noise, arm_names=names, name=name, source=f"{src}, Appendix C, Table 1"
        )
    if name == "H2-standin":
        r = np.array([0.0, 1.0] + [0.8] * 14)
        c = np.array([0.0, 1.1] + [0.95] * 14)[:, None]
        return ConstrainedInstance(
            r, c, [1.0], noise, name=name, source=f"stand-in with the structure of H2 ({src}, App. A); not the paper's"
        )
    if name in ("A1-standin", "A2-standin", "A3-standin"):
        r, c = _standin_a(*{"A1": ("deterministic", 0), "A2": ("mix", 0), "A3": ("mix", 1)}[name[:2]])
        return ConstrainedInstance(
            r, c, [1.0], noise, name=name, source=f"stand-in for {name[:2]} of {src}, Fig. 2 (random, not the paper's)"
        )
    raise ValueError(f"unknown instance {name!r}; accepted: {', '.join(TANG2024_INSTANCES)}")


# ---------------------------------------------------------------------------------------------- command line
def cli_simulate(args: Any) -> int:
    """``mf-sched simulate`` for a constrained instance file (called by :mod:`mf_sched.cli`)."""
    import sys
    import warnings

    from mf_sched.registry import get_policy
    from mf_sched.sim.instance import AssumptionWarning

    cls = get_policy(args.policy)
    if cls.objective != "mixture":
        raise ValueError(
            f"{args.instance} is a constrained instance; policy {args.policy!r} does not solve it "
            "(use a mixture policy: sfsr, uslp)"
        )
    if args.semantics != "independent":
        raise ValueError("--semantics resumable does not apply to constrained (single-fidelity) instances")
    params = dict(args.param)
    if "pull_budget" not in params:
        raise ValueError("constrained instances need the budget N: pass --param pull_budget=N")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", AssumptionWarning)
        instance = load_constrained_instance(args.instance)
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    N = params.pop("pull_budget")
    s = run_many_constrained(
        args.policy,
        instance,
        pull_budget=N,
        runs=args.runs,
        seed=args.seed,
        params=params,
        budget=args.budget,
        workers=args.workers,
        completion=args.completion,
        max_pulls=args.max_pulls,
        n_jobs=None if args.jobs == 0 else max(1, args.jobs),
        progress=not args.no_progress,
    )
    d = s.to_dict(per_run=args.per_run)
    if args.json:
        print(json.dumps(d, indent=1))
        return 0
    lo, hi = s.error_ci95
    rows = [
        ("policy", f"{s.policy} {params}" if params else s.policy),
        ("instance", f"{instance.name} (K={instance.K}, L={instance.L}, {instance.noise.kind})"),
        ("optimum", str(instance.optimum)),
        ("optimal support", list(instance.optimum.support)),
        ("assumption 1", instance.assumption.summary()),
        ("runs", s.runs),
        ("pull budget N", N),
        ("error rate", f"{s.error_rate:.4f} (95% Wilson [{lo:.4f}, {hi:.4f}])"),
        ("'infeasible' answers", f"{s.infeasible_rate:.4f}"),
        ("pulls used (mean, max)", f"{s.pulls_mean:.1f}, {s.pulls_max}"),
        ("regret of the mixture", f"{s.regret_mean:.6g}"),
        ("violates a constraint", f"{s.violation_rate:.4f}"),
        ("stop reasons", s.stop_reasons),
        ("answers (support: count)", dict(list(s.outputs.items())[:5])),
    ]
    w = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{w}}  {v}")
    return 0
