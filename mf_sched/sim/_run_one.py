"""One simulated run of a policy (see :mod:`mf_sched.sim.simulate`, which re-exports everything here)."""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mf_sched._validate import check_optional_int
from mf_sched.policy import NotStoppingWarning, Policy, Recommendation
from mf_sched.registry import build_policy
from mf_sched.sim.instance import Instance


class PolicyStalledError(RuntimeError):
    """The policy is not done, has nothing outstanding and hands out nothing: a protocol violation."""


class ResumableMeter:
    """Cost of the *resumable runs* semantics: per arm, replicas advancing through fidelities.

    Args:
        ladder: the fidelity ladder whose costs `λ(m)` are charged (anything with a `costs` sequence).

    >>> from mf_sched import FidelityLadder
    >>> meter = ResumableMeter(FidelityLadder([1, 3, 9], [0.2, 0.1, 0.0]))
    >>> [meter.charge(0, m) for m in (0, 1, 2, 0)]   # one run advanced 0→1→2, then a new replica
    [1.0, 2.0, 6.0, 1.0]
    """

    def __init__(self, ladder: Any) -> None:
        self.costs = np.asarray(ladder.costs, dtype=float)
        self.replicas: dict[int, list[int]] = {}
        self.total = 0.0

    def charge(self, arm: int, m: int) -> float:
        reps = self.replicas.setdefault(arm, [])
        best = -1
        best_level = -1
        for i, level in enumerate(reps):
            if best_level < level < m:
                best, best_level = i, level
        if best < 0:
            reps.append(m)
            c = float(self.costs[m])
        else:
            reps[best] = m
            c = float(self.costs[m] - self.costs[best_level])
        self.total += c
        return c


@dataclass
class RunResult:
    """Outcome of one simulated run.

    Attributes:
        policy: the policy's registered name.
        seed: the run's index among :func:`run_many`'s seeds; `None` for a single :func:`run_policy` call.
        cost: the λ-cost of the pulls the policy was told (independent-pulls accounting).
        n_pulls: the number of pulls the policy was told.
        recommendation: the policy's recommendation at the end of the run.
        correct: whether the recommended arm is right (:func:`is_correct` within :func:`tolerance`); `False`
            without a recommendation.
        stop_reason: why the run ended: `"done"` (the policy finished), `"budget"` (the next pull would exceed
            the budget, the runner's or the policy's) or `"max-pulls"` (the pull cap).
        simple_regret: the best true mean minus the recommended arm's true mean; NaN without a recommendation.
        regret_kandasamy: `Λ µ⋆ − Σ_t λ(m_t) µ_{I_t}` over the told pulls (Kandasamy et al. 2016, Eq. 1), with
            the capital `Λ` the runner's budget, else the policy's, else the cost spent.
        regret_wang: `(Λ/λ(1)) µ⋆ − Σ_t µ_{I_t}` over the told pulls (Wang et al. 2023, Eq. 9), same `Λ`.
        pulls_per_fidelity: the number of told pulls at each fidelity, `M` counts.
        resumable_cost: the cost under the *resumable runs* semantics (:class:`ResumableMeter`); `None` under
            `semantics="independent"`.
        wall_time: the run's wall-clock time, in seconds.
        trace: with `run_policy(..., trace=True)`: `(arms, fidelities)` of the pulls in the order they were
            issued (pulls the runner gave back are left out), for :func:`regret_curve`; `None` otherwise. Not part
            of :meth:`to_dict`.
    """

    policy: str
    seed: int | None
    cost: float
    n_pulls: int
    recommendation: Recommendation
    correct: bool
    stop_reason: str
    simple_regret: float
    regret_kandasamy: float
    regret_wang: float
    pulls_per_fidelity: list[int]
    resumable_cost: float | None = None
    wall_time: float = 0.0
    trace: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "seed": self.seed,
            "cost": self.cost,
            "n_pulls": self.n_pulls,
            "recommendation": self.recommendation.to_dict(),
            "correct": self.correct,
            "stop_reason": self.stop_reason,
            "simple_regret": self.simple_regret,
            "regret_kandasamy": self.regret_kandasamy,
            "regret_wang": self.regret_wang,
            "pulls_per_fidelity": self.pulls_per_fidelity,
            "resumable_cost": self.resumable_cost,
            "wall_time": self.wall_time,
        }


