"""The ask/tell policy protocol shared by every policy, simulator and adapter.

A *policy* decides which arm to pull at which fidelity. Its surface is small, so one adapter serves all:

* :meth:`Policy.ask` returns the next :class:`Pull` `(id, arm, fidelity)`, or `None` while it must
  wait for results already handed out (or when it is done). :meth:`Policy.ask_batch` hands out
  several at once (parallel workers).
* :meth:`Policy.tell` records one observation for an outstanding pull; results may come back in any
  order. :meth:`Policy.tell_batch` records many atomically.
* :meth:`Policy.give_back` returns a pull whose evaluation failed; the policy forgets it was issued and
  will hand the work out again if it still needs it.
* :meth:`Policy.adopt` registers a pull the policy did *not* choose (a user-enqueued Optuna trial, two
  Optuna workers that raced to the same decision, a Ray trial reporting after a restore). If it is work
  the policy was about to hand out, it fills that slot; otherwise its observation is recorded as an
  *extra* sample (counted in cost and statistics; used for decisions only by policies whose estimates
  pool every sample, see :attr:`Policy.sample_agnostic`). Nothing an evaluation produced is dropped.
* :attr:`Policy.done` and :meth:`Policy.recommendation` say when it has finished and what it answers.
* :meth:`Policy.state_dict` / :meth:`Policy.from_state_dict` save and restore the complete state
  (JSON-safe, exact, RNG included); :meth:`Policy.replay` rebuilds a policy from an event history.

Invariants (tested):

* deterministic given the seed and the sequence of calls;
* a tell for an unknown pull, a duplicate tell or a non-finite value raises :class:`PolicyError`
  and leaves the policy unchanged (a batch is all-or-nothing);
* the `budget` (a cost cap, in units of λ) is never exceeded by pulls the policy issues: when the
  next pull would exceed it, the policy stops issuing and, once its outstanding pulls are told, is
  done with `recommendation().reason == "budget"`.

Cost accounting follows the papers' *independent pulls* model: every pull of fidelity `m` costs
`λ(m)` when it is told. A given-back pull costs nothing here (the simulator may charge it). The
*resumable runs* semantics (an arm is a training run; reaching `m` from `m'` costs
`λ(m) − λ(m')`) is accounted by the runner and the adapters, see :mod:`mf_sched.sim.simulate`.

Writing a policy: subclass :class:`Policy` (or :class:`RoundPolicy` for the common "hand out a round
of pulls, wait for all, decide" shape), implement `_propose` / `_on_issue` / `_observe` /
`_is_done` / `_recommend`, list your state attributes in `_state_attrs` and call
:meth:`Policy._set_config` with your constructor arguments. A constructor lists only its own arguments
and ends in `**kwargs` passed on to `super().__init__`: the base's arguments (`noise`, `budget`,
`seed`, ...) then show in its signature as well (:func:`inherit_base_arguments`), which is what
:func:`mf_sched.registry.build_policy` and the CLI read. Answers come from :meth:`Policy._answer`;
arguments are checked with :mod:`mf_sched._validate`.
"""

from __future__ import annotations

import abc
import copy
import inspect
import math
import typing
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from mf_sched import _serialize
from mf_sched._validate import check_delta as check_delta  # re-exported: mf_sched.policy.check_delta
from mf_sched._validate import check_int, check_real
from mf_sched.ladder import FidelityLadder
from mf_sched.noise import Bounded, NoiseModel, as_real_array, noise_from_dict

__all__ = [
    "Pull",
    "Recommendation",
    "Policy",
    "RoundPolicy",
    "ArmSumRoundPolicy",
    "PolicyError",
    "UnknownPullError",
    "DuplicateTellError",
    "ReplayMismatchError",
    "InvalidValueError",
    "NotStoppingWarning",
    "STATE_FORMAT_VERSION",
]

STATE_FORMAT_VERSION = 1


class NotStoppingWarning(UserWarning):
    """A fixed-confidence policy has made many pulls without stopping (see :attr:`Policy.stall_warning_pulls`): its
    best arms may be tied, and a δ-correct policy can never tell tied arms apart."""


class PolicyError(ValueError):
    """A call that the policy's protocol does not allow; the policy is left unchanged."""


class UnknownPullError(PolicyError):
    """A tell or give-back for a pull id this policy never handed out."""


class DuplicateTellError(PolicyError):
    """A second tell (or a give-back) for a pull that is no longer outstanding."""


class InvalidValueError(PolicyError):
    """An observation that is not finite (or outside the declared reward range)."""


class ReplayMismatchError(PolicyError):
    """A replayed `ask` produced another pull than the recorded one."""


@dataclass(frozen=True, slots=True)
class Pull:
    """One evaluation handed out by a policy: pull `arm` at `fidelity` (0-based; `M − 1` is the
    highest). `id` is unique within a policy and identifies the pull in :meth:`Policy.tell`."""

    id: int
    arm: int
    fidelity: int


@dataclass(frozen=True)
class Recommendation:
    """What a policy answers.

    Attributes:
        arm: the recommended arm, or `None` when there is nothing to recommend (no data yet, or an
            infeasible constrained problem).
        certified: `True` only when the policy's stopping rule fired, i.e. the answer carries the
            policy's guarantee (e.g. correct with probability `≥ 1 − δ`).
        reason: why the policy stands where it is: `"identified"` (stopping rule fired),
            `"budget"` (cost cap reached), `"finished"` (a fixed schedule ended), `"exhausted"`,
            `"infeasible"`, or `"in-progress"`.
        cost: cost spent on told pulls (independent-pulls accounting).
        n_pulls: number of told pulls (extras included).
        delta: the confidence parameter, for δ-correct policies.
        mixture: for mixture-valued policies (SFSR), the recommended mixture object.
        details: policy-specific extras (JSON-safe).
    """

    arm: int | None
    certified: bool
    reason: str
    cost: float
    n_pulls: int
    delta: float | None = None
    mixture: Any = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        mix = self.mixture
        if mix is not None and hasattr(mix, "to_dict"):
            mix = mix.to_dict()
        return {
            "arm": self.arm,
            "certified": self.certified,
            "reason": self.reason,
            "cost": self.cost,
            "n_pulls": self.n_pulls,
            "delta": self.delta,
            "mixture": mix,
            "details": dict(self.details),
        }


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


