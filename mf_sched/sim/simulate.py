"""Drive any policy against a simulated instance: one run, or many seeds in parallel processes.

:func:`run_policy` plays one policy until it is done, until a cost budget, or until a pull cap:

* `workers=W` keeps up to `W` pulls outstanding (`None`: as many as the policy hands out).
  `completion="random"` completes one outstanding pull at a time, chosen uniformly at random
  (asynchronous workers; results come back in any order); `completion="batch"` completes every
  outstanding pull together once the workers are full or the policy waits (synchronous workers with a
  barrier; with `workers=None` a round-based policy then runs one round per step, the fast path used
  by the paper reproductions). With `workers=1` both are the papers' sequential model.
* `semantics="independent"` (the papers): every pull is a fresh sample costing `λ(m)`.
  `semantics="resumable"` additionally meters the cost of the *resumable runs* model: an
  arm's replicas are training runs; a pull at `m` advances the most advanced replica of that arm that
  is still below `m` (cost `λ(m) − λ(m')`) or starts a new replica (cost `λ(m)`). Observations
  stay independent draws in the simulator (a simplification: real learning curves are correlated).
* a `budget` stops issuing pulls before the committed cost would exceed it (pulls beyond it are
  given back to the policy) — the capital Λ of the regret papers, or a cost cap.
* `trace=True` keeps the issued pulls in issue order (:attr:`RunResult.trace`); :func:`regret_curve`
  turns a trace into both regrets at every capital `Λ' ≤ Λ` (one run of an anytime policy gives the
  whole regret-vs-capital curve).

:func:`run_many` repeats runs over seeds (process-parallel, deterministic given `seed` whatever
`n_jobs`) and summarises them: mean cost with a 95% confidence interval (Student t), median, error
rate, regrets, and the instance's cost lower bounds (:mod:`mf_sched.sim.bounds`): `lower_bound` is Wang et al.
(2023) Thm 3.1 / Poiani et al. (2022) Thm 1, `tight_lower_bound` the tight bound of Poiani et al. (2024)
(`C*(µ) · kl(δ, 1 − δ)`, Gaussian instances only), each with its `cost_over_…` ratio.
"""

from __future__ import annotations

from mf_sched.sim._run_many import Summary, mean_ci95, run_many, summarize
from mf_sched.sim._run_one import (
    PolicyStalledError,
    ResumableMeter,
    RunResult,
    check_params,  # noqa: F401 (importable here as before)
    check_stopping,
    is_correct,
    policy_for,
    regret_curve,
    run_policy,
    tolerance,
)

__all__ = [
    "check_stopping",
    "run_policy",
    "run_many",
    "policy_for",
    "summarize",
    "mean_ci95",
    "RunResult",
    "Summary",
    "PolicyStalledError",
    "ResumableMeter",
    "regret_curve",
    "is_correct",
    "tolerance",
]