def tolerance(policy: Policy) -> float:
    """The gap within which an answer counts as correct: the policy's `epsilon` (its target is an
    `ε`-optimal arm, e.g. LUCB1 or IISE with `epsilon > 0`), else 0.

    Args:
        policy: the policy whose `epsilon` attribute is read (a number > 0 counts; anything else means 0).
    """
    eps = getattr(policy, "epsilon", None)
    return float(eps) if isinstance(eps, (int, float)) and not isinstance(eps, bool) and eps > 0 else 0.0


def is_correct(arm: int | None, instance: Instance, epsilon: float = 0.0) -> bool:
    """Whether recommending `arm` is right on `instance`: its true mean is within `epsilon` of the best
    one. With `epsilon = 0` every arm of a tie for the best is right (an instance with tied best arms has
    several correct answers, e.g. for Successive Halving), and only those.

    Args:
        arm: the recommended arm (`0 .. K − 1`), or `None` (never correct).
        instance: the instance whose true means decide.
        epsilon: the tolerance on the gap to the best true mean, `≥ 0` (0: only a best arm is correct).

    >>> from mf_sched.ladder import FidelityLadder
    >>> inst = Instance([[0.5], [0.7], [0.7]], FidelityLadder([1.0]), {"kind": "bernoulli"})
    >>> [is_correct(a, inst) for a in (0, 1, 2, None)], is_correct(0, inst, epsilon=0.25)
    ([False, True, True, False], True)
    """
    if arm is None:
        return False
    true = instance.true_means
    return bool(true[arm] >= float(true.max()) - epsilon)


def _check_workers(workers: int | None) -> int:
    if workers is None:
        return 1 << 62
    return check_optional_int("workers", workers, none="unlimited")  # type: ignore[return-value]


def check_stopping(policy: Policy, instance: Instance, *, capped: bool) -> None:
    """What a simulator does about a run that may never stop, before it starts: it knows the instance, so the
    policy's own :class:`~mf_sched.policy.NotStoppingWarning` (a guess from its pull count) is turned off, and a
    fixed-confidence policy that nothing but its stopping rule can end (:attr:`~mf_sched.policy.Policy.open_ended`)
    on an instance whose best arms are tied gets that warning at once, unless the run is `capped` (a
    budget or a pull cap).

    Args:
        policy: the policy about to run; its `stall_warning_pulls` is set to `None`.
        instance: the instance it runs on.
        capped: whether a budget or a pull cap will end the run anyway (then no warning).

    >>> import warnings
    >>> from mf_sched import FidelityLadder
    >>> inst = Instance([[0.7], [0.7], [0.2]], FidelityLadder([1.0]), {"kind": "bernoulli"})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     check_stopping(policy_for("se", inst, delta=0.1), inst, capped=False)
    >>> str(caught[0].message)[:44]
    'arms [0, 1] tie for the best true mean 0.7: '
    """
    policy.stall_warning_pulls = None
    if capped or policy.objective != "best-arm" or instance.has_unique_best or not policy.open_ended:
        return
    true = instance.true_means
    tied = [int(a) for a in np.flatnonzero(true == true.max())]
    warnings.warn(
        f"arms {tied} tie for the best true mean {float(true.max()):.6g}: policy {policy.name!r} cannot tell them "
        "apart and will never stop; pass max_pulls= or budget= (or epsilon=ε to a policy that takes it)",
        NotStoppingWarning,
        stacklevel=3,
    )


