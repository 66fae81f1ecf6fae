"""Many seeded runs in parallel processes and their summary (see :mod:`mf_sched.sim.simulate`, which re-exports
everything here)."""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mf_sched._parallel import run_seeded, split_seed
from mf_sched.policy import Policy
from mf_sched.registry import get_policy
from mf_sched.sim._run_one import PolicyFactory, RunResult, check_params, policy_for, run_policy
from mf_sched.sim.bounds import instance_lower_bound, instance_tight_lower_bound
from mf_sched.sim.instance import Instance


@dataclass
class Summary:
    """Aggregate of many runs of one policy on one instance (see :func:`run_many`).

    Attributes:
        policy: the policy's registered name.
        runs: the number of runs summarised.
        delta: the confidence δ the runs used (the policy's default when none was given, if all runs report
            the same); `None` for a policy without one.
        error_rate: the fraction of runs whose recommendation was wrong (:attr:`RunResult.correct`).
        cost_mean: the mean λ-cost of a run.
        cost_ci95: the half-width of the 95% Student-t confidence interval of `cost_mean`; NaN for one run.
        cost_median: the median cost of a run.
        cost_std: the standard deviation of the costs (ddof 1); NaN for one run.
        lower_bound: the instance's cost lower bound at `delta` (Wang et al. 2023 Thm 3.1 / Poiani et al. 2022
            Thm 1); `None` when skipped or undefined (see `lower_bound_note`).
        recommendations: how many runs recommended each arm (keys are arm indices as strings, `"none"` for no
            recommendation), most frequent first.
        certified_rate: the fraction of runs whose recommendation was certified (the stopping rule fired).
        stop_reasons: how many runs ended for each :attr:`RunResult.stop_reason`.
        simple_regret_mean: the mean simple regret over the runs that recommended an arm (NaN if none did).
        regret_kandasamy_mean: the mean of :attr:`RunResult.regret_kandasamy`.
        regret_wang_mean: the mean of :attr:`RunResult.regret_wang`.
        pulls_per_fidelity_mean: the mean number of pulls at each fidelity, `M` values.
        resumable_cost_mean: the mean cost under the resumable-runs semantics; `None` under
            `semantics="independent"`.
        lower_bound_note: how `lower_bound` was computed, or why it is missing.
        instance: the instance's name (`None` if it has none).
        assumptions: the instance's model-assumption check (the
            :meth:`~mf_sched.sim.instance.AssumptionReport.to_dict` of its report).
        results: the individual runs (empty with `keep_results=False`).
        tight_lower_bound: the tight bound `C*(µ) · kl(δ, 1 − δ)` of Poiani et al. (2024) (Gaussian instances
            only); `None` when skipped or undefined (see `tight_lower_bound_note`).
        tight_lower_bound_note: how `tight_lower_bound` was computed, or why it is missing.
    """

    policy: str
    runs: int
    delta: float | None
    error_rate: float
    cost_mean: float
    cost_ci95: float
    cost_median: float
    cost_std: float
    lower_bound: float | None
    recommendations: dict[str, int]
    certified_rate: float
    stop_reasons: dict[str, int]
    simple_regret_mean: float
    regret_kandasamy_mean: float
    regret_wang_mean: float
    pulls_per_fidelity_mean: list[float]
    resumable_cost_mean: float | None = None
    lower_bound_note: str = ""
    instance: str | None = None
    assumptions: dict[str, Any] = field(default_factory=dict)
    results: list[RunResult] = field(default_factory=list)
    tight_lower_bound: float | None = None
    tight_lower_bound_note: str = ""

    @property
    def cost_over_lower_bound(self) -> float | None:
        """Mean cost over the Wang et al. (2023) Thm 3.1 / Poiani et al. (2022) Thm 1 bound."""
        if not self.lower_bound:
            return None
        return self.cost_mean / self.lower_bound

    @property
    def cost_over_tight_lower_bound(self) -> float | None:
        """Mean cost over the tight bound of Poiani et al. (2024), `C*(µ) · kl(δ, 1 − δ)`."""
        if not self.tight_lower_bound:
            return None
        return self.cost_mean / self.tight_lower_bound

    def to_dict(self, per_run: bool = False) -> dict[str, Any]:
        def num(x: float | None) -> float | None:
            return None if x is None or not math.isfinite(x) else float(x)

        d: dict[str, Any] = {
            "policy": self.policy,
            "runs": self.runs,
            "delta": self.delta,
            "error_rate": self.error_rate,
            "cost": {
                "mean": num(self.cost_mean),
                "ci95": num(self.cost_ci95),
                "median": num(self.cost_median),
                "std": num(self.cost_std),
            },
            "lower_bound": num(self.lower_bound),
            "cost_over_lower_bound": num(self.cost_over_lower_bound),
            "tight_lower_bound": num(self.tight_lower_bound),
            "cost_over_tight_lower_bound": num(self.cost_over_tight_lower_bound),
            "recommendations": self.recommendations,
            "certified_rate": self.certified_rate,
            "stop_reasons": self.stop_reasons,
            "regret": {
                "simple": num(self.simple_regret_mean),
                "kandasamy": num(self.regret_kandasamy_mean),
                "wang": num(self.regret_wang_mean),
            },
            "pulls_per_fidelity": self.pulls_per_fidelity_mean,
            "resumable_cost": num(self.resumable_cost_mean),
            "lower_bound_note": self.lower_bound_note,
            "tight_lower_bound_note": self.tight_lower_bound_note,
            "instance": self.instance,
            "assumptions": self.assumptions,
        }
        if per_run:
            d["per_run"] = [r.to_dict() for r in self.results]
        return d


