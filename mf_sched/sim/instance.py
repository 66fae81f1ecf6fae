"""Simulated multi-fidelity bandit instances: a K×M matrix of means, a fidelity ladder and a noise model.

File format (JSON; :func:`load_instance` validates every field):

```text
{"means": [[µ_k^(1), …, µ_k^(M)], …],          # K rows, M fidelities (last = true mean)
 "costs": [λ(1), …, λ(M)],
 "zeta":  [ζ(1), …, ζ(M)],                      # ζ(M) = 0
 "gamma": [γ(1), …, γ(M)],                      # optional (IISE-γ)
 "noise": {"kind": "gaussian", "sigma": 0.1},   # or {"kind": "bernoulli"} (means in [0, 1])
 "source": "…"}                                 # optional free text
```

A third noise kind, `{"kind": "truncated_gaussian", "sigma": s, "truncate_at": a, "sigma_proxy": p}`,
reproduces Poiani et al. (2022)'s Yahtzee instance: observations are `µ + N(0, s²)` truncated to
`±a`; policies assume the sub-Gaussian proxy `p`.

Loading validates every field (types, shapes, finiteness, ranges, unknown keys) and never evaluates
anything. The model assumption `|µ_k^(m) − µ_k^(M)| ≤ ζ(m)` is *checked and reported*
(:meth:`Instance.check_assumptions`; a :class:`AssumptionWarning` on load), not silently assumed: the
published instances violate it in places (Poiani et al. 2022's Synthetic A/B arm 1, Wang et al.
2023's Table 2), and a policy's guarantee does not cover those arms.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from mf_sched.ladder import FidelityLadder
from mf_sched.noise import Bounded, NoiseModel, SubGaussian

T = TypeVar("T")

__all__ = [
    "Instance",
    "Sampler",
    "NoiseSpec",
    "AssumptionWarning",
    "AssumptionReport",
    "load_instance",
    "published_instance",
    "published_instances",
    "published_instance_path",
]

_MAX_FILE_BYTES = 256 * 1024 * 1024
_KINDS = ("gaussian", "bernoulli", "truncated_gaussian")


class AssumptionWarning(UserWarning):
    """An instance violates `|µ(m) − µ(M)| ≤ ζ(m)` (or its γ) for some arms."""


def _pos_float(name: str, v: Any) -> float:
    if isinstance(v, bool):
        raise ValueError(f"{name} must be a number, got {v!r}")
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {v!r}") from None
    if not (np.isfinite(f) and f > 0):
        raise ValueError(f"{name} = {v} is out of range; accepted: a finite number > 0")
    return f


@dataclass(frozen=True)
class NoiseSpec:
    """How a simulated instance draws observations: `kind` says which of the other fields it uses.

    Attributes:
        kind: `"gaussian"`, `"bernoulli"` (observations in `{0, 1}`, means in `[0, 1]`) or
            `"truncated_gaussian"`.
        sigma: the standard deviation of the Gaussian noise (before truncation), finite and > 0; `None` for
            `"bernoulli"`.
        truncate_at: `a`: the noise is redrawn until it lies in `[−a, a]`; finite and > 0, `"truncated_gaussian"`
            only (`None` otherwise).
        sigma_proxy: the sub-Gaussian scale policies assume for `"truncated_gaussian"`; `None` means `sigma`.
    """

    kind: str
    sigma: float | None = None
    truncate_at: float | None = None
    sigma_proxy: float | None = None

    @classmethod
    def from_dict(cls, d: Any) -> NoiseSpec:
        if not isinstance(d, Mapping):
            raise ValueError(f"noise must be an object like {{'kind': 'gaussian', 'sigma': 0.1}}, got {d!r}")
        kind = d.get("kind")
        if kind not in _KINDS:
            raise ValueError(f"noise.kind = {kind!r} is unknown; accepted: {', '.join(_KINDS)}")
        allowed = {"kind", "note"} | {
            "gaussian": {"sigma"},
            "bernoulli": set(),
            "truncated_gaussian": {"sigma", "truncate_at", "sigma_proxy"},
        }[kind]
        extra = set(d) - allowed
        if extra:
            raise ValueError(f"noise has unknown keys {sorted(extra)} for kind {kind!r}; accepted: {sorted(allowed)}")
        if kind == "gaussian":
            if "sigma" not in d:
                raise ValueError("noise.sigma is required for kind 'gaussian'")
            return cls(kind, sigma=_pos_float("noise.sigma", d["sigma"]))
        if kind == "bernoulli":
            return cls(kind)
        for key in ("sigma", "truncate_at"):
            if key not in d:
                raise ValueError(f"noise.{key} is required for kind 'truncated_gaussian'")
        proxy = d.get("sigma_proxy")
        return cls(
            kind,
            sigma=_pos_float("noise.sigma", d["sigma"]),
            truncate_at=_pos_float("noise.truncate_at", d["truncate_at"]),
            sigma_proxy=None if proxy is None else _pos_float("noise.sigma_proxy", proxy),
        )

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind}
        for k in ("sigma", "truncate_at", "sigma_proxy"):
            v = getattr(self, k)
            if v is not None:
                d[k] = v
        return d

    def policy_noise(self) -> NoiseModel:
        """The noise model a policy should assume for this instance."""
        if self.kind == "bernoulli":
            return Bounded(0.0, 1.0)
        if self.kind == "truncated_gaussian" and self.sigma_proxy is not None:
            return SubGaussian(self.sigma_proxy)
        assert self.sigma is not None
        return SubGaussian(self.sigma)


@dataclass(frozen=True)
class AssumptionReport:
    """Result of :meth:`Instance.check_assumptions`.

    Attributes:
        violations: `(arm, fidelity, |µ(m) − µ(M)|, ζ(m))` for every pair that breaks the bias bound (0-based
            indices); empty when all arms satisfy it.
        gamma_violations: `(fidelity, realised spread, γ(m))` for every fidelity where the realised
            `max_i ξ_{i,m} − min_i ξ_{i,m}` exceeds the instance's γ; empty without a γ.
        unique_best: whether exactly one arm has the highest true mean (best-arm identification is ill-posed
            otherwise).
    """

    violations: list[tuple[int, int, float, float]] = field(default_factory=list)
    gamma_violations: list[tuple[int, float, float]] = field(default_factory=list)
    unique_best: bool = True

    @property
    def ok(self) -> bool:
        return not self.violations and not self.gamma_violations and self.unique_best

    @property
    def violating_arms(self) -> list[int]:
        return sorted({a for a, *_ in self.violations})

    def summary(self) -> str:
        if self.ok:
            return "all arms satisfy |mu(m) - mu(M)| <= zeta(m)"
        parts = []
        if self.violations:
            worst = max(self.violations, key=lambda v: v[2] - v[3])
            parts.append(
                f"{len(self.violations)} (arm, fidelity) pairs on {len(self.violating_arms)} arms break "
                f"|mu(m) - mu(M)| <= zeta(m) (worst: arm {worst[0]}, fidelity {worst[1]}: "
                f"{worst[2]:.4g} > {worst[3]:.4g})"
            )
        if self.gamma_violations:
            parts.append(
                f"the realised bias spread exceeds gamma at fidelities {[g[0] for g in self.gamma_violations]}"
            )
        if not self.unique_best:
            parts.append("the best arm is not unique (best-arm identification is ill-posed)")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "n_violations": len(self.violations),
            "violating_arms": self.violating_arms,
            "gamma_violations": [list(g) for g in self.gamma_violations],
            "unique_best": self.unique_best,
        }


class Instance:
    """A simulated multi-fidelity instance.

    Args:
        means: K×M array, `means[k, m] = µ_k^(m)`; the last column holds the true means.
        ladder: the fidelity ladder (costs, ζ, optional γ).
        noise: a :class:`NoiseSpec` or its dict.
        source: where the instance came from (free text).
        name: label of the instance (free text).

    Example:
        >>> inst = Instance([[0.4, 0.5], [0.5, 0.6]], FidelityLadder([0.5, 5.0], [0.1, 0.0]),
        ...                 {"kind": "gaussian", "sigma": 0.1})
        >>> inst.K, inst.M, inst.best_arm
        (2, 2, 1)
        >>> inst.sample(np.array([1, 1]), np.array([1, 1]), np.random.default_rng(0)).shape
        (2,)
    """

    def __init__(
        self,
        means: Any,
        ladder: FidelityLadder,
        noise: NoiseSpec | Mapping[str, Any],
        *,
        source: str | None = None,
        name: str | None = None,
    ) -> None:
        try:
            mu = np.array(means, dtype=float)
        except (TypeError, ValueError):
            raise ValueError("means must be a K×M matrix of numbers (a list of equal-length lists)") from None
        if mu.ndim != 2 or mu.shape[0] < 1 or mu.shape[1] < 1:
            raise ValueError(f"means must be a non-empty K×M matrix, got shape {mu.shape}")
        if not np.all(np.isfinite(mu)):
            k, m = np.argwhere(~np.isfinite(mu))[0]
            raise ValueError(f"means[{k}][{m}] = {mu[k, m]} is not finite")
        if not isinstance(ladder, FidelityLadder):
            raise ValueError("ladder must be a FidelityLadder")
        if mu.shape[1] != ladder.M:
            raise ValueError(f"means have {mu.shape[1]} fidelities per arm but the ladder has {ladder.M}")
        self.noise = noise if isinstance(noise, NoiseSpec) else NoiseSpec.from_dict(noise)
        if self.noise.kind == "bernoulli" and (mu.min() < 0 or mu.max() > 1):
            k, m = np.argwhere((mu < 0) | (mu > 1))[0]
            raise ValueError(f"means[{k}][{m}] = {mu[k, m]} is outside [0, 1], required for Bernoulli noise")
        mu.setflags(write=False)
        self.means = mu
        self.ladder = ladder
        self.source = source
        self.name = name

    # ----------------------------------------------------------------------------- properties
    @property
    def K(self) -> int:
        return int(self.means.shape[0])

    @property
    def M(self) -> int:
        return int(self.means.shape[1])

    @property
    def true_means(self) -> np.ndarray:
        """µ_k^(M) for every arm."""
        return self.means[:, -1]

    @property
    def best_arm(self) -> int:
        """Index of the arm with the highest true mean (the first one if tied; see :attr:`has_unique_best`)."""
        return int(np.argmax(self.true_means))

    @property
    def has_unique_best(self) -> bool:
        t = self.true_means
        return bool(np.sum(t == t.max()) == 1)

    @property
    def policy_noise(self) -> NoiseModel:
        return self.noise.policy_noise()

    def problem(
        self, *, delta: float | None = None, budget: float | None = None, seed: int | None = None
    ) -> dict[str, Any]:
        """The ingredients :func:`mf_sched.registry.build_policy` needs to build a policy for this instance.

        Args:
            delta: the confidence δ for δ-correct policies, `0 < δ < 1`; `None`: the policy's default.
            budget: the cost cap Λ (in units of the ladder's costs); `None`: no cap.
            seed: the seed of the policy's own random generator; `None`: fresh entropy.
        """
        return {
            "n_arms": self.K,
            "ladder": self.ladder,
            "noise": self.policy_noise,
            "delta": delta,
            "budget": budget,
            "seed": seed,
        }

    # ----------------------------------------------------------------------------- checks
    def check_assumptions(self, atol: float = 1e-12) -> AssumptionReport:
        """Check `|µ_k^(m) − µ_k^(M)| ≤ ζ(m)` for all (k, m), γ if given, and uniqueness of the best arm.

        Args:
            atol: the absolute tolerance: a gap counts as a violation only when it exceeds the bound by more.
        """
        zeta = np.asarray(self.ladder.zeta)
        bias = self.means - self.true_means[:, None]
        gap = np.abs(bias)
        bad = np.argwhere(gap > zeta[None, :] + atol)
        viol = [(int(k), int(m), float(gap[k, m]), float(zeta[m])) for k, m in bad]
        gviol = []
        if self.ladder.gamma is not None:
            spread = bias.max(axis=0) - bias.min(axis=0)
            for m, (s, g) in enumerate(zip(spread, self.ladder.gamma)):
                if s > g + atol:
                    gviol.append((m, float(s), float(g)))
        return AssumptionReport(viol, gviol, self.has_unique_best)

    # ----------------------------------------------------------------------------- sampling
    def sample(self, arms: np.ndarray, fidelities: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One independent observation per (arm, fidelity) pair (vectorised).

        Args:
            arms: integer array of arm indices, each in `0 .. K − 1`.
            fidelities: integer array of fidelity indices (`0 .. M − 1`), the same shape as `arms`.
            rng: the generator the noise is drawn from.
        """
        mu = self.means[arms, fidelities]
        kind = self.noise.kind
        if kind == "gaussian":
            return mu + self.noise.sigma * rng.standard_normal(mu.shape)
        if kind == "bernoulli":
            return (rng.random(mu.shape) < mu).astype(float)
        # truncated Gaussian by rejection (acceptance ≥ 68% when truncate_at ≥ sigma)
        s, a = self.noise.sigma, self.noise.truncate_at
        z = s * rng.standard_normal(mu.shape)
        bad = np.abs(z) > a
        while np.any(bad):
            z[bad] = s * rng.standard_normal(int(bad.sum()))
            bad = np.abs(z) > a
        return mu + z

    @classmethod
    def synthetic(
        cls,
        n_arms: int,
        costs: Any,
        offsets: Any,
        gamma: Any,
        *,
        sigma: float = 1.0,
        min_gap: float = 0.0,
        seed: int | None = None,
    ) -> Instance:
        """A random instance from Poiani et al. (2022)'s generator (§7, Synthetic A/B), **corrected**: the
        authors' released generator builds arm 1 from arm 0 and skips the offset `b_m` for arms ≥ 2, so its
        arm 1 can break the bias bound.

        True means `µ_{i,M} ~ N(0, 1)`; bias offsets `b_m` and spreads `γ_m` give
        `ζ_m = b_m + γ_m/2` and `µ_{i,m} = µ_{i,M} − b_m + U(−γ_m/2, γ_m/2)`, so every arm satisfies
        `|µ_{i,m} − µ_{i,M}| ≤ ζ_m` and the realised bias spread is at most `γ_m` (the released code
        built arm 1 from arm 0 and forgot `b_m` for the other arms). Gaussian noise with `sigma`.

        Args:
            n_arms: the number of arms `K`, `≥ 1`.
            costs: the costs `λ(1) < … < λ(M)` of the fidelities, > 0 and strictly increasing.
            offsets: the bias offsets `b_m`, one per fidelity, with `b_M = 0`.
            gamma: the bias spreads `γ_m ≥ 0`, one per fidelity, with `γ_M = 0` (stored as the ladder's γ).
            sigma: the standard deviation of the Gaussian observation noise, > 0.
            min_gap: the smallest accepted difference between the best and the second-best true mean (the means are
                re-drawn until it holds); 0 accepts any draw.
            seed: seeds the draw (`None`: fresh entropy).

        >>> inst = Instance.synthetic(50, [1, 10, 100], [1.0, 0.2, 0.0], [0.3, 0.05, 0.0], seed=0)
        >>> inst.K, inst.M, inst.check_assumptions().ok
        (50, 3, True)
        """
        rng = np.random.default_rng(seed)
        b = np.asarray(offsets, dtype=float)
        g = np.asarray(gamma, dtype=float)
        if b.shape != g.shape or b.ndim != 1:
            raise ValueError("offsets and gamma must be 1-D sequences of the same length as costs")
        for _ in range(10_000):
            top = rng.standard_normal(n_arms)
            srt = np.sort(top)
            if n_arms < 2 or srt[-1] - srt[-2] >= min_gap:
                break
        else:  # pragma: no cover
            raise ValueError(f"could not draw an instance with min_gap = {min_gap}")
        means = top[:, None] - b[None, :] + rng.uniform(-g / 2, g / 2, size=(n_arms, b.size))
        means[:, -1] = top
        ladder = FidelityLadder(costs, (b + g / 2).tolist(), gamma=g.tolist())
        return cls(
            means,
            ladder,
            {"kind": "gaussian", "sigma": sigma},
            source="mf_sched.Instance.synthetic (corrected Poiani et al. 2022 generator)",
            name=f"synthetic-{n_arms}x{b.size}",
        )

    def sampler(self, rng: np.random.Generator, block: int = 4096, *, semantics: str = "independent") -> Sampler:
        """A fast one-at-a-time sampler drawing its noise from `rng` in blocks (see :class:`Sampler`).

        A simulated instance draws independent observations under both `semantics` (its means carry no per-run
        state); subclasses that replay real training runs (:class:`mf_sched.curves.replay.ReplayBenchmark`)
        continue the same run under `"resumable"`.

        Args:
            rng: the generator the noise is drawn from.
            block: how many draws are generated at a time, a positive integer.
            semantics: the observation model the simulator runs, `"independent"` or `"resumable"` (see
                :func:`mf_sched.sim.simulate.run_policy`).
        """
        if semantics not in ("independent", "resumable"):
            raise ValueError(f"semantics = {semantics!r} is unknown; accepted: 'independent', 'resumable'")
        return Sampler(self, rng, block)

    # ----------------------------------------------------------------------------- (de)serialisation
    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "means": self.means.tolist(),
            "costs": list(self.ladder.costs),
            "zeta": list(self.ladder.zeta),
            "noise": self.noise.to_dict(),
        }
        if self.ladder.gamma is not None:
            d["gamma"] = list(self.ladder.gamma)
        if self.ladder.resources is not None:
            d["resources"] = list(self.ladder.resources)
        if self.source:
            d["source"] = self.source
        if self.name:
            d["name"] = self.name
        return d

    @classmethod
    def from_dict(cls, d: Any, *, name: str | None = None) -> Instance:
        """Validate and build an instance from the JSON format (see the module docstring).

        Args:
            d: the parsed JSON object: `means`, `costs`, `zeta`, `noise` (required), `gamma`, `resources`, `source`,
                `name` (optional); any other key is an error.
            name: the label used when `d` has no `name` (a file's stem when loading a file).
        """
        allowed = {"means", "costs", "zeta", "gamma", "noise", "source", "name", "resources"}
        check_instance_keys(d, "instance", allowed, ("means", "costs", "zeta", "noise"))
        means = d["means"]
        if not isinstance(means, list) or not means or not all(isinstance(r, list) for r in means):
            raise ValueError("instance 'means' must be a non-empty list of lists (K rows of M fidelities)")
        widths = {len(r) for r in means}
        if len(widths) != 1:
            raise ValueError(f"every row of 'means' must have the same length; got lengths {sorted(widths)}")
        check_numbers("means", means)
        ladder = FidelityLadder(d["costs"], d["zeta"], gamma=d.get("gamma"), resources=d.get("resources"))
        return cls(means, ladder, d["noise"], source=d.get("source"), name=d.get("name") or name)

    def save(self, path: str | os.PathLike[str]) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1))

    def __repr__(self) -> str:
        return f"Instance(name={self.name!r}, K={self.K}, M={self.M}, noise={self.noise.kind})"