def run_policy(
    policy: Policy,
    instance: Instance,
    *,
    budget: float | None = None,
    workers: int | None = 1,
    completion: str = "random",
    semantics: str = "independent",
    seed: int | np.random.SeedSequence | None = None,
    max_pulls: int | None = None,
    trace: bool = False,
) -> RunResult:
    """Play `policy` on `instance` until it is done, the budget is spent, or `max_pulls` pulls.

    Args:
        policy: a fresh policy for `instance`'s arms and fidelities (see :func:`policy_for`); it is played in
            place.
        instance: the simulated instance the observations are drawn from.
        budget: the cost cap of the run (finite, > 0): no pull is issued that would take the committed cost
            above it; `None`: the policy's own budget, if any, is all there is.
        workers: how many pulls may be outstanding at once, `≥ 1`; `None`: as many as the policy hands out.
        completion: `"random"` (one outstanding pull completes at a time, chosen uniformly) or `"batch"` (all
            outstanding pulls complete together); see the module docstring.
        semantics: `"independent"` (every pull a fresh sample) or `"resumable"` (also meter the cost of
            resumable runs, :attr:`RunResult.resumable_cost`).
        seed: seeds the observations and the completion order (`None`: fresh entropy); the policy has its own.
        max_pulls: the most pulls to issue, `≥ 1`; `None`: no cap.
        trace: keep the issued pulls in issue order (:attr:`RunResult.trace`).

    Example:
        >>> from mf_sched import policy_for
        >>> from mf_sched.sim.instance import Instance
        >>> from mf_sched.ladder import FidelityLadder
        >>> inst = Instance([[0.4, 0.5], [0.5, 0.9]], FidelityLadder([0.5, 5.0], [0.45, 0.0]),
        ...                 {"kind": "gaussian", "sigma": 0.1})
        >>> res = run_policy(policy_for("se", inst, delta=0.05, seed=0), inst, seed=1)
        >>> res.correct, res.stop_reason
        (True, 'done')
    """
    if policy.n_arms != instance.K or policy.M != instance.M:
        raise ValueError(
            f"policy is for {policy.n_arms} arms × {policy.M} fidelities "
            f"but the instance has {instance.K} × {instance.M}"
        )
    if completion not in ("random", "batch"):
        raise ValueError(f"completion = {completion!r} is unknown; accepted: 'random', 'batch'")
    if semantics not in ("independent", "resumable"):
        raise ValueError(f"semantics = {semantics!r} is unknown; accepted: 'independent', 'resumable'")
    if budget is not None and not (math.isfinite(budget) and budget > 0):
        raise ValueError(f"budget = {budget} is out of range; accepted: a finite number > 0, or None")
    check_optional_int("max_pulls", max_pulls)
    if budget is None and policy.budget is None and max_pulls is None and policy.objective == "regret":
        raise ValueError(f"policy {policy.name!r} never stops by itself: give a budget (the capital Λ)")
    check_stopping(policy, instance, capped=budget is not None or max_pulls is not None)
    W = _check_workers(workers)
    rng = np.random.default_rng(seed)
    sampler = instance.sampler(rng, semantics=semantics)
    costs = np.asarray(instance.ladder.costs, dtype=float)
    meter = ResumableMeter(instance.ladder) if semantics == "resumable" else None
    outstanding: list[Any] = []
    stop_reason: str | None = None
    issued = 0
    trace_arms: list[int] = []
    trace_fids: list[int] = []
    t0 = time.perf_counter()

    def complete(pulls: list[Any]) -> None:
        if len(pulls) == 1:
            p = pulls[0]
            policy.tell(p, sampler.draw_one(p.arm, p.fidelity))
            if meter is not None:
                meter.charge(p.arm, p.fidelity)
            return
        arms = np.fromiter((p.arm for p in pulls), dtype=np.int64, count=len(pulls))
        fids = np.fromiter((p.fidelity for p in pulls), dtype=np.int64, count=len(pulls))
        policy.tell_batch(pulls, sampler.draw(arms, fids))
        if meter is not None:
            for a, f in zip(arms.tolist(), fids.tolist()):
                meter.charge(a, f)

    while True:
        free = W - len(outstanding)
        if free > 0 and stop_reason is None:
            if max_pulls is not None:
                free = min(free, max_pulls - issued)
            new = policy.ask_batch(free) if free > 0 else []
            if budget is not None and new:
                c = np.cumsum(costs[[p.fidelity for p in new]])
                room = budget * (1 + 1e-12) - policy.committed_cost + float(c[-1])
                ok = int(np.searchsorted(c, room, side="right"))
                if ok < len(new):
                    for p in new[ok:]:
                        policy.give_back(p)
                    new = new[:ok]
                    stop_reason = "budget"
            issued += len(new)
            outstanding.extend(new)
            if trace:
                trace_arms.extend(p.arm for p in new)
                trace_fids.extend(p.fidelity for p in new)
            if max_pulls is not None and issued >= max_pulls and stop_reason is None:
                stop_reason = "max-pulls"
        if not outstanding:
            if stop_reason is None:
                if policy.done:
                    stop_reason = "budget" if policy.recommendation().reason == "budget" else "done"
                else:
                    raise PolicyStalledError(
                        f"policy {policy.name!r} is not done but hands out nothing with no pull outstanding"
                    )
            break
        if completion == "batch" or W == 1 or len(outstanding) == 1:
            batch, outstanding = outstanding, []
            complete(batch)
        else:
            j = int(rng.integers(len(outstanding)))
            outstanding[j], outstanding[-1] = outstanding[-1], outstanding[j]
            complete([outstanding.pop()])

    rec = policy.recommendation()
    true = instance.true_means
    best = float(true.max())
    counts = policy.counts
    capital = budget if budget is not None else (policy.budget if policy.budget is not None else policy.cost)
    per_arm = counts.sum(axis=1)
    regret_k = capital * best - float((counts * costs[None, :]).sum(axis=1) @ true)
    regret_w = capital / costs[0] * best - float(per_arm @ true)
    correct = is_correct(rec.arm, instance, tolerance(policy))
    simple = best - float(true[rec.arm]) if rec.arm is not None else float("nan")
    return RunResult(
        policy=policy.name,
        seed=None,
        cost=policy.cost,
        n_pulls=policy.n_pulls,
        recommendation=rec,
        correct=correct,
        stop_reason=stop_reason,
        simple_regret=simple,
        regret_kandasamy=regret_k,
        regret_wang=regret_w,
        pulls_per_fidelity=counts.sum(axis=0).tolist(),
        resumable_cost=None if meter is None else meter.total,
        wall_time=time.perf_counter() - t0,
        trace=(np.array(trace_arms, dtype=np.int64), np.array(trace_fids, dtype=np.int64)) if trace else None,
    )