def inherit_base_arguments(cls: type) -> None:
    """Give `cls.__init__` the signature it accepts when it ends in `**kwargs` passed to the base's.

    A subclass constructor `__init__(self, n_arms, ladder, *, own=..., **kwargs)` that forwards
    `**kwargs` to `super().__init__` accepts every keyword argument of the base constructor too. This
    sets its `__signature__` (what :func:`inspect.signature` reports) to its own arguments followed by
    the base's keyword arguments it does not list itself, and adds the base's (resolved) annotations, so
    that :func:`mf_sched.registry.build_policy`, the CLI and `help()` see the full list. A constructor
    without `**kwargs` is left alone. :class:`Policy` calls this for every subclass.

    >>> class _Demo(RoundPolicy):
    ...     def __init__(self, n_arms: int, ladder: FidelityLadder, *, width: int = 1, **kwargs: Any) -> None:
    ...         super().__init__(n_arms, ladder, **kwargs)
    >>> list(inspect.signature(_Demo.__init__).parameters)
    ['self', 'n_arms', 'ladder', 'width', 'noise', 'budget', 'seed']
    """
    init = cls.__dict__.get("__init__")
    if not inspect.isfunction(init):
        return
    sig = inspect.signature(init)
    own = list(sig.parameters.values())
    if not own or own[-1].kind is not inspect.Parameter.VAR_KEYWORD:
        return
    base_init = super(cls, cls).__init__  # type: ignore[misc]
    base = inspect.signature(base_init).parameters.values()
    names = {p.name for p in own}
    keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    inherited = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in base if p.kind in keyword and p.name not in names
    ]
    rest = [p for p in base if p.kind is inspect.Parameter.VAR_KEYWORD]  # the base forwards more still
    init.__signature__ = sig.replace(parameters=own[:-1] + inherited + rest)  # type: ignore[attr-defined]
    try:
        hints = typing.get_type_hints(base_init)
    except Exception:  # pragma: no cover - an unresolvable annotation: the signature alone still lists it
        return
    annotations = dict(init.__annotations__)
    annotations.pop(own[-1].name, None)
    annotations.update({p.name: hints[p.name] for p in inherited if p.name in hints})
    init.__annotations__ = annotations