def mean_ci95(x: Any) -> tuple[float, float]:
    """Mean and half-width of the 95% Student-t confidence interval (NaN half-width for n < 2).

    Args:
        x: the sample, a sequence of numbers (empty gives NaN for both).

    >>> m, h = mean_ci95([1.0, 2.0, 3.0]); round(m, 3), round(h, 3)
    (2.0, 2.484)
    """
    a = np.asarray(x, dtype=float)
    if a.size == 0:
        return float("nan"), float("nan")
    m = float(a.mean())
    if a.size < 2:
        return m, float("nan")
    from scipy import stats  # lazy: scipy.stats costs ~1 s of import time

    return m, float(stats.t.ppf(0.975, a.size - 1) * a.std(ddof=1) / math.sqrt(a.size))


def _one_run(
    factory: PolicyFactory,
    instance: Instance,
    budget: float | None,
    workers: int | None,
    completion: str,
    semantics: str,
    max_pulls: int | None,
    ss: np.random.SeedSequence,
) -> RunResult:
    """Run seeded by `ss` (:func:`mf_sched._parallel.split_seed`: the policy's seed, the observations')."""
    pol_seed, obs_seed = split_seed(ss)
    return run_policy(
        factory(instance, pol_seed),
        instance,
        budget=budget,
        workers=workers,
        completion=completion,
        semantics=semantics,
        seed=obs_seed,
        max_pulls=max_pulls,
    )


@dataclass(frozen=True)
class _RegistryFactory:
    """Picklable factory building a registered policy for an instance."""

    name: str
    delta: float | None
    budget: float | None
    params: tuple[tuple[str, Any], ...]

    def __call__(self, instance: Instance, seed: int) -> Policy:
        return policy_for(self.name, instance, delta=self.delta, budget=self.budget, seed=seed, **dict(self.params))


def run_many(
    policy: str | PolicyFactory,
    instance: Instance,
    *,
    runs: int = 10,
    seed: int = 0,
    delta: float | None = None,
    budget: float | None = None,
    params: Mapping[str, Any] | None = None,
    workers: int | None = 1,
    completion: str = "random",
    semantics: str = "independent",
    max_pulls: int | None = None,
    n_jobs: int | None = 1,
    progress: bool = True,
    keep_results: bool = True,
    bounds: bool = True,
    bounds_time_limit: float | None = None,
) -> Summary:
    """Run `runs` independent seeds of a policy on an instance and summarise them.

    Args:
        policy: a registry name (built with :func:`~mf_sched.registry.build_policy` from the instance,
            `delta`, `budget` and `params`) or a picklable factory `(instance, seed) -> Policy`.
        instance: the simulated instance every run plays.
        runs: the number of independent runs, `≥ 1`.
        seed: root seed; run `i` uses the `i`-th child of `SeedSequence(seed)` for the policy and
            the observations, so results do not depend on `n_jobs`.
        delta: δ given to the policy; None leaves the policy's default, which the summary then reports
            (read from the runs' recommendations) and uses for the lower bounds.
        budget: cost cap given to the policy (when it is built from a name) and enforced by the runner.
        params: the policy-specific arguments when `policy` is a name (not `n_arms`, `ladder`, `noise`,
            `delta`, `budget` or `seed`); ignored for a factory.
        workers: pulls outstanding at once in each run (`None`: as many as the policy hands out); see
            :func:`run_policy`.
        completion: `"random"` or `"batch"`, how outstanding pulls complete; see :func:`run_policy`.
        semantics: `"independent"` or `"resumable"` (also meters the resumable-runs cost); see
            :func:`run_policy`.
        max_pulls: the most pulls a run may issue, `≥ 1`; `None`: no cap.
        n_jobs: worker processes (`None`: all CPUs); 1 runs in this process. Ctrl-C
            (`KeyboardInterrupt`) cancels the pending runs and terminates the workers.
        progress: show a progress bar over the runs (and the tight bound's progress).
        keep_results: keep the individual :class:`RunResult` objects in :attr:`Summary.results` (memory
            grows with `runs`).
        bounds: compute the instance's cost lower bounds (:mod:`mf_sched.sim.bounds`); False skips them.
        bounds_time_limit: seconds allowed for the tight bound (a valid, looser bound is reported when it
            runs out; the note says so); None: no limit.

    Example:
        >>> from mf_sched.sim.instance import Instance
        >>> from mf_sched.ladder import FidelityLadder
        >>> inst = Instance([[0.2], [0.8]], FidelityLadder([1.0]), {"kind": "bernoulli"})
        >>> s = run_many("se", inst, runs=4, delta=0.1, progress=False)
        >>> s.error_rate, s.runs
        (0.0, 4)
    """
    if isinstance(policy, str):
        get_policy(policy)  # fail fast on an unknown name
        check_params(params or {})
        factory: PolicyFactory = _RegistryFactory(policy, delta, budget, tuple(sorted((params or {}).items())))
        name = policy
    else:
        factory = policy
        name = getattr(policy, "name", None) or getattr(policy, "__name__", "custom")
    job = functools.partial(_one_run, factory, instance, budget, workers, completion, semantics, max_pulls)
    results = run_seeded(job, seed=seed, runs=runs, n_jobs=n_jobs, label=f"{name} x{runs}", progress=progress)
    for i, r in enumerate(results):
        r.seed = i
    if delta is None:  # the policy's default δ, as its recommendations report it
        used = {r.recommendation.delta for r in results}
        if len(used) == 1:
            delta = used.pop()
    return summarize(
        results,
        instance,
        delta=delta,
        keep_results=keep_results,
        bounds=bounds,
        bounds_time_limit=bounds_time_limit,
        progress=progress,
    )


