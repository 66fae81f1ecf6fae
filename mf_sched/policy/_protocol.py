"""The ask/tell protocol: :class:`Pull` (one evaluation handed out) and :class:`Policy`, the base class of every
policy (see :mod:`mf_sched.policy` for the protocol as a whole).

`Policy` holds the bookkeeping every policy shares (pulls handed out and outstanding, results told, cost and
budget, the per-(arm, fidelity) statistics) and calls the hooks a subclass implements to decide. Its two bases
hold the rest: `PolicyHooks` (`mf_sched/policy/_hooks.py`: the hooks with their defaults and the answer builder)
and `PolicyPersistence` (`mf_sched/policy/_persistence.py`: saving, restoring and replaying). Round-structured
policies start from :class:`~mf_sched.policy.RoundPolicy`.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from mf_sched._validate import check_int, check_real
from mf_sched.ladder import FidelityLadder
from mf_sched.noise import Bounded, NoiseModel, as_real_array, noise_from_dict
from mf_sched.policy._errors import (
    DuplicateTellError,
    InvalidValueError,
    NotStoppingWarning,
    PolicyError,
    UnknownPullError,
)
from mf_sched.policy._hooks import PolicyHooks, inherit_base_arguments
from mf_sched.policy._persistence import PolicyPersistence
from mf_sched.policy._recommendation import Recommendation

__all__ = ["Pull", "Policy"]


@dataclass(frozen=True, slots=True)
class Pull:
    """One evaluation handed out by a policy: pull `arm` at `fidelity` (0-based; `M − 1` is the
    highest). `id` is unique within a policy and identifies the pull in :meth:`Policy.tell`.

    Attributes:
        id: the pull's number within its policy (0, 1, 2, ... in the order pulls were handed out or adopted);
            :meth:`Policy.tell`, :meth:`Policy.give_back` and the saved state refer to the pull by it.
        arm: the arm to evaluate, in `0 .. K − 1`.
        fidelity: the fidelity to evaluate it at, in `0 .. M − 1` (its cost is the ladder's `costs[fidelity]`).
    """

    id: int
    arm: int
    fidelity: int


class Policy(PolicyPersistence, PolicyHooks):
    """Base class of every policy. See :mod:`mf_sched.policy` for the protocol and for writing a policy (the hooks a
    subclass implements are in `mf_sched/policy/_hooks.py`, the state it lists in `_state_attrs` is saved by
    :meth:`state_dict`).

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
        protocol tests (e.g. prior bounds that EXPLORE-A/B require). Default: none.

        Args:
            instance: the finite-armed problem the policy will run on (a :class:`~mf_sched.sim.instance.Instance`:
                its true means, ladder and noise), from which the extra arguments are derived.
        """
        return {}

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
        """Up to `n` pulls (all available if None) that can be evaluated concurrently, in order.

        Args:
            n: the most pulls to hand out (an integer `≥ 0`; 0 gives an empty list); `None` for every pull the
                policy can hand out now (a round policy: the rest of its round). Fewer come back when the policy
                must wait for results or the budget would be exceeded.
        """
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
        """Record the observation `value` of an outstanding pull (a :class:`Pull` or its id).

        Args:
            pull: an outstanding pull, as :meth:`ask`, :meth:`ask_batch` or :meth:`adopt` returned it, or its `id`.
            value: what its evaluation observed: a finite reward (inside the noise model's range, e.g. `[0, 1]`
                for the default `Bounded(0, 1)`), or for vector observations (`value_width > 1`, e.g. SFSR) the
                reward followed by the costs.
        """
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
        """Record several observations at once; all-or-nothing (validation happens before any change).

        Args:
            pulls: outstanding pulls (or their ids), each at most once.
            values: one observation per pull, in the same order (a sequence or an array of shape `(n,)`, or
                `(n, value_width)` for vector observations); each as in :meth:`tell`.
        """
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
        policy will hand the work out again if it still needs it.

        Args:
            pull: an outstanding pull (or its id); its id is never handed out again.
        """
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
        """Register a pull made outside the policy (see :mod:`mf_sched.policy`) and return it as an
        outstanding :class:`Pull` to :meth:`tell` or :meth:`give_back` later.

        Args:
            arm: the arm that was (or is being) evaluated, in `0 .. K − 1`.
            fidelity: the fidelity it was evaluated at, in `0 .. M − 1`. Its cost counts against the budget
                from now on, even when the policy would not have chosen it.
        """
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

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_arms={self.n_arms}, M={self.M}, cost={self.cost:.6g}, done={self.done})"