class Policy(abc.ABC):
    """Base class of every policy. See the module docstring for the protocol.

    Args:
        n_arms: number of arms `K ≥ 1` (arms are `0 .. K − 1`).
        ladder: the :class:`~mf_sched.ladder.FidelityLadder` (costs, ζ, optional γ and resources).
        noise: what the policy may assume about observations: :class:`~mf_sched.noise.SubGaussian`
            or :class:`~mf_sched.noise.Bounded` (default: rewards in [0, 1]).
        budget: optional cost cap (same units as λ). The policy never issues a pull that would take
            committed cost (told + outstanding) above it.
        seed: seed of the policy's own random generator (tie-breaking, sampling).

    Example (any registered policy works the same way):

        >>> from mf_sched import FidelityLadder, get_policy
        >>> ladder = FidelityLadder(costs=[1.0, 10.0], zeta=[0.2, 0.0])
        >>> policy = get_policy("se")(n_arms=3, ladder=ladder, delta=0.1, seed=0)
        >>> pull = policy.ask()
        >>> (pull.arm, pull.fidelity)
        (0, 1)
        >>> policy.tell(pull, 0.7)
        >>> policy.cost
        10.0
    """

    #: registry name, lowercase with hyphens (e.g. ``"iise-gamma"``); empty for abstract classes
    name: ClassVar[str] = ""
    #: the paper (and equation/algorithm) the policy implements
    paper: ClassVar[str] = ""
    #: ``"best-arm"`` (fixed confidence), ``"fixed-budget"``, ``"regret"`` or ``"mixture"``
    objective: ClassVar[str] = "best-arm"
    #: one-line description for ``mf-sched policies``
    summary: ClassVar[str] = ""
    #: True when every sample of (arm, fidelity) feeds the policy's estimates (UCB, LUCB): adopted
    #: pulls are then used like the policy's own; False for round-structured policies (SE, IISE)
    sample_agnostic: ClassVar[bool] = False
    #: names of subclass attributes that make up the policy's state (saved by state_dict)
    _state_attrs: ClassVar[tuple[str, ...]] = ()
    #: state arrays whose shape changes during a run (queues, survivor lists, growing data); every other
    #: state array must keep its shape when a saved state is loaded
    _variable_shape: ClassVar[tuple[str, ...]] = ()
    #: state fields that may be None in a saved state although they are not None now (fields that are None
    #: now may take any value)
    _optional_state: ClassVar[tuple[str, ...]] = ()
    #: number of components of one observation: 1 (a reward) for most policies; SFSR observes a reward
    #: and L costs per pull (``1 + L``). The first component is the reward that the noise model checks
    #: and the shared statistics (:attr:`counts`, :attr:`means`) record; the others must be finite.
    value_width: ClassVar[int] = 1
    #: False for policies that cannot be built for a generic finite-armed instance by
    #: :func:`mf_sched.sim.simulate.policy_for` (continuous domains, constrained mixtures); the generic
    #: protocol tests and the demo skip them
    finite_armed: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        inherit_base_arguments(cls)

    @classmethod
    def example_params(cls, instance: Any) -> dict[str, Any]:
        """Extra constructor arguments that make the policy runnable on `instance` in the generic
        protocol tests (e.g. prior bounds that EXPLORE-A/B require). Default: none."""
        return {}

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

    def __init__(
        self,
        n_arms: int,
        ladder: FidelityLadder,
        *,
        noise: NoiseModel | Mapping[str, Any] | None = None,
        budget: float | None = None,
        seed: int | None = None,
    ) -> None:
        self.n_arms = check_int("n_arms", n_arms, 1)
        if isinstance(ladder, Mapping):
            ladder = FidelityLadder.from_dict(ladder)
        if not isinstance(ladder, FidelityLadder):
            raise ValueError(f"ladder must be a FidelityLadder, got {type(ladder).__name__}")
        self.ladder = ladder
        self.noise: NoiseModel = Bounded(0.0, 1.0) if noise is None else noise_from_dict(noise)
        self.budget: float | None = check_real("budget", budget, gt=0.0, none_ok=True)
        if seed is not None:
            seed = check_int("seed", seed, 0)
        self.seed = seed
        self._rng = np.random.default_rng(seed)
        self._costs = np.asarray(ladder.costs, dtype=float)
        self._zeta = np.asarray(ladder.zeta, dtype=float)
        K, M = self.n_arms, ladder.M
        self._next_id = 0
        self._outstanding: dict[int, tuple[int, int, bool]] = {}
        self._given_back: set[int] = set()
        self._n_told = 0
        self._n_extra = 0
        self._cost = 0.0
        self._outstanding_cost = 0.0
        self._budget_blocked = False
        self._proposal: list[int] | None = None
        self._counts = np.zeros((K, M), dtype=np.int64)
        self._sums = np.zeros((K, M), dtype=float)
        self._sumsq = np.zeros((K, M), dtype=float)
        self._events: list[tuple[Any, ...]] | None = None
        self._config: dict[str, Any] = {}
        # NotStoppingWarning after this many told pulls (fixed-confidence policies only; see stall_warning_pulls)
        self._stall_at: float = max(100_000, 1_000 * K * M) if self.objective == "best-arm" else math.inf

    # ----------------------------------------------------------------------------- configuration
    def _set_config(self, **kwargs: Any) -> None:
        """Record the subclass's constructor arguments (JSON-safe) so the policy can be rebuilt."""
        self._config = dict(kwargs)

    def config(self) -> dict[str, Any]:
        """The constructor arguments, JSON-safe: `type(p)(**p.config())` rebuilds an equal policy."""
        base = {
            "n_arms": self.n_arms,
            "ladder": self.ladder.to_dict(),
            "noise": self.noise.to_dict(),
            "budget": self.budget,
            "seed": self.seed,
        }
        base.update(self._config)
        return base

    @property
    def M(self) -> int:
        """Number of fidelities."""
        return self.ladder.M

    @property
    def sigma(self) -> float:
        """Sub-Gaussian scale the policy assumes (`(b − a)/2` for bounded rewards)."""
        return float(self.noise.sigma)

    # ----------------------------------------------------------------------------- subclass hooks
    @abc.abstractmethod
    def _propose(self) -> tuple[int, int] | None:
        """The next (arm, fidelity) to hand out, or None to wait / when done. Must not commit it:
        :meth:`_on_issue` is called when the pull is actually issued."""

    def _on_issue(self, arm: int, fidelity: int) -> None:
        """The proposed pull was issued (mark it as pending in the subclass's bookkeeping)."""

    def _propose_batch(self, n: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Optional vectorised proposal of up to `n` pulls handed out together, without committing.
        Return None to fall back to repeated :meth:`_propose`."""
        return None

    def _on_issue_batch(self, arms: np.ndarray, fidelities: np.ndarray) -> None:
        for a, f in zip(arms.tolist(), fidelities.tolist()):
            self._on_issue(a, f)

    @abc.abstractmethod
    def _observe(self, arm: int, fidelity: int, value: float) -> None:
        """An issued (or claimed) pull came back with `value` (validated, finite)."""

    def _observe_batch(self, arms: np.ndarray, fidelities: np.ndarray, values: np.ndarray) -> None:
        rows = values.tolist() if values.ndim == 1 else list(values)
        for a, f, v in zip(arms.tolist(), fidelities.tolist(), rows):
            self._observe(a, f, v)

    def _observe_extra(self, arm: int, fidelity: int, value: float) -> None:
        """An adopted pull that filled no slot came back. Default: sample-agnostic policies use it like
        their own samples; others only keep it in the shared statistics (:attr:`counts`, :attr:`means`)."""
        if self.sample_agnostic:
            self._observe(arm, fidelity, value)

    def _on_give_back(self, arm: int, fidelity: int) -> None:
        """An issued pull failed; undo what :meth:`_on_issue` did so the work can be handed out again."""

    def _claim(self, arm: int, fidelity: int) -> bool:
        """An outside pull (arm, fidelity) was made. Return True if it takes the place of work the policy
        would hand out (and mark it issued); False to treat its result as an extra sample."""
        if self.sample_agnostic:
            self._on_issue(arm, fidelity)
            return True
        return False

    @abc.abstractmethod
    def _is_done(self) -> bool:
        """The policy's own rule says it has finished (not counting the budget)."""

    def _recommend(self) -> Recommendation:
        """Default: the arm with the best empirical mean at the highest fidelity that has data."""
        return self._empirical_recommendation(certified=False, reason=self._default_reason())

    def _describe(self) -> dict[str, Any]:
        """Policy-specific status for :meth:`describe`."""
        return {}

    # ----------------------------------------------------------------------------- a run that does not stop
    @property
    def stall_warning_pulls(self) -> int | None:
        """After how many told pulls a fixed-confidence policy that has not stopped warns (once) that it may never
        stop: :class:`NotStoppingWarning`, naming the arguments that make it stop.

        A δ-correct best-arm policy (`se`, `iise`, `lucb1`, `mf-grad`, ...) stops only once it has
        separated the best arm from every other one; when two arms have the same mean it never can, and the
        README's `while not policy.done` loop would run for ever. Default `max(100,000, 1,000·K·M)` pulls;
        no warning with a `budget`, an `epsilon > 0` or a policy's own finite schedule. Set it to None to
        silence the warning (the simulators do where they cap the run themselves).

        >>> import warnings
        >>> from mf_sched import FidelityLadder, get_policy
        >>> p = get_policy("se")(n_arms=2, ladder=FidelityLadder([1.0]), delta=0.05, seed=0)
        >>> p.stall_warning_pulls = 100
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     for _ in range(200):
        ...         p.tell(p.ask(), 0.5)       # two tied arms: SE cannot stop
        >>> p.done, len(caught), "(a tie)" in str(caught[0].message)
        (False, 1, True)
        """
        return None if self._stall_at == math.inf else int(self._stall_at)

    @stall_warning_pulls.setter
    def stall_warning_pulls(self, pulls: int | None) -> None:
        self._stall_at = math.inf if pulls is None else check_int("stall_warning_pulls", pulls, 1)

    @property
    def open_ended(self) -> bool:
        """True when nothing but the policy's stopping rule can end it: no `budget`, no `epsilon > 0` and no
        finite schedule of its own (`uniform(rounds=...)`). Such a fixed-confidence policy never stops on an
        instance whose best arms are tied."""
        eps = getattr(self, "epsilon", None)
        return self.budget is None and not (isinstance(eps, (int, float)) and eps > 0)

    def _warn_not_stopping(self) -> None:
        self._stall_at = math.inf  # once
        if not self.open_ended:
            return
        params = inspect.signature(type(self).__init__).parameters
        fix = (
            "pass epsilon=ε (it then stops with an ε-optimal arm) or budget=Λ (a cost cap)"
            if "epsilon" in params
            else "pass budget=Λ (a cost cap), or use a policy with an ε (iise, lucb1: epsilon=ε)"
        )
        best = self.recommendation().arm
        warnings.warn(
            f"policy {self.name!r} has made {self._n_told:,} pulls without stopping: a δ-correct policy stops only "
            "once it has told the best arm apart from every other, and if two arms have the same mean (a tie) it never "
            "can. "
            f"To make it stop, {fix}; or end the loop yourself: recommendation() is the best arm so far (arm {best}). "
            "policy.stall_warning_pulls = None silences this warning.",
            NotStoppingWarning,
            stacklevel=3,
        )

    # ----------------------------------------------------------------------------- public protocol
    @property
    def done(self) -> bool:
        """True when the policy will hand out nothing more and has no outstanding pulls.

        With a budget this looks ahead: it is True as soon as the next pull would exceed the budget
        (the proposal is cached, so asking `done` never changes what the policy does)."""
        if self._outstanding:
            return False
        if self._is_done() or self._budget_blocked:
            return True
        if self.budget is not None:
            prop = self._peek()
            if prop is not None and not self._affordable(self._costs[prop[1]]):
                self._budget_blocked = True
        return self._budget_blocked

    @property
    def finished_issuing(self) -> bool:
        """True when no further pull will be handed out (outstanding ones may still be pending)."""
        return self._is_done() or self._budget_blocked

    def _affordable(self, c: float) -> bool:
        return self.budget is None or self._cost + self._outstanding_cost + c <= self.budget * (1 + 1e-12)

    def _peek(self) -> tuple[int, int] | None:
        """The next proposal, computed once and cached until the state changes."""
        if self._proposal is None:
            prop = self._propose()
            self._proposal = [-1, -1] if prop is None else [int(prop[0]), int(prop[1])]
        return None if self._proposal[0] < 0 else (self._proposal[0], self._proposal[1])

    def ask(self) -> Pull | None:
        """The next pull to evaluate, or None while the policy waits for results (or is done)."""
        if self._is_done() or self._budget_blocked:
            return None
        if self._n_told >= self._stall_at:
            self._warn_not_stopping()
        prop = self._peek()
        if prop is None:
            return None
        arm, fid = prop
        c = self._costs[fid]
        if not self._affordable(c):
            self._budget_blocked = True
            return None
        self._proposal = None
        self._on_issue(arm, fid)
        pid = self._next_id
        self._next_id = pid + 1
        self._outstanding[pid] = (arm, fid, True)
        self._outstanding_cost += c
        if self._events is not None:
            self._events.append(("ask", arm, fid))
        return Pull(pid, arm, fid)

    def ask_batch(self, n: int | None = None) -> list[Pull]:
        """Up to `n` pulls (all available if None) that can be evaluated concurrently, in order."""
        if n is not None:
            n = check_int("n", n, 0)
        limit = n if n is not None else 1 << 62
        out: list[Pull] = []
        if limit == 0 or self._is_done() or self._budget_blocked:
            return out
        if self._n_told >= self._stall_at:
            self._warn_not_stopping()
        # a cached proposal (from `done`) must be handed out first: take the one-by-one path
        batch = None if self._proposal is not None else self._propose_batch(limit)
        if batch is None:
            while len(out) < limit:
                p = self.ask()
                if p is None:
                    break
                out.append(p)
            return out
        arms, fids = batch
        arms = np.asarray(arms, dtype=np.int64)[:limit]
        fids = np.asarray(fids, dtype=np.int64)[:limit]
        if arms.size == 0:
            return out
        c = self._costs[fids]
        if self.budget is not None:
            cum = self._cost + self._outstanding_cost + np.cumsum(c)
            ok = int(np.searchsorted(cum, self.budget * (1 + 1e-12), side="right"))
            if ok < arms.size:
                self._budget_blocked = True
                arms, fids, c = arms[:ok], fids[:ok], c[:ok]
            if arms.size == 0:
                return out
        self._proposal = None
        self._on_issue_batch(arms, fids)
        start = self._next_id
        ids = range(start, start + arms.size)
        self._next_id = start + arms.size
        al, fl = arms.tolist(), fids.tolist()
        self._outstanding.update(zip(ids, zip(al, fl, [True] * len(al))))
        self._outstanding_cost += float(c.sum())
        if self._events is not None:
            self._events.extend(("ask", a, f) for a, f in zip(al, fl))
        return [Pull(i, a, f) for i, a, f in zip(ids, al, fl)]

    def _resolve(self, pull: Pull | int) -> int:
        if isinstance(pull, Pull):
            pid = pull.id
            if isinstance(pid, bool) or not isinstance(pid, (int, np.integer)):
                raise UnknownPullError(f"pull {pull} has id {pid!r}, not an integer pull id")
            pid = int(pid)
            rec = self._outstanding.get(pid)
            if rec is not None and (rec[0] != pull.arm or rec[1] != pull.fidelity):
                raise UnknownPullError(
                    f"pull {pull} does not match outstanding pull {pid} (arm {rec[0]}, fidelity {rec[1]})"
                )
        elif isinstance(pull, (int, np.integer)) and not isinstance(pull, bool):
            pid = int(pull)
        else:
            raise UnknownPullError(f"expected a Pull or a pull id, got {pull!r}")
        if pid not in self._outstanding:
            if 0 <= pid < self._next_id:
                what = "given back" if pid in self._given_back else "already told"
                raise DuplicateTellError(f"pull {pid} is not outstanding: it was {what}")
            raise UnknownPullError(f"pull {pid} was never handed out by this policy (next id is {self._next_id})")
        return pid

    def _validate_value(self, value: Any, name: str) -> Any:
        """A validated observation: a float, or a float64 vector of :attr:`value_width` components."""
        try:
            if self.value_width == 1:
                return self.noise.validate(value, name=name)
            v = as_real_array(value, name)
            if v.shape != (self.value_width,):
                raise ValueError(f"{name} must have {self.value_width} components (reward, costs), got shape {v.shape}")
            self.noise.validate(v[0], name=f"{name}[0] (reward)")
            if not np.all(np.isfinite(v)):
                raise ValueError(f"{name} = {v.tolist()} is not finite; observations must be finite")
            return v
        except (TypeError, ValueError) as e:
            raise InvalidValueError(str(e)) from None

    def _validate_values(self, values: Any, n: int) -> np.ndarray:
        """Validated observations of `n` pulls: shape `(n,)`, or `(n, value_width)`."""
        try:
            if not isinstance(values, np.ndarray):
                try:
                    values = list(values)
                except TypeError:
                    raise ValueError(f"values must be a sequence of {n} observations, got {values!r}") from None
            vals = as_real_array(values, "values")
            if self.value_width == 1:
                vals = self.noise.validate_array(vals, name="values")
                ok = vals.ndim == 1 and vals.shape[0] == n
            else:
                ok = vals.ndim == 2 and vals.shape == (n, self.value_width)
                if ok:
                    self.noise.validate_array(vals[:, 0], name="values[:, 0] (rewards)")
                    if not np.all(np.isfinite(vals)):
                        raise ValueError("values must be finite")
        except (TypeError, ValueError) as e:
            raise InvalidValueError(str(e)) from None
        if not ok:
            raise PolicyError(f"got {n} pulls but values of shape {vals.shape}; they must match")
        return vals

    def tell(self, pull: Pull | int, value: Any) -> None:
        """Record the observation `value` of an outstanding pull (a :class:`Pull` or its id)."""
        pid = self._resolve(pull)
        v = self._validate_value(value, f"value of pull {pid}")
        arm, fid, claimed = self._outstanding.pop(pid)
        self._proposal = None
        self._record(arm, fid, v if self.value_width == 1 else float(v[0]))
        if claimed:
            self._observe(arm, fid, v)
        else:
            self._n_extra += 1
            self._observe_extra(arm, fid, v)
        if self._events is not None:
            self._events.append(("tell", pid, v if self.value_width == 1 else v.tolist()))

    def _record(self, arm: int, fid: int, v: float) -> None:
        c = self._costs[fid]
        self._n_told += 1
        self._cost += c
        self._outstanding_cost -= c
        self._counts[arm, fid] += 1
        self._sums[arm, fid] += v
        self._sumsq[arm, fid] += v * v

    def _record_totals(
        self, arms: Any, fidelity: int, counts: Any, sums: Any, sumsq: Any, cost: float | None = None
    ) -> None:
        """Record many results at once from their totals, without the per-pull protocol (for simulators'
        sufficient-statistics paths, e.g. :meth:`RoundPolicy.observe_round_totals`).

        `arms` indexes the arms (an index array or a slice), `counts` is their numbers of new results at
        `fidelity` (an array matching `arms` or one number for all), `sums` / `sumsq` the sums of
        those rewards and of their squares; `cost` is what they cost in all (default: their number times
        the fidelity's cost). Only the base statistics change (counts, sums, sums of squares, cost, pulls
        told); the caller validates and updates its own statistics.
        """
        n = np.broadcast_to(counts, self._counts[arms, fidelity].shape)
        self._n_told += int(n.sum())
        self._cost += int(n.sum()) * float(self._costs[fidelity]) if cost is None else cost
        self._counts[arms, fidelity] += counts
        self._sums[arms, fidelity] += sums
        self._sumsq[arms, fidelity] += sumsq
        self._proposal = None

    def tell_batch(self, pulls: Sequence[Pull | int], values: Any) -> None:
        """Record several observations at once; all-or-nothing (validation happens before any change)."""
        if isinstance(pulls, (str, bytes, Pull)) or not isinstance(pulls, Iterable):
            raise UnknownPullError(f"pulls must be a sequence of Pull objects or pull ids, got {pulls!r}")
        pids = [self._resolve(p) for p in pulls]
        vals = self._validate_values(values, len(pids))
        rewards = vals if self.value_width == 1 else vals[:, 0]
        if len(set(pids)) != len(pids):
            raise DuplicateTellError("the same pull appears twice in one tell_batch")
        if not pids:
            return
        recs = [self._outstanding.pop(p) for p in pids]
        self._proposal = None
        arms = np.fromiter((r[0] for r in recs), dtype=np.int64, count=len(recs))
        fids = np.fromiter((r[1] for r in recs), dtype=np.int64, count=len(recs))
        claimed = np.fromiter((r[2] for r in recs), dtype=bool, count=len(recs))
        if len(pids) <= 32:  # np.add.at has a large fixed cost; small batches go element by element
            for a, f, v in zip(arms.tolist(), fids.tolist(), rewards.tolist()):
                self._record(a, f, v)
        else:
            self._n_told += len(pids)
            c = self._costs[fids]
            tot = float(c.sum())
            self._cost += tot
            self._outstanding_cost -= tot
            np.add.at(self._counts, (arms, fids), 1)
            np.add.at(self._sums, (arms, fids), rewards)
            np.add.at(self._sumsq, (arms, fids), rewards * rewards)
        if claimed.all():
            self._observe_batch(arms, fids, vals)
        else:
            if claimed.any():
                self._observe_batch(arms[claimed], fids[claimed], vals[claimed])
            extra = ~claimed
            for a, f, v in zip(arms[extra].tolist(), fids[extra].tolist(), list(vals[extra])):
                self._n_extra += 1
                self._observe_extra(a, f, float(v) if self.value_width == 1 else v)
        if self._events is not None:
            self._events.extend(("tell", p, v) for p, v in zip(pids, vals.tolist()))

    def give_back(self, pull: Pull | int) -> None:
        """Return a pull whose evaluation failed: it is no longer outstanding and costs nothing; the
        policy will hand the work out again if it still needs it."""
        pid = self._resolve(pull)
        arm, fid, claimed = self._outstanding.pop(pid)
        self._proposal = None
        self._given_back.add(pid)
        self._outstanding_cost -= self._costs[fid]
        self._budget_blocked = False
        if claimed:
            self._on_give_back(arm, fid)
        if self._events is not None:
            self._events.append(("give_back", pid))

    def adopt(self, arm: int, fidelity: int) -> Pull:
        """Register a pull made outside the policy (see the module docstring) and return it as an
        outstanding :class:`Pull` to :meth:`tell` or :meth:`give_back` later."""
        arm = check_int("arm", arm, 0, self.n_arms - 1)
        fidelity = check_int("fidelity", fidelity, 0, self.M - 1)
        self._proposal = None
        claimed = bool(self._claim(arm, fidelity))
        pid = self._next_id
        self._next_id = pid + 1
        self._outstanding[pid] = (arm, fidelity, claimed)
        self._outstanding_cost += self._costs[fidelity]
        if self._events is not None:
            self._events.append(("adopt", arm, fidelity))
        return Pull(pid, arm, fidelity)

    def recommendation(self) -> Recommendation:
        """The policy's current answer (see :class:`Recommendation`); available at any time."""
        return self._recommend()

    # ----------------------------------------------------------------------------- statistics
    @property
    def outstanding(self) -> tuple[Pull, ...]:
        """Pulls handed out (or adopted) and not yet told or given back, in id order."""
        return tuple(Pull(i, a, f) for i, (a, f, _) in sorted(self._outstanding.items()))

    @property
    def cost(self) -> float:
        """Total λ-cost of told pulls."""
        return float(self._cost)

    @property
    def committed_cost(self) -> float:
        """Cost of told plus outstanding pulls (what the budget is checked against)."""
        return float(self._cost + self._outstanding_cost)

    @property
    def n_pulls(self) -> int:
        """Number of told pulls (extras included)."""
        return self._n_told

    @property
    def counts(self) -> np.ndarray:
        """Told pulls per (arm, fidelity), all samples included (read-only copy)."""
        return self._counts.copy()

    @property
    def means(self) -> np.ndarray:
        """Empirical mean per (arm, fidelity) over all told samples; NaN where there is none."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self._counts > 0, self._sums / np.maximum(self._counts, 1), np.nan)

    def describe(self) -> dict[str, Any]:
        """A JSON-safe status summary (used by `debug_string` in the Ray adapter)."""
        d = {
            "policy": self.name,
            "done": self.done,
            "cost": self.cost,
            "n_pulls": self.n_pulls,
            "outstanding": len(self._outstanding),
            "budget": self.budget,
        }
        d.update(self._describe())
        return d

    def _default_reason(self) -> str:
        if self._budget_blocked and not self._is_done():
            return "budget"
        return "in-progress" if not self._is_done() else "finished"

    def _empirical_recommendation(
        self, *, certified: bool, reason: str, arms: Any = None, **details: Any
    ) -> Recommendation:
        """Best empirical mean at the highest fidelity that has data among `arms` (default: all)."""
        candidates = np.arange(self.n_arms) if arms is None else np.asarray(arms, dtype=np.int64)
        best: int | None = None
        if candidates.size:
            cnt = self._counts[candidates]
            has = cnt > 0
            if has.any():
                m = int(np.flatnonzero(has.any(axis=0))[-1])
                sub = cnt[:, m] > 0
                mu = self._sums[candidates[sub], m] / cnt[sub, m]
                best = int(candidates[sub][int(np.argmax(mu))])
            elif candidates.size == 1:
                best = int(candidates[0])
        return self._answer(best, certified=certified, reason=reason, details=details)

    def _answer(
        self,
        arm: Any,
        *,
        certified: bool = False,
        reason: str | None = None,
        details: Mapping[str, Any] | None = None,
        mixture: Any = None,
    ) -> Recommendation:
        """The :class:`Recommendation` for `arm` (`None`: no answer yet), with this policy's cost,
        pull count and confidence filled in. The one way a policy builds its answer.

        Args:
            arm: the recommended arm, or `None`.
            certified: `True` only when the stopping rule fired (the answer carries the guarantee).
            reason: see :attr:`Recommendation.reason`; default `"identified"` for a certified answer,
                else :meth:`_default_reason` (`"in-progress"`, `"budget"` or `"finished"`).
            details: policy-specific extras (JSON-safe); default none.
            mixture: the recommended mixture (mixture-valued policies).

        `delta` is the policy's `delta` attribute when it is a number (δ-correct policies), else `None`.

        >>> from mf_sched import FidelityLadder, get_policy
        >>> p = get_policy("se")(n_arms=2, ladder=FidelityLadder([1.0]), delta=0.1)
        >>> rec = p._answer(1, certified=True, details={"rounds": 3})
        >>> (rec.arm, rec.certified, rec.reason, rec.delta, rec.cost, dict(rec.details))
        (1, True, 'identified', 0.1, 0.0, {'rounds': 3})
        """
        if reason is None:
            reason = "identified" if certified else self._default_reason()
        delta = getattr(self, "delta", None)
        return Recommendation(
            arm=None if arm is None else int(arm),
            certified=bool(certified),
            reason=reason,
            cost=self.cost,
            n_pulls=self.n_pulls,
            delta=delta if isinstance(delta, float) else None,
            mixture=mixture,
            details={} if details is None else details,
        )

    # ----------------------------------------------------------------------------- save / restore
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
        names the problem and the policy is left exactly as it was."""
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
    def from_config(cls, config: Mapping[str, Any]) -> Policy:
        """Build a fresh policy from :meth:`config` output."""
        cfg = dict(config)
        cfg["ladder"] = FidelityLadder.from_dict(cfg["ladder"])
        cfg["noise"] = noise_from_dict(cfg["noise"])
        return cls(**cfg)

    @classmethod
    def from_state_dict(cls, state: Mapping[str, Any]) -> Policy:
        """Rebuild a policy from :meth:`state_dict` output.

        `Policy.from_state_dict(state)` rebuilds whichever registered policy saved `state`; called on a
        policy class (`get_policy("iise").from_state_dict(state)`) it also checks that `state` was saved by that
        policy, and raises :class:`~mf_sched._serialize.StateFormatError` naming both otherwise (a state saved by
        `se` is not silently returned as a SuccessiveElimination when an IISE was asked for).

        >>> from mf_sched import FidelityLadder, get_policy
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
        """Start (or stop) recording the event history returned by :attr:`history`."""
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
        :class:`ReplayMismatchError`, which names the event)."""
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

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_arms={self.n_arms}, M={self.M}, cost={self.cost:.6g}, done={self.done})"