def summarize(
    results: list[RunResult],
    instance: Instance,
    *,
    delta: float | None,
    keep_results: bool = True,
    bounds: bool = True,
    bounds_time_limit: float | None = None,
    progress: bool = False,
) -> Summary:
    """Aggregate :class:`RunResult` objects (see :class:`Summary`).

    Args:
        results: the runs to aggregate, at least one, all of the same policy on `instance`.
        instance: the instance they ran on (for the lower bounds and the assumption report).
        delta: the confidence δ the runs used; `None` skips the lower bounds (they are for δ-correct policies).
        keep_results: keep `results` in :attr:`Summary.results`.
        bounds: compute the instance's cost lower bounds (:mod:`mf_sched.sim.bounds`); False skips them.
        bounds_time_limit: seconds allowed for the tight bound (a valid, looser bound is reported when it runs
            out); `None`: no limit.
        progress: show the tight bound's progress.
    """
    costs = np.array([r.cost for r in results], dtype=float)
    mean, ci = mean_ci95(costs)
    lb_value = tight_value = None
    note = tight_note = ""
    if not bounds:
        note = tight_note = "skipped (bounds=False / --no-bounds)"
    elif delta is None:
        note = tight_note = "no confidence δ: the bounds are for δ-correct policies"
    elif not (instance.has_unique_best and instance.K >= 2):
        note = tight_note = "the best arm is not unique: best-arm identification has no finite lower bound"
    else:
        lb = instance_lower_bound(instance, delta)
        lb_value, note = lb.value, lb.note
        tight = instance_tight_lower_bound(instance, delta, time_limit=bounds_time_limit, progress=progress)
        if tight is None:
            tight_note = "the tight bound is derived for Gaussian noise only"
        else:
            tight_value, tight_note = tight.value, tight.note
    recs = Counter("none" if r.recommendation.arm is None else str(r.recommendation.arm) for r in results)
    res_costs = [r.resumable_cost for r in results if r.resumable_cost is not None]
    return Summary(
        policy=results[0].policy,
        runs=len(results),
        delta=delta,
        error_rate=float(np.mean([not r.correct for r in results])),
        cost_mean=mean,
        cost_ci95=ci,
        cost_median=float(np.median(costs)),
        cost_std=float(costs.std(ddof=1)) if costs.size > 1 else float("nan"),
        lower_bound=lb_value,
        recommendations=dict(sorted(recs.items(), key=lambda kv: -kv[1])),
        certified_rate=float(np.mean([r.recommendation.certified for r in results])),
        stop_reasons=dict(Counter(r.stop_reason for r in results)),
        simple_regret_mean=float(np.nanmean([r.simple_regret for r in results]))
        if any(math.isfinite(r.simple_regret) for r in results)
        else float("nan"),
        regret_kandasamy_mean=float(np.mean([r.regret_kandasamy for r in results])),
        regret_wang_mean=float(np.mean([r.regret_wang for r in results])),
        pulls_per_fidelity_mean=np.mean([r.pulls_per_fidelity for r in results], axis=0).tolist(),
        resumable_cost_mean=float(np.mean(res_costs)) if res_costs else None,
        lower_bound_note=note,
        instance=instance.name,
        assumptions=instance.check_assumptions().to_dict(),
        results=results if keep_results else [],
        tight_lower_bound=tight_value,
        tight_lower_bound_note=tight_note,
    )
