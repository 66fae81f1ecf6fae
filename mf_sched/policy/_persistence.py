"""Saving, restoring and replaying a policy: the state and history half of :class:`~mf_sched.policy.Policy`.

:class:`PolicyPersistence` is a base class of `Policy` (it is not used on its own): it turns the protocol's
bookkeeping and a subclass's state attributes into JSON-safe data (:meth:`~PolicyPersistence.state_dict`), loads
such data back with every field checked (:meth:`~PolicyPersistence.load_state_dict`; the checks are the functions
below, so a damaged or hand-edited state is refused with a message naming the field), rebuilds a policy from its
configuration or its state, and records and replays the event history. A subclass lists its own state in
`_state_attrs` and may check it in `_validate_state` with :func:`_state_int` and :func:`_state_arms`.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

import numpy as np

from mf_sched import _serialize
from mf_sched._validate import check_int
from mf_sched.ladder import FidelityLadder
from mf_sched.noise import noise_from_dict
from mf_sched.policy._errors import PolicyError, ReplayMismatchError

__all__ = ["STATE_FORMAT_VERSION", "PolicyPersistence"]

STATE_FORMAT_VERSION = 1
"""Version of the saved-state layout: the `"format"` field that :meth:`~mf_sched.policy.Policy.state_dict` writes;
:meth:`~mf_sched.policy.Policy.load_state_dict` reads this version only and refuses any other with a
:class:`~mf_sched._serialize.StateFormatError`."""

#: the class a constructor is called on is the type it returns (`get_policy("iise").from_state_dict(...)` is an IISE)
PolicyT = TypeVar("PolicyT", bound="PolicyPersistence")


def _state_int(sub: Mapping[str, Any], name: str, low: int, high: int | None = None) -> int:
    """A saved state's integer field `name` in `low..high` (:func:`~mf_sched._validate.check_int`), or a
    StateFormatError."""
    try:
        return check_int(f"state field {name}", sub[name], low, high)
    except ValueError as e:
        raise _serialize.StateFormatError(str(e)) from None


def _state_arms(sub: Mapping[str, Any], name: str, n_arms: int) -> None:
    """A saved state's field `name` lists distinct arms in `0..n_arms − 1` (a vector), or a StateFormatError."""
    arms = sub[name]
    if arms.ndim != 1 or (arms.size and (arms.min() < 0 or arms.max() >= n_arms)):
        raise _serialize.StateFormatError(f"state field {name} must list arms in 0..{n_arms - 1}")
    if np.unique(arms).size != arms.size:
        raise _serialize.StateFormatError(f"state field {name} lists an arm twice")


