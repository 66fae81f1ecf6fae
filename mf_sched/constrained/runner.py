"""The runner of the mixture policies on constrained instances (Tang et al. 2024).

The runner (:func:`run_constrained`, :func:`run_many_constrained`) drives a mixture policy (`sfsr`,
`uslp`) through :func:`mf_sched.sim.simulate.run_policy` / :func:`~mf_sched.sim.simulate.run_many` (same
workers, completion, seeding and process-parallel machinery) and judges each answer by the paper's
criterion: the output support (slacks of non-binding constraints included) equals the optimal
support `I*`, or both are "infeasible" (Tang et al. 2024, §2: the error is `X ≠ I*`, strict set equality).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mf_sched._parallel import run_seeded, split_seed
from mf_sched.constrained.instance import ConstrainedInstance
from mf_sched.constrained.mixture import (
    AssumptionCheck,
    Mixture,
    json_number,
)
from mf_sched.ladder import FidelityLadder
from mf_sched.policy import Policy, RoundPolicy
from mf_sched.sim.simulate import RunResult, run_many, run_policy

__all__ = [
    "ConstrainedRunResult",
    "ConstrainedSummary",
    "constrained_policy",
    "run_constrained",
    "run_many_constrained",
    "summarize_constrained",
    "wilson_interval",
]


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

    Attributes:
        policy: the policy's registered name.
        seed: the run's index among :func:`run_many_constrained`'s seeds; `None` for a single run.
        n_pulls: the number of pulls the policy was told.
        cost: their cost (one per pull: the same as `n_pulls`).
        correct: the paper's criterion: the recommended support equals the optimal one, or both are infeasible.
        output: the recommended mixture in the instance's arm numbering (known arms included); `None` when the
            policy recommended none.
        stop_reason: why the run ended (:attr:`~mf_sched.sim.simulate.RunResult.stop_reason`: `"done"`,
            `"budget"` or `"max-pulls"`).
        reason: the recommendation's own reason (:attr:`~mf_sched.policy.Recommendation.reason`).
        value: the expected reward `rᵀp` of the recommended weights under the true means; NaN when there is no
            feasible recommendation.
        regret: the optimum's value minus `value`; NaN when either is undefined.
        max_violation: `max_l (c p)_l − c̄_l` under the true means, `≤ 0` when every constraint holds (`−inf`
            without constraints, NaN without a feasible recommendation).
        wall_time: the run's wall-clock time, in seconds.
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
    """Build mixture policy `name` (`"sfsr"`, `"uslp"`) for `instance` with budget `N`.

    Args:
        name: a registered mixture policy: `"sfsr"` or `"uslp"`.
        instance: the instance; it gives the arms to pull, the thresholds, the known arms and the noise.
        pull_budget: the policy's total number of pulls `N` (SFSR needs `N > K0`, USLP at least a pull per arm).
        seed: the seed of the policy's own random generator; `None`: fresh entropy.
        **params: the policy-specific arguments (e.g. SFSR's `score`), passed to its constructor.

    >>> from mf_sched.constrained.tang2024 import tang2024_instance
    >>> inst = tang2024_instance("D1P")
    >>> p = constrained_policy("sfsr", inst, pull_budget=20_000, seed=0, score="lagrangian")
    >>> p.n_arms, p.L, p.score
    (24, 2, 'lagrangian')
    """
    from mf_sched.registry import build_policy

    return build_policy(name, instance.problem(seed=seed), pull_budget=pull_budget, **params)


def _check_fast(budget: float | None, max_pulls: int | None, workers: int | None, completion: str) -> None:
    if budget is not None or max_pulls is not None or workers is not None or completion != "batch":
        raise ValueError("fast=True runs whole rounds: it takes no budget, max_pulls, workers or completion")


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
    """Play a mixture policy on `instance` (:func:`mf_sched.sim.simulate.run_policy` semantics; the
    default `workers=None, completion="batch"` hands out a whole round at once).

    `fast=True` (Gaussian instances, no budget cap or pull limit) skips the per-pull protocol: each
    round's pulls are drawn as sufficient statistics (exact in distribution; see :func:`_run_fast`), so
    a run costs the same at any N — what the paper reproduction uses for its 5,000-run points.

    Args:
        policy: a fresh mixture policy for `instance` (see :func:`constrained_policy`); played in place.
        instance: the instance the pulls are drawn from.
        seed: seeds the observations (`None`: fresh entropy).
        workers: pulls outstanding at once, `≥ 1`; `None`: as many as the policy hands out (a whole round).
        completion: `"batch"` or `"random"` (see :func:`mf_sched.sim.simulate.run_policy`).
        budget: a cap on the cost (the number of pulls) enforced by the runner; `None`: the policy's own `N`.
        max_pulls: the most pulls to issue, `≥ 1`; `None`: no cap.
        fast: draw each round's pulls as sufficient statistics (Gaussian instances only; needs the defaults of
            `workers`, `completion`, `budget` and `max_pulls`).

    >>> from mf_sched.constrained.tang2024 import tang2024_instance
    >>> inst = tang2024_instance("D1P")
    >>> res = run_constrained(constrained_policy("sfsr", inst, pull_budget=100_000, seed=0), inst, seed=1)
    >>> res.correct, res.output.support, res.n_pulls <= 100_000
    (True, (5, 24, 25), True)
    """
    if fast:
        _check_fast(budget, max_pulls, workers, completion)
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
    round's `T` pulls of an arm are drawn as their totals — sum `~ N(T·mean, T·σ²)` per component and
    reward sum of squares `= sum²/T + σ_r²·χ²_{T−1}` — which is exact in distribution and independent
    of `T` in cost. Decisions go through the policy's own code (scores, rejections, final mixture)."""
    if not isinstance(policy, RoundPolicy):
        raise ValueError(f"fast=True needs a round-based mixture policy (SFSR, USLP), not {type(policy).__name__}")
    if instance.noise.kind != "gaussian":
        raise ValueError("fast=True needs Gaussian noise (sums of pulls are then Gaussian); use fast=False")
    assert instance.noise.sigma_reward is not None and instance.noise.sigma_cost is not None
    sig = np.array((instance.noise.sigma_reward, *instance.noise.sigma_cost))
    unk = instance.unknown_arms
    mean = np.column_stack([instance.rewards[unk], instance.costs[unk]])
    t0 = time.perf_counter()
    while not policy.done:
        counts = policy.round_counts()
        root = np.sqrt(counts)[:, None]
        sums = counts[:, None] * mean + root * sig * rng.standard_normal(mean.shape)
        sq = np.where(counts > 0, sums[:, 0] ** 2 / np.maximum(counts, 1), 0.0)
        sq = sq + sig[0] ** 2 * rng.chisquare(np.maximum(counts - 1, 1)) * (counts > 1)
        policy.observe_round_totals(counts, sums, sq)
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