def check_instance_keys(d: Any, what: str, allowed: set[str], required: Sequence[str]) -> None:
    """An instance's JSON object: a mapping with only `allowed` keys, every `required` one among them, and
    `source` / `name` strings when present (ValueError naming `what` and the key). Shared by every
    instance kind.

    Args:
        d: the parsed JSON value to check.
        what: the name of the object in error messages (e.g. `"instance"`).
        allowed: every key the object may have.
        required: the keys it must have.

    >>> check_instance_keys({"means": [], "colour": 1}, "instance", {"means"}, ("means",))
    Traceback (most recent call last):
    ...
    ValueError: instance has unknown keys ['colour']; accepted: ['means']
    """
    if not isinstance(d, Mapping):
        raise ValueError(f"an instance must be a JSON object, got {type(d).__name__}")
    extra = set(d) - allowed
    if extra:
        raise ValueError(f"{what} has unknown keys {sorted(extra)}; accepted: {sorted(allowed)}")
    for key in required:
        if key not in d:
            raise ValueError(f"{what} is missing the required key {key!r}")
    for key in ("source", "name"):
        if key in d and d[key] is not None and not isinstance(d[key], str):
            raise ValueError(f"{what} '{key}' must be a string")


def check_numbers(name: str, v: Any, path: str = "") -> None:
    """Every leaf of a nested JSON list is a real number (bools and strings are rejected, naming the place).

    Args:
        name: the field's name in error messages.
        v: the value: a number or a (nested) list of numbers.
        path: the index path of `v` inside the field, prefixed to error messages (used by the recursion).

    >>> check_numbers("means", [[0.1, 0.2], [0.3, "x"]])
    Traceback (most recent call last):
    ...
    ValueError: means[1][1] must be a number, got 'x'
    """
    if isinstance(v, list):
        for i, x in enumerate(v):
            check_numbers(name, x, f"{path}[{i}]")
    elif isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{name}{path} must be a number, got {v!r}")