def _short(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"array of {v.dtype} with shape {v.shape}"
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def _compatible(cur: Any, new: Any, fixed_shape: bool = True) -> bool:
    """Whether a saved value `new` can replace the attribute `cur` (same kind; arrays: same dtype and
    number of dimensions, and the same shape unless the field's shape may change)."""
    if new is None or cur is None:
        return True  # optional fields
    if isinstance(cur, np.ndarray):
        same = isinstance(new, np.ndarray) and new.dtype == cur.dtype and new.ndim == cur.ndim
        return same and (not fixed_shape or new.shape == cur.shape)
    if isinstance(cur, (bool, np.bool_)):
        return isinstance(new, bool)
    if isinstance(cur, (int, np.integer)):
        return isinstance(new, int) and not isinstance(new, bool)
    if isinstance(cur, (float, np.floating)):
        return isinstance(new, (int, float)) and not isinstance(new, bool)
    if isinstance(cur, str):
        return isinstance(new, str)
    if isinstance(cur, (list, tuple, set)):
        return isinstance(new, list)
    if isinstance(cur, Mapping):
        return isinstance(new, dict)
    return True


def _check_config_fits_arrays(cfg: dict[str, Any], base: Any) -> None:
    """Before a policy is built from a saved state's config: its `n_arms` must be the number of rows of the
    saved count table. A config edited to name 40 million arms would otherwise allocate the tables of a
    40-million-arm policy before the arrays could be found not to fit (the state fuzz found exactly this)."""
    n = cfg.get("n_arms")
    try:
        counts = _serialize.decode(base["_counts"]) if isinstance(base, Mapping) and "_counts" in base else None
    except (TypeError, ValueError, KeyError) as e:
        raise _serialize.StateFormatError(f"state field _counts cannot be decoded: {e}") from None
    if isinstance(n, int) and isinstance(counts, np.ndarray) and counts.ndim == 2 and counts.shape[0] != n:
        raise _serialize.StateFormatError(
            f"state 'config' says n_arms = {_short(n)} but its count table has {counts.shape[0]} rows"
        )


def _check_base(base: dict[str, Any], K: int, M: int, costs: np.ndarray) -> tuple[dict, set[int]]:
    """Validate the protocol bookkeeping of a saved state; returns (outstanding, given_back)."""
    fmt = _serialize.StateFormatError

    def integer(name: str, v: Any, low: int = 0) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise fmt(f"state field {name} = {_short(v)} must be an integer >= {low}")
        return v

    next_id = integer("_next_id", base["_next_id"])
    n_told = integer("_n_told", base["_n_told"])
    n_extra = integer("_n_extra", base["_n_extra"])
    counts, sums, sumsq = base["_counts"], base["_sums"], base["_sumsq"]
    if counts.min(initial=0) < 0 or int(counts.sum()) != n_told or n_extra > n_told:
        raise fmt("state counts are inconsistent (negative, or not matching the number of told pulls)")
    if not (np.all(np.isfinite(sums)) and np.all(np.isfinite(sumsq)) and sumsq.min(initial=0.0) >= 0):
        raise fmt("state sums must be finite (and sums of squares >= 0)")
    for k in ("_cost", "_outstanding_cost"):
        v = base[k]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
            raise fmt(f"state field {k} = {_short(v)} must be a finite number")
    if not isinstance(base["_budget_blocked"], bool):
        raise fmt("state field _budget_blocked must be true or false")
    cost = float((counts * costs[None, :]).sum())
    scale = max(1.0, cost, float(costs.max()))  # running sums drift by rounding: a relative tolerance
    if abs(base["_cost"] - cost) > 1e-6 * scale:
        raise fmt(f"state cost {base['_cost']!r} does not match the told pulls (they cost {cost!r})")
    rows = base["_outstanding"]
    if not isinstance(rows, list):
        raise fmt("state field _outstanding must be a list of [id, arm, fidelity, claimed] rows")
    outstanding: dict[int, tuple[int, int, bool]] = {}
    for row in rows:
        if not (isinstance(row, list) and len(row) == 4 and isinstance(row[3], bool)):
            raise fmt("outstanding pulls must be [id, arm, fidelity, claimed] rows")
        pid = integer("outstanding pull id", row[0])
        a = integer("outstanding pull arm", row[1])
        f = integer("outstanding pull fidelity", row[2])
        if pid >= next_id or a >= K or f >= M or pid in outstanding:
            raise fmt(f"outstanding pull {row!r} is out of range (next id {next_id}, {K} arms, {M} fidelities)")
        outstanding[pid] = (a, f, row[3])
    committed = float(sum(costs[f] for _, f, _ in outstanding.values()))
    if abs(base["_outstanding_cost"] - committed) > 1e-6 * max(scale, committed):
        raise fmt("state outstanding cost does not match the outstanding pulls")
    gb = base["_given_back"]
    if not isinstance(gb, list):
        raise fmt("state field _given_back must be a list of pull ids")
    given_back = {integer("given-back pull id", x) for x in gb}
    if any(x >= next_id for x in given_back) or given_back & set(outstanding):
        raise fmt("given-back pull ids must be below the next id and not outstanding")
    prop = base["_proposal"]
    if prop is not None:
        ok = (
            isinstance(prop, list)
            and len(prop) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in prop)
        )
        if not ok or not (prop == [-1, -1] or (0 <= prop[0] < K and 0 <= prop[1] < M)):
            raise fmt(f"state field _proposal = {_short(prop)} must be null or [arm, fidelity]")
    return outstanding, given_back