def _fast_job(
    name: str, instance: ConstrainedInstance, params: dict[str, Any], ss: np.random.SeedSequence
) -> ConstrainedRunResult:
    pol_seed, obs_seed = split_seed(ss)
    policy = constrained_policy(name, instance, seed=pol_seed, **params)
    return _run_fast(policy, instance, np.random.default_rng(obs_seed))


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion `k/n` (our choice: Tang et al. 2024 do not state theirs).

    Args:
        k: the number of successes, `0 ≤ k ≤ n`.
        n: the number of trials (`≤ 0` gives `(nan, nan)`).
        confidence: the interval's level, in `(0, 1)`.

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
    """Aggregate of many runs (see :func:`run_many_constrained`).

    Attributes:
        policy: the policy's registered name.
        instance: the instance's name (`None` if it has none).
        runs: the number of runs summarised.
        error_rate: the fraction of runs whose output was wrong (:attr:`ConstrainedRunResult.correct`).
        error_ci95: the Wilson 95% interval `(low, high)` of `error_rate`.
        infeasible_rate: the fraction of runs that answered "infeasible".
        pulls_mean: the mean number of pulls of a run.
        pulls_max: the largest number of pulls of a run.
        regret_mean: the mean regret over the runs where it is defined (NaN if none).
        violation_rate: the fraction of runs, among those with a feasible output, whose recommended mixture breaks
            a constraint under the true means (by more than 1e-9).
        outputs: how many runs gave each output: the support as a list string (e.g. `"[5, 24, 25]"`),
            `"infeasible"` or `"none"`; most frequent first.
        stop_reasons: how many runs ended for each :attr:`ConstrainedRunResult.stop_reason`.
        wall_time_mean: the mean wall-clock time of a run, in seconds.
        optimum: the instance's true optimal mixture (or the infeasible marker).
        assumption: the instance's Assumption 1 check, as a dict.
        params: the policy parameters the runs used (`pull_budget` included).
        results: the individual runs (empty with `keep_results=False`).
    """

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
    """Aggregate :class:`ConstrainedRunResult` objects.

    Args:
        results: the runs to aggregate, at least one, all of the same policy on `instance`.
        instance: the instance they ran on (its optimum and assumption check are reported).
        params: the policy parameters to record in :attr:`ConstrainedSummary.params`.
    """
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
    """Run `runs` seeds of mixture policy `policy` with budget `N = pull_budget` and summarise the
    error rate (with a Wilson 95% interval), pulls used, regret of the recommended mixture and the rate
    of constraint violations under the true means. Seeding is that of :func:`mf_sched.sim.simulate.run_many`
    (results do not depend on `n_jobs`). `fast=True`: sufficient-statistics simulation of whole
    rounds (Gaussian instances; exact in distribution, see :func:`run_constrained`).

    Args:
        policy: a registered mixture policy: `"sfsr"` or `"uslp"`.
        instance: the instance every run plays.
        pull_budget: the policy's total number of pulls `N`.
        runs: the number of independent runs, `≥ 1`.
        seed: the root seed; run `i` uses the `i`-th child of `SeedSequence(seed)`.
        params: the policy-specific arguments (e.g. SFSR's `score`).
        budget: a cost cap enforced by the runner (not with `fast`); `None`: none.
        workers: pulls outstanding at once in each run; `None`: a whole round (not with `fast`).
        completion: `"batch"` or `"random"` (not with `fast`).
        max_pulls: the most pulls a run may issue; `None`: no cap (not with `fast`).
        n_jobs: worker processes (`None`: all CPUs); 1 runs in this process.
        progress: show a progress bar over the runs.
        keep_results: keep the individual runs in :attr:`ConstrainedSummary.results`.
        fast: the sufficient-statistics simulation (see above).

    >>> from mf_sched.constrained.tang2024 import tang2024_instance
    >>> s = run_many_constrained("uslp", tang2024_instance("D1P"), pull_budget=5_000, runs=3, progress=False)
    >>> s.runs, 0 <= s.error_rate <= 1, s.pulls_max <= 5_000
    (3, True, True)
    """
    p = dict(params or {})
    p["pull_budget"] = pull_budget
    if fast:
        _check_fast(budget, max_pulls, workers, completion)
        job = functools.partial(_fast_job, policy, instance, p)
        label = f"{policy} x{runs} (fast)"
        results = run_seeded(job, seed=seed, runs=runs, n_jobs=n_jobs, label=label, progress=progress)
        for i, r in enumerate(results):
            r.seed = i
    else:
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