class RoundPolicy(Policy):
    """Base for policies that hand out a *round* of pulls, wait for all of them, then decide.

    Subclasses implement :meth:`_next_round` (the next round's (arms, fidelities), or None when they
    have finished) and :meth:`_observe_round` (accumulate one round's results); :meth:`_round_complete`
    runs when a round's last result arrives. With `W` parallel workers a whole round is handed out at
    once and the next round waits for every outstanding pull of the current one (a barrier).

    Adopted pulls that match unissued work of the current round fill that slot; other adopted pulls
    are extras. Given-back pulls are queued again, ahead of the rest of the round.
    """

    _ROUND_STATE: ClassVar[tuple[str, ...]] = ("_q_arms", "_q_fids", "_q_pos", "_q_pending", "_finished", "_round")
    _variable_shape: ClassVar[tuple[str, ...]] = ("_q_arms", "_q_fids")

    def __init__(self, n_arms: int, ladder: FidelityLadder, **kwargs: Any) -> None:
        super().__init__(n_arms, ladder, **kwargs)
        self._q_arms = np.zeros(0, dtype=np.int64)
        self._q_fids = np.zeros(0, dtype=np.int64)
        self._q_pos = 0
        self._q_pending = 0
        self._finished = False
        self._round = 0

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = tuple(a for a in getattr(cls, "_state_attrs", ()) if a not in RoundPolicy._ROUND_STATE)
        cls._state_attrs = RoundPolicy._ROUND_STATE + tuple(dict.fromkeys(own))

    def _validate_state(self, sub: dict[str, Any]) -> None:
        qa, qf, pos, pending = sub["_q_arms"], sub["_q_fids"], sub["_q_pos"], sub["_q_pending"]
        if qa.shape != qf.shape or qa.ndim != 1:
            raise _serialize.StateFormatError("state round queue: arms and fidelities must be vectors of one length")
        if qa.size and (qa.min() < 0 or qa.max() >= self.n_arms or qf.min() < 0 or qf.max() >= self.M):
            raise _serialize.StateFormatError("state round queue holds an arm or a fidelity out of range")
        if not (0 <= pos <= qa.size and 0 <= pending <= pos):
            raise _serialize.StateFormatError(
                f"state round position {pos} / pending {pending} is out of range for a round of {qa.size} pulls"
            )
        for name in ("_round", "_t"):  # round counters (``_t``: rounds so far, in the phase or in all)
            if name in sub:
                _state_int(sub, name, 0)

    def _start(self) -> None:
        """Call at the end of the subclass constructor to build the first round."""
        self._advance()

    @abc.abstractmethod
    def _next_round(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(arms, fidelities) of the next round (non-empty), or None when the policy has finished."""

    @abc.abstractmethod
    def _observe_round(self, arms: np.ndarray, fidelities: np.ndarray, values: np.ndarray) -> None:
        """Accumulate results of the current round (called once per tell or per batch)."""

    def _observe_round_one(self, arm: int, fidelity: int, value: float) -> None:
        """Scalar version of :meth:`_observe_round` (override for speed; default wraps arrays)."""
        self._observe_round(np.array([arm]), np.array([fidelity]), np.array([value]))

    def _round_complete(self) -> None:
        """Hook run when the current round's last result is in, before the next round is built."""

    def _advance(self) -> None:
        while True:
            if self._finished:
                return
            nxt = self._next_round()
            if nxt is None:
                self._finished = True
                self._q_arms = np.zeros(0, dtype=np.int64)
                self._q_fids = np.zeros(0, dtype=np.int64)
                self._q_pos = 0
                return
            arms, fids = (np.asarray(x, dtype=np.int64).ravel() for x in nxt)
            if arms.shape != fids.shape:
                raise RuntimeError("a round's arms and fidelities must have the same length")
            if arms.size == 0:
                raise RuntimeError(f"{type(self).__name__}._next_round returned an empty round")
            self._round += 1
            self._q_arms, self._q_fids, self._q_pos = arms, fids, 0
            return

    def _propose(self) -> tuple[int, int] | None:
        if self._q_pos < self._q_arms.size:
            return int(self._q_arms[self._q_pos]), int(self._q_fids[self._q_pos])
        return None

    def _on_issue(self, arm: int, fidelity: int) -> None:
        self._q_pos += 1
        self._q_pending += 1

    def _propose_batch(self, n: int) -> tuple[np.ndarray, np.ndarray] | None:
        end = min(self._q_arms.size, self._q_pos + n)
        return self._q_arms[self._q_pos : end], self._q_fids[self._q_pos : end]

    def _on_issue_batch(self, arms: np.ndarray, fidelities: np.ndarray) -> None:
        self._q_pos += arms.size
        self._q_pending += arms.size

    def _on_give_back(self, arm: int, fidelity: int) -> None:
        # put the work back just before the unissued part of the queue
        self._q_pending -= 1
        self._q_pos -= 1
        self._q_arms = self._q_arms.copy()
        self._q_fids = self._q_fids.copy()
        # the slot at _q_pos was issued; overwrite it with the given-back work (order within a round is free)
        self._q_arms[self._q_pos] = arm
        self._q_fids[self._q_pos] = fidelity

    def _claim(self, arm: int, fidelity: int) -> bool:
        if self._finished:
            return False
        rest_a = self._q_arms[self._q_pos :]
        rest_f = self._q_fids[self._q_pos :]
        hit = np.flatnonzero((rest_a == arm) & (rest_f == fidelity))
        if hit.size == 0:
            return False
        j = self._q_pos + int(hit[0])
        self._q_arms = self._q_arms.copy()
        self._q_fids = self._q_fids.copy()
        # swap the claimed slot to the front of the unissued part, then issue it
        self._q_arms[[self._q_pos, j]] = self._q_arms[[j, self._q_pos]]
        self._q_fids[[self._q_pos, j]] = self._q_fids[[j, self._q_pos]]
        self._on_issue(arm, fidelity)
        return True

    def _observe(self, arm: int, fidelity: int, value: float) -> None:
        self._observe_round_one(arm, fidelity, value)
        self._q_pending -= 1
        self._maybe_close_round()

    def _observe_batch(self, arms: np.ndarray, fidelities: np.ndarray, values: np.ndarray) -> None:
        if arms.size <= 32:
            rows = values.tolist() if values.ndim == 1 else list(values)
            for a, f, v in zip(arms.tolist(), fidelities.tolist(), rows):
                self._observe_round_one(a, f, v)
        else:
            self._observe_round(arms, fidelities, values)
        self._q_pending -= arms.size
        self._maybe_close_round()

    def _maybe_close_round(self) -> None:
        if self._q_pending == 0 and self._q_pos >= self._q_arms.size and not self._finished:
            self._round_complete()
            self._advance()

    # ------------------------------------------------------------------ sufficient-statistics hooks
    def _at_round_boundary(self) -> bool:
        """True when nothing of the current round has been handed out (nor anything else is outstanding)."""
        return not self._outstanding and self._q_pos == 0 and self._q_pending == 0

    def round_counts(self) -> np.ndarray:
        """Pulls of the current round not yet handed out, counted per arm (a fresh vector of length
        `n_arms`; all zeros once the policy has finished).

        With :meth:`observe_round_totals` this lets a simulator draw a whole round as per-arm totals.

        >>> from mf_sched import FidelityLadder
        >>> from mf_sched.policies.successive_halving import SuccessiveHalving
        >>> p = SuccessiveHalving(4, FidelityLadder([1.0, 3.0], [0.1, 0.0]), samples_per_rung=2)
        >>> p.round_counts().tolist()
        [2, 2, 2, 2]
        """
        return np.bincount(self._q_arms[self._q_pos :], minlength=self.n_arms)

    def observe_round_totals(self, counts: Any, sums: Any, sumsq: Any) -> None:
        """Complete the current round from per-arm totals instead of one `tell` per pull.

        For simulators' sufficient-statistics paths (e.g. :func:`mf_sched.constrained.runner.run_constrained`
        with `fast=True`): `counts` must equal :meth:`round_counts` (the unissued part of the round, all
        at one fidelity; nothing may be outstanding), `sums[a]` is the sum of arm `a`'s observations in
        the round (a vector per arm for vector observations, `value_width > 1`) and `sumsq[a]` the sum
        of its squared rewards. The policy then ends in the state the per-pull protocol would give for
        pulls with these totals — for policies whose round decisions depend on a round's results only
        through per-arm totals; those policies implement :meth:`_observe_round_totals` (others raise
        :class:`PolicyError`). Not recorded in :attr:`history`.

        Raises :class:`PolicyError` (and changes nothing) when the policy has finished, a pull is
        outstanding, the rest of the round spans several fidelities, `counts`
        differ from :meth:`round_counts`, or history is being recorded.
        """
        if self._finished or self._outstanding:
            raise PolicyError("round totals can only complete a round with no pull outstanding")
        if self._events is not None:
            raise PolicyError("observe_round_totals cannot be used while history is being recorded")
        if type(self)._observe_round_totals is RoundPolicy._observe_round_totals:
            raise PolicyError(f"{self.name} cannot observe a round from per-arm totals")
        fids = self._q_fids[self._q_pos :]
        if fids.size and np.any(fids != fids[0]):
            raise PolicyError("observe_round_totals needs a round at one fidelity")
        counts = np.asarray(counts)
        if not np.array_equal(self.round_counts(), counts):
            raise PolicyError("counts do not match the current round (see round_counts)")
        sums, sumsq = np.asarray(sums, dtype=float), np.asarray(sumsq, dtype=float)
        self._record_totals(slice(None), int(fids[0]), counts, sums if sums.ndim == 1 else sums[:, 0], sumsq)
        self._observe_round_totals(counts, sums)
        self._q_pos = self._q_arms.size
        self._q_pending = 0
        self._maybe_close_round()

    def _observe_round_totals(self, counts: np.ndarray, sums: np.ndarray) -> None:
        """Accumulate a whole round from per-arm `counts` and observation `sums` (the subclass's own
        statistics; the base ones are already updated). Override to support :meth:`observe_round_totals`."""
        raise NotImplementedError

    def _count_rounds(self, n: int, *, requeue: bool) -> None:
        """Count `n` whole rounds that a subclass recorded from totals (copies of the queued round, e.g.
        :meth:`mf_sched.policies.iise.IISE.record_rounds`); `requeue`: the subclass's decisions changed
        its next round, so the queued round is replaced by a freshly built one."""
        self._round += n
        if requeue:
            self._round -= 1
            self._advance()

    def _observe_extra(self, arm: int, fidelity: int, value: float) -> None:
        """Extras never count towards a round; policies that read the shared statistics
        (:attr:`_counts`, :attr:`_sums`) see them there automatically."""

    def _is_done(self) -> bool:
        return self._finished

    def _describe(self) -> dict[str, Any]:
        return {"round": self._round, "round_remaining": int(self._q_arms.size - self._q_pos)}


class ArmSumRoundPolicy(RoundPolicy):
    """A :class:`RoundPolicy` that sums each arm's results of the current round(s) into `self._rsum` (a
    length-`K` float vector the subclass creates and resets), as elimination and halving rules do."""

    def _observe_round(self, arms: np.ndarray, fidelities: np.ndarray, values: np.ndarray) -> None:
        np.add.at(self._rsum, arms, values)

    def _observe_round_one(self, arm: int, fidelity: int, value: float) -> None:
        self._rsum[arm] += value


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


def active_mask_summary(active: np.ndarray) -> dict[str, Any]:
    """Small helper for describe(): number of active arms and, when few, their indices."""
    idx = np.flatnonzero(active)
    return {"n_active": int(idx.size), "active": idx.tolist() if idx.size <= 10 else None}


def iter_pulls(pulls: Iterable[Pull]) -> Iterator[tuple[int, int, int]]:
    """(id, arm, fidelity) tuples, for adapters that serialise pulls."""
    for p in pulls:
        yield p.id, p.arm, p.fidelity


def argmax_random(values: np.ndarray, rng: np.random.Generator, *, atol: float = 0.0) -> int:
    """Index of the maximum of `values`, ties (within `atol`) broken uniformly at random.

    Deterministic-by-index tie-breaking biases results on instances listed best-first (Wang et al. 2023
    put the best arm first by convention), so every policy breaks ties with its own seeded generator.

    >>> argmax_random(np.array([1.0, 3.0, 2.0]), np.random.default_rng(0))
    1
    """
    v = np.asarray(values, dtype=float)
    if v.size <= 32:  # small arrays (the common case: fidelities, LUCB's arms): plain Python is ~5x faster
        xs = v.ravel().tolist()
        m = max(xs)
        if m == m:  # no NaN: same ties, same generator draws as the vectorised path below
            lo = m - atol if math.isfinite(m) else m
            small = [i for i, x in enumerate(xs) if x >= lo]
            return small[0] if len(small) == 1 else small[int(rng.integers(len(small)))]
    m = np.max(v)
    ties = np.flatnonzero(v >= m - atol) if np.isfinite(m) else np.flatnonzero(v == m)
    if ties.size == 1:
        return int(ties[0])
    return int(ties[rng.integers(ties.size)])


def top_k_random(values: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of the `k` largest values, ties broken uniformly at random (sorted best first)."""
    v = np.asarray(values, dtype=float)
    order = np.lexsort((rng.random(v.size), -v))
    return order[:k]