class PolicyPersistence:
    """Saving, restoring and replaying a policy; a base class of :class:`~mf_sched.policy.Policy`, which supplies
    the protocol it saves (the bookkeeping attributes named in `_BASE_STATE`, :meth:`~mf_sched.policy.Policy.config`,
    `ask`/`tell`/`adopt`/`give_back` for the replay)."""

    #: names of subclass attributes that make up the policy's state (saved by state_dict)
    _state_attrs: ClassVar[tuple[str, ...]] = ()
    #: state arrays whose shape changes during a run (queues, survivor lists, growing data); every other
    #: state array must keep its shape when a saved state is loaded
    _variable_shape: ClassVar[tuple[str, ...]] = ()
    #: state fields that may be None in a saved state although they are not None now (fields that are None
    #: now may take any value)
    _optional_state: ClassVar[tuple[str, ...]] = ()
    #: the protocol's own bookkeeping (set up by `Policy.__init__`), saved in the state's "base" section
    _BASE_STATE: ClassVar[tuple[str, ...]] = (
        "_next_id",
        "_outstanding",
        "_given_back",
        "_n_told",
        "_n_extra",
        "_cost",
        "_outstanding_cost",
        "_budget_blocked",
        "_proposal",
        "_counts",
        "_sums",
        "_sumsq",
    )

    def state_dict(self) -> dict[str, Any]:
        """The complete state, JSON-safe and exact: `Policy.from_state_dict(p.state_dict())` continues
        exactly as `p` would (RNG included). Contains no code; loading validates every field."""
        base = {}
        for k in self._BASE_STATE:
            v = getattr(self, k)
            if k == "_outstanding":
                v = [[pid, a, f, c] for pid, (a, f, c) in sorted(v.items())]
            elif k == "_given_back":
                v = sorted(v)
            base[k] = v
        sub = {k: getattr(self, k) for k in self._state_attrs}
        return {
            "format": STATE_FORMAT_VERSION,
            "policy": self.name,
            "class": type(self).__qualname__,
            "config": _serialize.encode(self.config()),
            "base": _serialize.encode(base),
            "state": _serialize.encode(sub),
            "rng": _serialize.encode(self._rng.bit_generator.state),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a state saved by :meth:`state_dict` into this policy (same class and configuration).

        Every field is validated (types, dtypes, shapes, the bookkeeping invariants: told pulls match the
        counts and the cost, outstanding and given-back ids are below the next id, ...) and the restored
        policy must be able to propose and recommend; otherwise :class:`~mf_sched._serialize.StateFormatError`
        names the problem and the policy is left exactly as it was.

        Args:
            state: what :meth:`state_dict` returned (or its JSON round trip), saved by a policy of the same
                registered name (or an old name of it) and the same :meth:`~mf_sched.policy.Policy.config`.
        """
        backup = self.state_dict()
        try:
            self._load_state(state)
            loaded = self.state_dict()
            # the state must be usable: propose, recommend, describe (their caches are then reset)
            self._is_done()
            self._peek()
            self._recommend()
            self.describe()
            self._load_state(loaded)
            self._dry_run()
        except BaseException as e:
            self._load_state(backup)
            if isinstance(e, _serialize.StateFormatError):
                raise
            if isinstance(e, (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError)):
                raise _serialize.StateFormatError(
                    f"the state cannot be loaded into policy {self.name!r}: {type(e).__name__}: {e}"
                ) from None
            raise

    def _dry_run(self, pulls: int = 32) -> None:
        """Defence in depth for :meth:`load_state_dict`: a copy of the loaded policy answers its outstanding pulls
        and `pulls` more with a neutral value and recommends; a state whose fields pass every check but do not
        fit together (a counter that disagrees with the arrays) fails here, on load, instead of on a later tell."""
        if not self.finite_armed:  # a continuous policy's ask fits a model: too costly to probe on every load
            return
        probe = copy.deepcopy(self)
        mid: Any = 0.5 if self.value_width == 1 else np.full(self.value_width, 0.5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the probe's own warnings (e.g. an ill-posed instance) are not the user's
            for pull in list(probe.outstanding):
                probe.tell(pull, mid)
            for _ in range(pulls):
                pull = probe.ask()
                if pull is None:
                    break
                probe.tell(pull, mid)
            probe.recommendation()

    def _load_state(self, state: Any) -> None:
        fmt = _serialize.StateFormatError
        if not isinstance(state, Mapping):
            raise fmt(f"a policy state must be a mapping, got {type(state).__name__}")
        missing = [k for k in ("format", "policy", "config", "base", "state", "rng") if k not in state]
        if missing:
            raise fmt(f"the state lacks the field(s) {missing}")
        if state.get("format") != STATE_FORMAT_VERSION:
            raise fmt(f"unsupported state format {state.get('format')!r}; this version reads {STATE_FORMAT_VERSION}")
        from mf_sched.registry import canonical_name

        if canonical_name(state.get("policy")) != self.name:  # a state saved under a policy's old name loads
            raise fmt(f"state is for policy {state.get('policy')!r}, not {self.name!r}")
        cfg = _serialize.decode(state.get("config"))
        if cfg != _serialize.decode(_serialize.encode(self.config())):
            raise fmt("state was saved by a policy with another configuration")
        base = _serialize.decode(state["base"])
        sub = _serialize.decode(state["state"])
        if isinstance(sub, dict):
            sub = self._upgrade_state(sub)
        if not isinstance(base, dict) or set(base) != set(self._BASE_STATE):
            raise fmt("state 'base' section has missing or unknown fields")
        if not isinstance(sub, dict) or set(sub) != set(self._state_attrs):
            raise fmt(
                f"state section has fields {sorted(sub) if isinstance(sub, dict) else sub}; "
                f"expected {sorted(self._state_attrs)}"
            )
        for k in ("_counts", "_sums", "_sumsq"):
            cur = getattr(self, k)
            new = base[k]
            if not isinstance(new, np.ndarray) or new.shape != cur.shape or new.dtype != cur.dtype:
                raise fmt(f"state field {k} has the wrong shape or dtype")
        for k, v in sub.items():
            if v is None and k not in self._optional_state and getattr(self, k) is not None:
                raise fmt(f"state field {k} is null; the policy holds {_short(getattr(self, k))} there")
            if not _compatible(getattr(self, k), v, k not in self._variable_shape):
                raise fmt(f"state field {k} = {_short(v)} does not match the policy's {_short(getattr(self, k))}")
        self._validate_state(sub)
        outstanding, given_back = _check_base(base, self.n_arms, self.M, self._costs)
        rng_state = _serialize.decode(state["rng"])
        try:
            self._rng.bit_generator.state = rng_state
        except (TypeError, ValueError, KeyError) as e:
            raise fmt(f"invalid random generator state: {e}") from None
        for k in self._BASE_STATE:
            setattr(self, k, base[k])
        self._outstanding = outstanding
        self._given_back = given_back
        for k, v in sub.items():
            setattr(self, k, v)
        self._after_load()

    def _upgrade_state(self, sub: dict[str, Any]) -> dict[str, Any]:
        """Hook: translate an older form of the subclass's own state fields (`sub`, decoded) into the
        current one, so that states saved by earlier versions still load; return the (new) mapping."""
        return sub

    def _validate_state(self, sub: dict[str, Any]) -> None:
        """Hook: check a saved state's own fields (`sub`, decoded) before they are set; raise
        :class:`~mf_sched._serialize.StateFormatError` naming the problem. Types, dtypes and fixed shapes
        are already checked."""

    def _after_load(self) -> None:
        """Hook: rebuild caches derived from the state after :meth:`load_state_dict`."""

    @classmethod
    def from_config(cls: type[PolicyT], config: Mapping[str, Any]) -> PolicyT:
        """Build a fresh policy from :meth:`~mf_sched.policy.Policy.config` output.

        Args:
            config: the constructor arguments as `config()` returns them (the ladder and the noise model as
                mappings; they are rebuilt with `FidelityLadder.from_dict` and `noise_from_dict`).
        """
        cfg = dict(config)
        cfg["ladder"] = FidelityLadder.from_dict(cfg["ladder"])
        cfg["noise"] = noise_from_dict(cfg["noise"])
        return cls(**cfg)

    @classmethod
    def from_state_dict(cls: type[PolicyT], state: Mapping[str, Any]) -> PolicyT:
        """Rebuild a policy from :meth:`state_dict` output.

        `Policy.from_state_dict(state)` rebuilds whichever registered policy saved `state`; called on a
        policy class (`get_policy("iise").from_state_dict(state)`) it also checks that `state` was saved by that
        policy, and raises :class:`~mf_sched._serialize.StateFormatError` naming both otherwise (a state saved by
        `se` is not silently returned as a SuccessiveElimination when an IISE was asked for).

        Args:
            state: what :meth:`state_dict` returned (or its JSON round trip); its `"policy"` name picks the class
                and its `"config"` the constructor arguments, then :meth:`load_state_dict` checks and loads the rest.

        >>> from mf_sched import FidelityLadder, Policy, get_policy
        >>> p = get_policy("lucb1")(n_arms=4, ladder=FidelityLadder([1.0]), delta=0.1, seed=3)
        >>> for _ in range(5):
        ...     pull = p.ask(); p.tell(pull, 0.5)
        >>> q = Policy.from_state_dict(p.state_dict())
        >>> q.ask() == p.ask()
        True
        >>> get_policy("se").from_state_dict(p.state_dict())
        Traceback (most recent call last):
        ...
        mf_sched._serialize.StateFormatError: the state was saved by policy 'lucb1' (LUCB1), not 'se' ...
        """
        from mf_sched.registry import canonical_name, get_policy

        target = cls
        fmt = _serialize.StateFormatError
        if not isinstance(state, Mapping) or "policy" not in state:
            raise fmt("a policy state must be a mapping with a 'policy' name")
        name = state["policy"]
        try:
            cls = get_policy(canonical_name(name)) if isinstance(name, str) else None
        except ValueError:
            cls = None
        if cls is None:
            raise fmt(f"state is for policy {name!r}, which is not registered")
        asked = target
        if asked.name and canonical_name(asked.name) != canonical_name(name):
            raise fmt(
                f"the state was saved by policy {name!r} ({cls.__name__}), not {asked.name!r} ({asked.__name__}): "
                f"load it with Policy.from_state_dict(state) or get_policy({name!r}).from_state_dict(state)"
            )
        if not asked.name and not issubclass(cls, asked):
            raise fmt(f"the state was saved by policy {name!r} ({cls.__name__}), which is not a {asked.__name__}")
        if asked.name and issubclass(asked, cls):
            cls = asked  # a subclass of the registered policy (same name) is rebuilt as itself
        if "config" not in state:
            raise fmt("the state lacks the field(s) ['config']")
        cfg = _serialize.decode(state["config"])
        if not isinstance(cfg, dict):
            raise fmt("state 'config' must be a mapping")
        _check_config_fits_arrays(cfg, state.get("base"))
        try:
            policy = cls.from_config(cfg)
        except (TypeError, ValueError, KeyError) as e:
            raise fmt(f"state 'config' cannot build policy {name!r}: {type(e).__name__}: {e}") from None
        policy.load_state_dict(state)
        return policy

    # ----------------------------------------------------------------------------- history / replay
    def record_history(self, enabled: bool = True) -> None:
        """Start (or stop) recording the event history returned by :attr:`history`.

        Args:
            enabled: `True` starts a new, empty record (what was recorded before is dropped); `False` stops
                recording and drops the record.
        """
        self._events = [] if enabled else None

    @property
    def history(self) -> list[tuple[Any, ...]]:
        """Recorded events: `("ask", arm, fid)`, `("adopt", arm, fid)`, `("tell", id, value)`,
        `("give_back", id)`. Feed them to :meth:`replay` on a fresh policy with the same config."""
        if self._events is None:
            raise PolicyError("history is not being recorded; call record_history() first")
        return list(self._events)

    def replay(self, events: Iterable[Sequence[Any]]) -> None:
        """Apply an event history; each `ask` must reproduce the recorded pull (else
        :class:`~mf_sched.policy.ReplayMismatchError`, which names the event).

        Args:
            events: the events as :attr:`history` lists them (`("ask", arm, fid)`, `("adopt", arm, fid)`,
                `("tell", id, value)`, `("give_back", id)`), applied in order to a policy with the same
                configuration in the state the recording started from (usually a fresh one).
        """
        for i, ev in enumerate(events):
            kind = ev[0]
            if kind == "ask":
                p = self.ask()
                if p is None or (p.arm, p.fidelity) != (int(ev[1]), int(ev[2])):
                    raise ReplayMismatchError(
                        f"event {i}: replayed ask gave {p}, the history recorded arm {ev[1]} at fidelity {ev[2]}"
                    )
            elif kind == "adopt":
                self.adopt(int(ev[1]), int(ev[2]))
            elif kind == "tell":
                self.tell(int(ev[1]), ev[2])
            elif kind == "give_back":
                self.give_back(int(ev[1]))
            else:
                raise PolicyError(f"event {i}: unknown kind {kind!r}; accepted: ask, adopt, tell, give_back")