def build_from_file(path: str | os.PathLike[str], from_dict: Callable[..., T]) -> T:
    """`from_dict(data, name=<file stem>)` on the file's JSON (:func:`read_instance_json`); a ValueError
    names the file. Shared by every instance kind.

    Args:
        path: the instance file.
        from_dict: the builder of the instance kind, called as `from_dict(data, name=stem)`.
    """
    p = Path(path)
    data = read_instance_json(p)
    try:
        return from_dict(data, name=p.stem)
    except ValueError as e:
        raise ValueError(f"{p}: {e}") from None


def read_instance_json(path: str | os.PathLike[str]) -> Any:
    """Read an instance file's JSON (size-capped, UTF-8; never evaluated). Shared by every instance kind.

    Raises FileNotFoundError when missing and ValueError (naming the file) when it is a directory (or not a
    regular file), too large or not JSON.

    Args:
        path: the instance file (at most 256 MiB of UTF-8 JSON).
    """
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"instance path {str(p)!r} is a directory; give the path of an instance JSON file")
    if not p.exists():
        raise FileNotFoundError(f"instance file {str(p)!r} does not exist")
    if not p.is_file():
        raise ValueError(f"instance path {str(p)!r} is not a regular file; give the path of an instance JSON file")
    size = p.stat().st_size
    if size > _MAX_FILE_BYTES:
        raise ValueError(f"instance file {str(p)!r} is {size} bytes; the limit is {_MAX_FILE_BYTES}")
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"instance file {str(p)!r} is not valid JSON: {e}") from None


