"""The policy registry: names (lowercase, hyphenated) → policy classes.

Every module in :mod:`mf_sched.policies` registers its class with :func:`register`; the registry
imports them all on first use, so adding a policy is adding one file.

>>> "se" in list_policies()
True
>>> get_policy("se").paper.startswith("Even-Dar")
True

Two policies were renamed so that their names say what they are (the old names read alike but are unrelated
algorithms); the old names still work, with a DeprecationWarning, and saved states that carry them still load:

- `mfe` → `iise-max-exploit`: Maximum Fidelity Exploit, IISE with α_m = c·ξ_m (Poiani et al. 2022, §7);
- `mf-elimination` → `mf-mab-elimination`: Elimination for MF-MAB (Wang et al. 2023, Algorithm 3).

>>> canonical_name("mfe")
'iise-max-exploit'
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import types
import typing
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, Union

if TYPE_CHECKING:  # the annotations only: mf_sched.policy imports this module (Policy.from_state_dict)
    from mf_sched.policy import Policy

__all__ = ["register", "get_policy", "list_policies", "build_policy", "canonical_name", "RENAMED"]

_REGISTRY: dict[str, type[Policy]] = {}
_LOADED = False
_NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")

P = TypeVar("P", bound="type[Policy]")

RENAMED: dict[str, str] = {"mfe": "iise-max-exploit", "mf-elimination": "mf-mab-elimination"}
"""Old policy names → their current names (still accepted, with a DeprecationWarning)."""


def canonical_name(name: Any, *, warn: bool = False) -> Any:
    """The current name of policy `name` (itself unless it is an old name in :data:`RENAMED`).

    Anything that is not a string is returned as it is (the caller reports it).

    Args:
        name: a policy name; an old name of :data:`RENAMED` maps to its new one, anything else (a current name,
            an unknown name, a non-string) is returned unchanged.
        warn: raise a DeprecationWarning naming the new name when `name` is an old one (off by default).
    """
    if isinstance(name, str) and name in RENAMED:
        new = RENAMED[name]
        if warn:
            warnings.warn(
                f"policy {name!r} is now called {new!r}; the old name will be removed in a future release",
                DeprecationWarning,
                stacklevel=3,
            )
        return new
    return name


def register(cls: P) -> P:
    """Class decorator: add a policy class under its :attr:`Policy.name`.

    Args:
        cls: a subclass of :class:`~mf_sched.policy.Policy` with a `name` (lowercase words joined by hyphens, unique
            among the registered policies) and a `paper` citation.

    Returns:
        `cls` itself.
    """
    name = cls.name
    if not _NAME_RE.match(name):
        raise ValueError(f"policy name {name!r} must be lowercase words joined by hyphens")
    if not cls.paper:
        raise ValueError(f"policy {name!r} must cite its paper in the `paper` class attribute")
    other = _REGISTRY.get(name)
    if (
        other is not None
        and other is not cls
        and (other.__module__, other.__qualname__) != (cls.__module__, cls.__qualname__)
    ):
        raise ValueError(f"policy name {name!r} is already registered by {other.__module__}.{other.__qualname__}")
    _REGISTRY[name] = cls
    return cls


_ELSEWHERE = ("mf_sched.racing.policy",)
"""Policies that live outside :mod:`mf_sched.policies` (the race policy lives with the rest of racing)."""


def _load_all() -> None:
    global _LOADED
    if _LOADED:
        return
    import mf_sched.policies as pkg

    for mod in pkgutil.iter_modules(pkg.__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{pkg.__name__}.{mod.name}")
    for name in _ELSEWHERE:
        importlib.import_module(name)
    _LOADED = True


def list_policies() -> dict[str, type[Policy]]:
    """All registered policies, by name (sorted)."""
    _load_all()
    return dict(sorted(_REGISTRY.items()))


def get_policy(name: str) -> type[Policy]:
    """The policy class registered under `name`.

    Args:
        name: a registered name (see the policy table in the docs); an old name of :data:`RENAMED` is accepted
            with a DeprecationWarning.

    Returns:
        The policy class; calling it with `n_arms`, `ladder` and the policy's options builds one.

    Raises:
        ValueError: `name` is not registered (the message lists the registered names).

    Examples:
        >>> get_policy("no-such-policy")
        Traceback (most recent call last):
        ...
        ValueError: unknown policy 'no-such-policy'; registered: ..., se, ..., ucb1, ...
    """
    _load_all()
    try:
        return _REGISTRY[canonical_name(name, warn=True)]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise ValueError(f"unknown policy {name!r}; registered: {known}") from None


def build_policy(name: str, problem: Mapping[str, Any], **params: Any) -> Policy:
    """Build policy `name` for a problem description, passing only what its constructor accepts.

    This is how the CLI and the simulator build any registered policy from an instance.

    Args:
        name: a registered policy name (an old name of :data:`RENAMED` is accepted with a DeprecationWarning).
        problem: the common ingredients, e.g. :meth:`mf_sched.sim.instance.Instance.problem`: `n_arms`, `ladder`,
            `noise`, optionally `delta`, `budget`, `seed` and instance-level extras. Only the keys the policy's
            constructor accepts are passed; a `None` value is left out (the policy's default applies).
        **params: the policy-specific arguments; each must be accepted by the constructor, a scalar-typed one must
            have its type (ValueError naming it otherwise). They override `problem`.

    >>> from mf_sched import FidelityLadder
    >>> p = build_policy("se", {"n_arms": 3, "ladder": FidelityLadder([1.0]), "delta": 0.05, "budget": None})
    >>> type(p).__name__, p.delta
    ('SuccessiveElimination', 0.05)
    """
    cls = get_policy(name)
    sig = inspect.signature(cls.__init__)
    accepts_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values())
    names = set(sig.parameters) - {"self"}
    unknown = [k for k in params if k not in names and not accepts_kwargs]
    if unknown:
        raise ValueError(f"policy {name!r} does not accept parameter(s) {unknown}; accepted: {sorted(names)}")
    kwargs = {k: v for k, v in problem.items() if k in names and v is not None}
    kwargs.update(params)
    missing = [
        p.name
        for p in sig.parameters.values()
        if p.name != "self"
        and p.default is inspect.Parameter.empty
        and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        and p.name not in kwargs
    ]
    if missing:
        raise ValueError(f"policy {name!r} needs parameter(s) {missing}; pass them as --param NAME=VALUE")
    _check_types(cls, name, params)
    try:
        return cls(**kwargs)
    except TypeError as e:  # a value of a type the constructor cannot use
        raise ValueError(f"policy {name!r} cannot use the parameters {dict(params)!r}: {e}") from None


_SCALARS: dict[type, str] = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def _check_types(cls: type[Policy], name: str, params: Mapping[str, Any]) -> None:
    """Check every parameter whose annotation is a plain scalar (`float`, `int | None`, ...), so that
    `epsilon="abc"` is an error naming `epsilon` rather than a bare conversion error."""
    try:
        hints = typing.get_type_hints(cls.__init__)
    except Exception:  # pragma: no cover - unresolvable annotations: the constructor validates
        return
    for key, value in params.items():
        hint = hints.get(key)
        union = isinstance(hint, types.UnionType) or typing.get_origin(hint) is Union
        args = typing.get_args(hint) if union else (hint,)
        optional = type(None) in args
        kinds = [a for a in args if a is not type(None)]
        if not kinds or not all(k in _SCALARS for k in kinds):
            continue
        if value is None and optional:
            continue
        ok = any(
            isinstance(value, k)
            and (k is bool or not isinstance(value, bool))
            or (k is float and isinstance(value, int) and not isinstance(value, bool))
            for k in kinds
        )
        if not ok:
            want = " or ".join(_SCALARS[k] for k in kinds) + (" (or null)" if optional else "")
            raise ValueError(f"policy {name!r}: parameter {key} = {value!r} must be {want}")
