"""Constrained best-mixed-arm instances (Tang et al. 2024): the instance, its file format and its loader.

An instance has `K` arms with a mean reward `r_a` and `L` mean costs `c_{l,a}`, thresholds
`c̄`, a noise model, and optionally *known* arms (exact means, never pulled). Its answer is the
optimal mixture of the LP `max rᵀp s.t. c p ≤ c̄` (:mod:`mf_sched.constrained.mixture`), or "infeasible".

File format (JSON; files with a `"thresholds"` key are constrained instances, so
`mf-sched simulate` tells them from the multi-fidelity ones):

```text
{"rewards": [r_1, …, r_K],
 "costs": [[c_{1,1}, …, c_{L,1}], …],          # K rows (one per arm) of L costs
 "thresholds": [c̄_1, …, c̄_L],
 "noise": {"kind": "gaussian", "sigma_reward": 1.0, "sigma_cost": 0.5},   # sigma_cost: number or L
 "known": [arm, …],                              # optional: arms whose means are known exactly
 "arm_names": ["…", …], "cost_names": ["…", …],  # optional labels
 "name": "…", "source": "…"}
```

A second noise kind replays real measurements: `{"kind": "empirical"}` with `"samples"`: one list
per arm of observed vectors `[reward, cost_1, …, cost_L]`; a pull draws one of them uniformly at
random and the means are the sample means (`rewards`/`costs` may then be omitted, and must match
when given). Loading validates every field and never evaluates anything.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from mf_sched.constrained.mixture import (
    AssumptionCheck,
    Mixture,
    check_assumption,
    check_problem,
    solve_mixture_lp,
)
from mf_sched.ladder import FidelityLadder
from mf_sched.noise import NoiseModel, SubGaussian
from mf_sched.sim.instance import (
    _pos_float,
    build_from_file,
    check_instance_keys,
    check_numbers,
    read_instance_json,
)

__all__ = ["ConstrainedInstance", "ConstrainedNoise", "is_constrained_file", "load_constrained_instance"]

_NOISE_KINDS = ("gaussian", "empirical")
_ENUMERATION_LIMIT = 300_000  # bases enumerated to check Assumption 1 (beyond: linprog only)


@dataclass(frozen=True)
class ConstrainedNoise:
    """How a constrained instance draws one pull `[reward, cost_1, …, cost_L]`.

    `kind="gaussian"`: independent `N(r_a, σ_r²)` and `N(c_{l,a}, σ_{c,l}²)` (the paper's model);
    `kind="empirical"`: one of the arm's recorded vectors, uniformly at random.

    Attributes:
        kind: `"gaussian"` or `"empirical"`.
        sigma_reward: the reward noise's standard deviation `σ_r`, finite and > 0; `None` for `"empirical"`.
        sigma_cost: the cost noises' standard deviations `σ_{c,l}`, one per constraint (`L` values, each finite
            and > 0; a file may give one number for all); `None` for `"empirical"`.
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
        rewards: `r` (K,).
        costs: `c` as a K×L matrix (one row of L costs per arm).
        thresholds: `c̄` (L,).
        noise: a :class:`ConstrainedNoise` or its dict.
        known: indices of arms whose means are known exactly (never pulled).
        samples: for `noise.kind == "empirical"`: per arm, an (n_a, 1 + L) array of recorded pulls.
        arm_names: labels of the arms.
        cost_names: labels of the costs.
        name: label of the instance.
        source: where the instance came from (free text).

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
        """Arms a policy pulls (its arms `0..K0−1` in this order)."""
        return np.flatnonzero(~self.known)

    @property
    def known_arms(self) -> np.ndarray:
        """Arms with known means (a policy's arms `K0..K−1` in this order)."""
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
        """The true optimal mixture (the identification target `I*`), or the infeasible marker."""
        if math.comb(self.K + self.L, self.L + 1) > _ENUMERATION_LIMIT:
            m = solve_mixture_lp(self.rewards, self.costs, self.thresholds, note="true LP optimum")
        else:
            m = self.assumption.optimum
        return m.with_labels(self.arm_names)

    def hardness(self, **kwargs: Any) -> Any:
        """The gaps and error exponents of the paper (:func:`mf_sched.constrained.mixture_hardness.hardness`).

        Args:
            **kwargs: the options of :func:`~mf_sched.constrained.mixture_hardness.hardness`: `resolution` and
                `refine_per_arm` (the instance gives the means, the noise and the known arms).
        """
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
        """The constructor ingredients of a mixture policy for this instance (pulled arms first).

        Args:
            delta: the confidence δ, `0 < δ < 1`; `None`: the policy's default.
            budget: the cap on the number of pulls (each pull costs 1); `None`: no cap.
            seed: the seed of the policy's own random generator; `None`: fresh entropy.
        """
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
        """One pull `[reward, costs…]` per entry of `arms` (instance arm indices), shape (n, 1 + L).

        Args:
            arms: integer array of instance arm indices, each in `0 .. K − 1`.
            rng: the generator the noise (or the recorded vector) is drawn from.
        """
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
        """Validate and build an instance from the JSON format (see the module docstring).

        Args:
            d: the parsed JSON object (keys: see the module docstring; any other key is an error).
            name: the label used when `d` has no `name` (a file's stem when loading a file).
        """
        allowed = {"rewards", "costs", "thresholds", "noise", "known", "samples", "arm_names", "cost_names"}
        allowed |= {"name", "source"}
        noise = d.get("noise") if isinstance(d, Mapping) else None
        empirical = isinstance(noise, Mapping) and noise.get("kind") == "empirical"
        required = ("thresholds", "noise") + (() if empirical else ("rewards", "costs"))
        check_instance_keys(d, "constrained instance", allowed, required)
        for key in ("rewards", "costs", "thresholds", "known", "samples"):
            if key in d and not isinstance(d[key], list):
                raise ValueError(f"constrained instance '{key}' must be a list")
        check_numbers("rewards", d.get("rewards", []))
        check_numbers("costs", d.get("costs", []))
        check_numbers("thresholds", d["thresholds"])
        check_numbers("samples", d.get("samples", []))
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


def is_constrained_file(path: str | os.PathLike[str]) -> bool:
    """True when `path` holds a constrained instance (a JSON object with a `"thresholds"` key).

    Args:
        path: the file to look at (a missing, unreadable or non-JSON file gives False).
    """
    try:
        data = read_instance_json(path)
    except (FileNotFoundError, ValueError):
        return False
    return isinstance(data, Mapping) and "thresholds" in data


def load_constrained_instance(path: str | os.PathLike[str]) -> ConstrainedInstance:
    """Load and validate a constrained instance file (ValueError naming the file and field).

    Warns (:class:`~mf_sched.sim.instance.AssumptionWarning`) when Assumption 1 fails: the optimal support
    is then not identifiable and error rates are not meaningful.

    Args:
        path: the instance JSON file (format: see the module docstring).
    """
    import warnings

    from mf_sched.sim.instance import AssumptionWarning

    p = Path(path)
    inst = build_from_file(p, ConstrainedInstance.from_dict)
    if not inst.assumption.ok:
        warnings.warn(f"{p.name}: {inst.assumption.summary()}", AssumptionWarning, stacklevel=2)
    return inst