def load_instance(path: str | os.PathLike[str], *, warn: bool = True) -> Instance:
    """Load and validate an instance JSON file.

    Raises ValueError (naming the field) on malformed content; warns with :class:`AssumptionWarning`
    when some arms violate the bias bound (see :meth:`Instance.check_assumptions`).

    Args:
        path: the instance JSON file (format: see the module docstring).
        warn: warn with :class:`AssumptionWarning` when the instance breaks its model assumptions (on by default).
    """
    p = Path(path)
    inst = build_from_file(p, Instance.from_dict)
    if warn:
        rep = inst.check_assumptions()
        if not rep.ok:
            warnings.warn(f"{p.name}: {rep.summary()}", AssumptionWarning, stacklevel=2)
    return inst


# ------------------------------------------------------------------------------------------ shipped instances
_PUBLISHED = ("data", "instances")


def published_instances() -> list[str]:
    """The names of the published instances shipped with mf-sched (Poiani et al. 2022, Table 1; Poiani et al.
    2024, §6 and appendix), for :func:`published_instance`. Their sources and licences:
    `mf_sched/data/instances/README.md`.

    >>> published_instances()[:3]
    ['poiani2022-synthetic-a', 'poiani2022-synthetic-b', 'poiani2022-yahtzee']
    """
    folder = resources.files("mf_sched").joinpath(*_PUBLISHED)
    return sorted(f.name[: -len(".json")] for f in folder.iterdir() if f.name.endswith(".json"))