def regret_curve(instance: Instance, arms: Any, fidelities: Any, capitals: Any) -> dict[str, np.ndarray]:
    """Both cumulative pseudo-regrets of a play sequence at every capital in `capitals`.

    The plays `(arms[t], fidelities[t])` are taken in order; at capital `Λ` the first `N(Λ)` of them
    count, `N(Λ) = max{n : Σ_{t≤n} λ(m_t) ≤ Λ}` (Kandasamy et al. 2016 §2, Wang et al. 2023 §4). With
    `µ⋆` the best true mean and `µ_k` arm k's true (highest-fidelity) mean:

    * `"kandasamy"`: `Λ µ⋆ − Σ_{t≤N} λ(m_t) µ_{I_t}` (Kandasamy et al. 2016, Eq. 1);
    * `"wang"`: `(Λ/λ(1)) µ⋆ − Σ_{t≤N} µ_{I_t}` (Wang et al. 2023, Eq. 9);
    * `"plays"` (`N(Λ)`) and `"cost"` (`Σ_{t≤N} λ(m_t)`).

    For a policy that does not use its capital (MF-UCB, UCB1: anytime) one run to `Λ_max` gives the
    curve for every `Λ ≤ Λ_max` (truncate the play sequence at `N(Λ)`, the largest `n` with
    `Σ_{t≤n} λ(m_t) ≤ Λ`, Kandasamy et al. 2016, §2); a policy whose decisions depend on `Λ`
    (Wang's Elimination) needs one run per capital. At the run's own budget the values equal
    :attr:`RunResult.regret_kandasamy` and :attr:`RunResult.regret_wang`.

    Args:
        instance: the instance whose true means and costs define the regrets.
        arms: the arm of each play, in play order (integers in `0 .. K − 1`).
        fidelities: the fidelity of each play (integers in `0 .. M − 1`), as many as `arms`.
        capitals: the capitals `Λ` to evaluate at, finite and `≥ 0` (in units of the ladder's costs).

    >>> from mf_sched.ladder import FidelityLadder
    >>> inst = Instance([[0.2, 0.4], [0.6, 0.8]], FidelityLadder([1.0, 10.0], [0.2, 0.0]), {"kind": "bernoulli"})
    >>> c = regret_curve(inst, [0, 1, 1], [0, 1, 0], [1, 11, 12, 100])
    >>> c["plays"].tolist(), np.round(c["kandasamy"], 6).tolist(), np.round(c["wang"], 6).tolist()
    ([1, 2, 3, 3], [0.4, 0.4, 0.4, 70.8], [0.4, 7.6, 7.6, 78.0])
    """
    a = np.asarray(arms, dtype=np.int64).ravel()
    f = np.asarray(fidelities, dtype=np.int64).ravel()
    if a.shape != f.shape:
        raise ValueError(f"arms and fidelities must have the same length, got {a.size} and {f.size}")
    if a.size and (a.min() < 0 or a.max() >= instance.K or f.min() < 0 or f.max() >= instance.M):
        raise ValueError(f"arms must lie in 0..{instance.K - 1} and fidelities in 0..{instance.M - 1}")
    cap = np.asarray(capitals, dtype=float)
    if cap.size and not (np.all(np.isfinite(cap)) and cap.min() >= 0):
        raise ValueError("capitals must be finite numbers >= 0")
    costs = np.asarray(instance.ladder.costs, dtype=float)
    true = instance.true_means
    best = float(true.max())
    cum_cost = np.concatenate(([0.0], np.cumsum(costs[f])))
    cum_weighted = np.concatenate(([0.0], np.cumsum(costs[f] * true[a])))
    cum_reward = np.concatenate(([0.0], np.cumsum(true[a])))
    # N(Λ): the largest n with cum_cost[n] <= Λ (tolerance as in the budget checks)
    n = np.searchsorted(cum_cost, cap * (1 + 1e-12), side="right") - 1
    return {
        "capital": cap,
        "plays": n,
        "cost": cum_cost[n],
        "kandasamy": cap * best - cum_weighted[n],
        "wang": cap / costs[0] * best - cum_reward[n],
    }