def published_instance_path(name: str) -> Path:
    """The file of the shipped published instance `name` (see :func:`published_instances`); ValueError naming
    the accepted names otherwise.

    Args:
        name: a name from :func:`published_instances` (a trailing `.json` is accepted).
    """
    names = published_instances()
    if not isinstance(name, str) or name.removesuffix(".json") not in names:
        raise ValueError(f"name = {name!r} is not a published instance; accepted: {', '.join(names)}")
    return Path(str(resources.files("mf_sched").joinpath(*_PUBLISHED, name.removesuffix(".json") + ".json")))


def published_instance(name: str, *, warn: bool = True) -> Instance:
    """A published instance shipped with mf-sched, loaded and validated as :func:`load_instance` does.

    Args:
        name: a name from :func:`published_instances` (a trailing `.json` is accepted).
        warn: warn with :class:`AssumptionWarning` when the instance breaks its model assumptions (some published
            instances do; on by default).

    >>> inst = published_instance("poiani2024-5x2")
    >>> inst.K, inst.M, inst.best_arm, inst.source.split(" (NeurIPS)")[0]
    (5, 2, 4, 'Poiani, Degenne, Kaufmann, Metelli, Restelli 2024')
    """
    return load_instance(published_instance_path(name), warn=warn)


class Sampler:
    """Draws observations of an :class:`Instance` one at a time, fast: the noise is generated by
    :meth:`Instance.sample` in blocks of `block` draws (at a fixed reference arm) and handed out in
    order, so a simulation's per-pull overhead stays in the microseconds. Deterministic given `rng`.

    Args:
        instance: the instance whose observations are drawn.
        rng: the generator the noise is drawn from (the sampler is deterministic given it).
        block: how many noise draws are generated at a time, a positive integer.

    >>> inst = Instance([[0.25]], FidelityLadder([1]), {"kind": "bernoulli"})
    >>> s = inst.sampler(np.random.default_rng(0))
    >>> sorted({s.draw_one(0, 0) for _ in range(100)})
    [0.0, 1.0]
    """

    def __init__(self, instance: Instance, rng: np.random.Generator, block: int = 4096) -> None:
        self.instance = instance
        self.rng = rng
        self.block = block
        self._buf: list[float] = []
        self._pos = 0
        self._means = instance.means.tolist()
        self._kind = instance.noise.kind

    def _refill(self) -> None:
        if self._kind == "bernoulli":
            self._buf = self.rng.random(self.block).tolist()  # uniforms; compared with the mean
        else:
            z = self.instance.sample(
                np.zeros(self.block, dtype=np.int64), np.zeros(self.block, dtype=np.int64), self.rng
            )
            self._buf = (z - self.instance.means[0, 0]).tolist()  # centred noise
        self._pos = 0

    def draw_one(self, arm: int, fidelity: int) -> float:
        if self._pos >= len(self._buf):
            self._refill()
        u = self._buf[self._pos]
        self._pos += 1
        mu = self._means[arm][fidelity]
        if self._kind == "bernoulli":
            return 1.0 if u < mu else 0.0
        return mu + u

    def draw(self, arms: np.ndarray, fidelities: np.ndarray) -> np.ndarray:
        return self.instance.sample(arms, fidelities, self.rng)