def policy_for(
    name: str,
    instance: Instance,
    *,
    delta: float | None = None,
    budget: float | None = None,
    seed: int | None = None,
    **params: Any,
) -> Policy:
    """Build registered policy `name` for `instance` (its arms, ladder and noise model).

    Passing `n_arms`, `ladder`, `noise`, `delta`, `budget` or `seed` among the policy parameters is a
    ValueError that says so (not a TypeError about a duplicate keyword).

    Args:
        name: a registered policy name (see :func:`mf_sched.registry.list_policies`).
        instance: the instance the policy is for; it gives `n_arms`, `ladder` and `noise`.
        delta: the confidence δ, `0 < δ < 1`; `None`: the policy's default.
        budget: the policy's cost cap (in units of the ladder's costs); `None`: none.
        seed: the seed of the policy's own random generator; `None`: fresh entropy.
        **params: the policy-specific arguments, passed to its constructor (not `n_arms`, `ladder`, `noise`,
            `delta`, `budget` or `seed`).

    >>> from mf_sched.sim.instance import Instance
    >>> from mf_sched.ladder import FidelityLadder
    >>> inst = Instance([[0.2], [0.8]], FidelityLadder([1.0]), {"kind": "bernoulli"})
    >>> policy_for("lucb1", inst, delta=0.1).n_arms
    2
    """
    check_params(params)
    return build_policy(name, instance.problem(delta=delta, budget=budget, seed=seed), **params)


_FROM_INSTANCE = ("n_arms", "ladder", "noise")
_OWN_ARGUMENTS = ("delta", "budget", "seed")


def check_params(params: Mapping[str, Any]) -> None:
    """Reject policy parameters that :func:`policy_for` sets itself (see there).

    Args:
        params: the policy parameters given by the user.
    """
    for key in params:
        if key in _FROM_INSTANCE:
            raise ValueError(f"parameter {key!r} is set by the instance; it cannot be passed as a policy parameter")
        if key in _OWN_ARGUMENTS:
            raise ValueError(
                f"parameter {key!r} is an argument of its own (delta=, budget=, seed= of policy_for/run_many; "
                f"--{key} on the command line), not a policy parameter"
            )


# ---------------------------------------------------------------------------------------------- many runs
PolicyFactory = Callable[[Instance, int], Policy]
