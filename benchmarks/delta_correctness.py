"""δ-correctness at scale: the error rate of every δ-correct best-arm policy against δ, with a binomial bound.

Every registered finite-armed policy whose objective is best-arm identification at a fixed confidence δ runs
many times on

* the published instances shipped with mf-sched (:func:`mf_sched.published_instances`), and
* ``--random`` random instances (K = 3–6 arms, M = 2–3 fidelities, Gaussian noise; half of them with
  *adversarial* biases — the best arm low by ζ(m) at every cheap fidelity, the runner-up high by ζ(m), a
  closest gap of 0.05–0.15 — where a wrong ζ misleads the ζ-aware policies most; :func:`random_instance`),

and the error rate ``e/n`` gets a one-sided 95% Clopper–Pearson interval (``scipy.stats.binomtest``). A cell
is **confirmed** when its upper bound is ≤ δ and **violated** when its lower bound is > δ.

**Misspecified ζ.** The ζ-aware policies (IISE, IISE-γ, MFE, IISE-rungs, LUCB with EXPLORE-A/B/C, MF-GRAD) also
run with the ladder's ζ (and γ) multiplied by 0.5 and by 2 while the instance stays the same: what a wrong
calibration costs in errors (×0.5: biases larger than assumed) and in cost (×2: caution paid for nothing),
reported as the error rate and the mean cost over the ζ×1 cost of the same policy and instance. The
misspecified runs use the published instances and the first ``--misspec-random`` random ones.

What counts as an error: the recommended arm's true mean is below the best one (any tied best arm is right).
IISE-rungs and racing (one run per arm, one value per rung: they cannot resample an arm) claim only ``gap ≤ ε``
for the ε they report (``details["epsilon"]``) when ``guaranteed``; their error
is a breach of that claim, and runs without a guarantee are counted apart. MF-GRAD and GRAD use their
practical threshold by default (the paper's experiments; not covered by the theory). A run that reaches the
pull cap (``--max-pulls``; LUCB with EXPLORE-A/B may never stop) has no answer to judge: it is counted as
*unfinished* and left out of the rate.

**Budget.** A cell gets ``--runs`` runs (default 1,000), in chunks, until its time (``--cell-time`` CPU
seconds, measured in the workers) is spent; cells that got fewer runs are listed. The IISE family uses the
exact block runner (:mod:`mf_sched.sim.iise_runner`); the others :func:`mf_sched.sim.simulate.run_policy` with whole
rounds per step. Published instances with K ≥ 1,000 run only with the IISE family (one run of the others takes minutes
to hours there) — a note says so.

Prints a summary table, writes JSON (every cell) and a PNG plot (error-rate upper bounds against δ; cost
under misspecified ζ).

    python -m benchmarks.delta_correctness                      # full: about an hour on 2 cores
    python -m benchmarks.delta_correctness --quick              # CI size: a few minutes
    python -m benchmarks.delta_correctness --policies iise se --random 5 --runs 200
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from benchmarks._common import pyplot, save_figure, write_json
from mf_sched import FidelityLadder, Instance, get_policy, list_policies, published_instance
from mf_sched import published_instances as list_published
from mf_sched._parallel import process_pool
from mf_sched._progress import Progress
from mf_sched.policies.iise import IISE
from mf_sched.registry import build_policy
from mf_sched.sim.iise_runner import run_iise_fast
from mf_sched.sim.simulate import run_policy

#: policies that read ζ (or γ): they are also run with ζ × 0.5 and ζ × 2
ZETA_AWARE = (
    "iise",
    "iise-gamma",
    "iise-max-exploit",
    "iise-rungs",
    "race",
    "lucb-explore-a",
    "lucb-explore-b",
    "lucb-explore-c",
    "mf-grad",
)
#: what each policy's δ guarantee rests on (from its docstring)
CLAIMS = {
    "se": "Even-Dar et al. 2006",
    "lucb1": "Kalyanakrishnan et al. 2012",
    "uniform": "δ-stopping (anytime radius)",
    "iise": "Poiani et al. 2022, Thm 2",
    "iise-gamma": "Poiani et al. 2022, §5 (γ ≥ realised spread)",
    "iise-max-exploit": "Poiani et al. 2022, Thm 2 (any α > 0)",
    "iise-rungs": "ε-optimal for its reported ε (union bound)",
    "race": "ε-optimal for its reported ε (ζ⁺ = the ladder's ζ; proof in mf_sched.racing.certificate)",
    "lucb-explore-a": "Wang et al. 2023, Thm 3.4",
    "lucb-explore-b": "Wang et al. 2023, Thm 3.4",
    "lucb-explore-c": "Wang et al. 2023, Thm 3.4",
    "lucb-highest": "Wang et al. 2023, Thm 3.4",
    "mf-grad": "practical threshold: not covered by the theory",
    "grad": "practical threshold: not covered by the theory",
}
FACTORS = (1.0, 0.5, 2.0)


def delta_correct_policies() -> list[str]:
    """The registered finite-armed best-arm policies with a fixed-confidence guarantee (or the practical
    version of one): objective ``"best-arm"``."""
    return [n for n, c in list_policies().items() if c.objective == "best-arm" and c.finite_armed]


# ---------------------------------------------------------------------------------------------- instances
def random_instance(i: int) -> Instance:
    """Random instance ``i`` (seeded): K = 3–6, M = 2–3, σ ∈ [0.1, 0.2]. Even ``i``: gaps to the best in
    [0.1, 0.4], biases uniform in ±ζ(m) (ζ(1) ≤ 0.3). Odd ``i`` (adversarial): ζ(1) ∈ [0.25, 0.45], the closest
    gap in [0.05, 0.15], the best arm low by exactly ζ(m) at every cheap fidelity, the runner-up high by ζ(m),
    the others high by 50–100% of ζ(m) — the instances on which an underestimated ζ misleads."""
    rng = np.random.default_rng(1_000 + i)
    adversarial = i % 2 == 1
    K, M = int(rng.integers(3, 7)), int(rng.integers(2, 4))
    costs = np.cumprod(np.r_[1.0, rng.uniform(2.0, 6.0, M - 1)])
    zmax = (0.25, 0.45) if adversarial else (0.05, 0.3)
    zeta = np.r_[np.sort(rng.uniform(*zmax, M - 1))[::-1], 0.0]
    first = (0.05, 0.15) if adversarial else (0.1, 0.4)
    gaps = np.r_[0.0, rng.uniform(*first), np.sort(rng.uniform(0.1, 0.4, K - 2))]
    top = 0.6 - gaps
    if adversarial:
        u = rng.uniform(0.5, 1.0, (K, M))
        u[0], u[1] = -1.0, 1.0  # the best arm looks worse at every cheap fidelity, the runner-up better
    else:
        u = rng.uniform(-1.0, 1.0, (K, M))
    means = top[:, None] + u * zeta[None, :]
    means[:, -1] = top
    perm = rng.permutation(K)
    return Instance(
        means[perm],
        FidelityLadder(costs.tolist(), zeta.tolist()),
        {"kind": "gaussian", "sigma": float(rng.uniform(0.1, 0.2))},
        name=f"random-{i:02d}{'-adv' if adversarial else ''}",
    )


def published_instances() -> dict[str, Instance]:
    """The published instances shipped with mf-sched (``mf_sched/data/instances``), by name."""
    return {name: published_instance(name, warn=False) for name in list_published()}


def scaled_ladder(ladder: FidelityLadder, factor: float) -> FidelityLadder:
    """The ladder with ζ (and γ) multiplied by ``factor``: a miscalibrated bias bound."""
    if factor == 1.0:
        return ladder
    gamma = None if ladder.gamma is None else [factor * g for g in ladder.gamma]
    return FidelityLadder(ladder.costs, [factor * z for z in ladder.zeta], gamma, ladder.resources, ladder.names)


# ---------------------------------------------------------------------------------------------- runs
def build(name: str, instance: Instance, factor: float, delta: float, seed: int) -> Any:
    problem = instance.problem(delta=delta, seed=seed)
    problem["ladder"] = scaled_ladder(instance.ladder, factor)
    if name == "iise-gamma" and problem["ladder"].gamma is None:  # IISE-γ needs γ: 2ζ is always valid
        problem["ladder"] = problem["ladder"].with_gamma([2 * z for z in problem["ladder"].zeta])
    view = Instance(instance.means, problem["ladder"], instance.noise)  # what the policy is told
    return build_policy(name, problem, **get_policy(name).example_params(view))


def judge(name: str, r: Any, instance: Instance) -> str:
    """``"ok"``, ``"error"``, ``"unfinished"`` (pull cap) or ``"unclaimed"`` (IISE-rungs or racing without a
    guarantee)."""
    if r.stop_reason == "max-pulls":
        return "unfinished"
    arm = r.recommendation.arm
    true = instance.true_means
    gap = float(true.max() - true[arm]) if arm is not None else math.inf
    if name in ("iise-rungs", "race"):  # one run per arm and rung: they claim gap <= the ε they report
        det = r.recommendation.details
        if not det.get("guaranteed"):
            return "unclaimed"
        eps = det.get("epsilon")
        return "error" if eps is None or gap > eps * (1 + 1e-12) + 1e-15 else "ok"
    return "ok" if gap <= 0 else "error"


def _chunk(args: tuple[Any, ...]) -> dict[str, Any]:
    """Run one chunk of a cell (in a worker): seeds → counts of verdicts, costs, CPU seconds."""
    key, name, instance, factor, delta, seeds, max_pulls = args
    t0 = time.process_time()
    verdicts: dict[str, int] = defaultdict(int)
    costs: list[float] = []
    for ss in seeds:
        pol_seed, obs_seed = ss.spawn(2)
        policy = build(name, instance, factor, delta, int(pol_seed.generate_state(1, dtype=np.uint32)[0]))
        if isinstance(policy, IISE):
            r = run_iise_fast(policy, instance, seed=obs_seed)
        else:
            r = run_policy(policy, instance, workers=None, completion="batch", seed=obs_seed, max_pulls=max_pulls)
        v = judge(name, r, instance)
        verdicts[v] += 1
        if v != "unfinished":
            costs.append(r.cost)
    return {"key": key, "verdicts": dict(verdicts), "costs": costs, "cpu_s": time.process_time() - t0}


@dataclass
class Cell:
    policy: str
    instance: str
    factor: float
    runs: int = 0
    errors: int = 0
    unfinished: int = 0
    unclaimed: int = 0
    cpu_s: float = 0.0
    cost_sum: float = 0.0
    cost_n: int = 0
    note: str = ""
    submitted: int = field(default=0, repr=False)

    @property
    def judged(self) -> int:
        return self.runs - self.unfinished - self.unclaimed

    def summary(self, delta: float) -> dict[str, Any]:
        d = asdict(self)
        d.pop("submitted")
        n, e = self.judged, self.errors
        if n:
            ci = stats.binomtest(e, n).proportion_ci(confidence_level=0.95, method="exact")
            lo1 = stats.binomtest(e, n, alternative="greater").proportion_ci(0.95, method="exact").low
            hi1 = stats.binomtest(e, n, alternative="less").proportion_ci(0.95, method="exact").high
            d.update(
                error_rate=e / n,
                ci95=[ci.low, ci.high],
                upper95=hi1,
                lower95=lo1,
                confirmed=bool(hi1 <= delta),
                violated=bool(lo1 > delta),
            )
        else:
            d.update(error_rate=None, ci95=None, upper95=None, lower95=None, confirmed=False, violated=False)
        d["cost_mean"] = self.cost_sum / self.cost_n if self.cost_n else None
        return d


def _plan(args: argparse.Namespace) -> tuple[dict[str, Instance], list[Cell]]:
    pols = args.policies or delta_correct_policies()
    unknown = [p for p in pols if p not in delta_correct_policies()]
    if unknown:
        raise SystemExit(f"not fixed-confidence best-arm policies: {unknown}; choose from {delta_correct_policies()}")
    published = {} if args.no_published else published_instances()
    if args.instances:
        published = {k: v for k, v in published.items() if k in args.instances}
    published = {k: v for k, v in published.items() if v.K * v.M <= args.max_published_size}
    randoms = {f"random-{i:02d}{'-adv' if i % 2 else ''}": random_instance(i) for i in range(args.random)}
    instances = {**published, **randoms}
    misspec = set(published) | set(list(randoms)[: args.misspec_random])
    cells = []
    for inst_name, inst in instances.items():
        for pol in pols:
            factors = FACTORS if (pol in ZETA_AWARE and inst_name in misspec) else (1.0,)
            for f in factors:
                c = Cell(pol, inst_name, f)
                if inst.K * inst.M >= 1000 * 3 and not issubclass(get_policy(pol), IISE):
                    c.note = f"skipped: K = {inst.K}, M = {inst.M} (one run takes minutes to hours; IISE family only)"
                elif inst.M == 1 and pol in ZETA_AWARE and f != 1.0:
                    continue
                cells.append(c)
    return instances, cells


def run(args: argparse.Namespace) -> dict[str, Any]:
    instances, cells = _plan(args)
    todo = {i: c for i, c in enumerate(cells) if not c.note}
    seeds_of = {i: np.random.SeedSequence([args.seed, i]) for i in todo}
    spawned: dict[int, list] = {i: [] for i in todo}
    t0 = time.monotonic()

    def next_job(i: int) -> tuple[Any, ...] | None:
        c = todo[i]
        if c.submitted >= args.runs or c.cpu_s >= args.cell_time:
            return None
        # chunks of about a quarter of the cell's time once a run's time is known (one run first)
        per_run = c.cpu_s / c.runs if c.runs else None
        n = 1 if per_run is None else max(1, min(args.chunk, int(0.25 * args.cell_time / max(per_run, 1e-6))))
        n = min(n, args.runs - c.submitted)
        while len(spawned[i]) < c.submitted + n:
            spawned[i].extend(seeds_of[i].spawn(args.chunk))
        seeds = spawned[i][c.submitted : c.submitted + n]
        c.submitted += n
        return (i, c.policy, instances[c.instance], c.factor, args.delta, seeds, args.max_pulls)

    def absorb(res: dict[str, Any]) -> None:
        c = todo[res["key"]]
        v = res["verdicts"]
        n = sum(v.values())
        c.runs += n
        c.errors += v.get("error", 0)
        c.unfinished += v.get("unfinished", 0)
        c.unclaimed += v.get("unclaimed", 0)
        c.cost_sum += float(sum(res["costs"]))
        c.cost_n += len(res["costs"])
        c.cpu_s += res["cpu_s"]

    with Progress(len(todo), f"{len(todo)} cells", not args.no_progress) as bar:
        active = list(todo)
        if args.jobs <= 1:
            for i in active:
                while (job := next_job(i)) is not None and time.monotonic() - t0 < args.time_budget:
                    absorb(_chunk(job))
                bar.update()
        else:
            with process_pool(args.jobs) as ex:
                pending: dict[Any, int] = {}
                queue = list(active)
                done_cells: set[int] = set()
                while queue or pending:
                    while queue and len(pending) < 2 * args.jobs and time.monotonic() - t0 < args.time_budget:
                        i = queue.pop(0)
                        job = next_job(i)
                        if job is None:
                            if i not in done_cells and not any(v == i for v in pending.values()):
                                done_cells.add(i)
                                bar.update()
                            continue
                        pending[ex.submit(_chunk, job)] = i
                        queue.append(i)  # round robin: its next chunk after the others'
                    if not pending:
                        break
                    fut = next(iter(pending)) if len(pending) == 1 else _first_done(pending)
                    i = pending.pop(fut)
                    absorb(fut.result())
                    if i not in queue and not any(v == i for v in pending.values()) and i not in done_cells:
                        done_cells.add(i)
                        bar.update()
    for c in cells:
        if not c.note and c.runs < args.runs:
            c.note = f"{c.runs} runs: the cell's time ({args.cell_time:g} CPU s) or the budget ran out"
    return _report(args, instances, cells, time.monotonic() - t0)


def _first_done(pending: dict[Any, int]) -> Any:
    from concurrent.futures import FIRST_COMPLETED, wait

    done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
    return next(iter(done))


# ---------------------------------------------------------------------------------------------- report
def _report(args: argparse.Namespace, instances: dict[str, Instance], cells: list[Cell], wall: float) -> dict:
    delta = args.delta
    rows = [c.summary(delta) for c in cells]
    by = {(r["policy"], r["instance"], r["factor"]): r for r in rows}
    for r in rows:  # cost of a miscalibration: mean cost over the ζ × 1 cost
        base = by.get((r["policy"], r["instance"], 1.0))
        ok = base is not None and base["cost_mean"] and r["cost_mean"] is not None
        r["cost_over_zeta1"] = r["cost_mean"] / base["cost_mean"] if ok else None
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    summary = []
    for pol in policies:
        for f in FACTORS:
            sel = [r for r in rows if r["policy"] == pol and r["factor"] == f and r["runs"]]
            if not sel:
                continue
            pub = [r for r in sel if not r["instance"].startswith("random-")]
            rnd = [r for r in sel if r["instance"].startswith("random-")]
            n = sum(r["runs"] - r["unfinished"] - r["unclaimed"] for r in sel)
            e = sum(r["errors"] for r in sel)
            ratios = [r["cost_over_zeta1"] for r in sel if r["cost_over_zeta1"] is not None]
            summary.append(
                {
                    "policy": pol,
                    "factor": f,
                    "claim": CLAIMS.get(pol, ""),
                    "instances": len(sel),
                    "published": len(pub),
                    "random": len(rnd),
                    "runs": sum(r["runs"] for r in sel),
                    "judged": n,
                    "errors": e,
                    "pooled_error_rate": e / n if n else None,
                    "pooled_upper95": stats.binomtest(e, n, alternative="less").proportion_ci(0.95).high if n else None,
                    "worst_cell_rate": max((r["error_rate"] for r in sel if r["error_rate"] is not None), default=None),
                    "worst_cell_upper95": max((r["upper95"] for r in sel if r["upper95"] is not None), default=None),
                    "cells_confirmed": sum(r["confirmed"] for r in sel),
                    "cells_violated": sum(r["violated"] for r in sel),
                    "cells_below_target_runs": sum(r["runs"] < args.runs for r in sel),
                    "unfinished": sum(r["unfinished"] for r in sel),
                    "unclaimed": sum(r["unclaimed"] for r in sel),
                    "cost_over_zeta1_median": float(np.median(ratios)) if ratios and f != 1.0 else None,
                }
            )
    meta = {
        "delta": delta,
        "target_runs": args.runs,
        "cell_time_cpu_s": args.cell_time,
        "time_budget_s": args.time_budget,
        "max_pulls": args.max_pulls,
        "jobs": args.jobs,
        "seed": args.seed,
        "wall_s": wall,
        "quick": args.quick,
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "machine": platform.machine(),
        "instances": {k: {"K": v.K, "M": v.M, "noise": v.noise.kind} for k, v in instances.items()},
    }
    return {"meta": meta, "summary": summary, "cells": rows}


def _print(result: dict[str, Any]) -> None:
    delta = result["meta"]["delta"]
    print(f"δ = {delta}; one-sided 95% Clopper–Pearson bounds; errors / judged runs (unfinished and unclaimed apart)")
    head = f"{'policy':<15}{'ζ×':>5}{'inst':>6}{'runs':>9}{'errors':>8}{'pooled':>9}{'≤ (95%)':>9}"
    print(head + f"{'worst cell':>11}{'≤ (95%)':>9}{'conf.':>7}{'viol.':>7}{'short':>7}{'cost/ζ×1':>10}  claim")
    for s in result["summary"]:
        fmt = lambda x, p=4: "-" if x is None else f"{x:.{p}f}"  # noqa: E731
        print(
            f"{s['policy']:<15}{s['factor']:>5g}{s['instances']:>6}{s['runs']:>9}{s['errors']:>8}"
            f"{fmt(s['pooled_error_rate']):>9}{fmt(s['pooled_upper95']):>9}{fmt(s['worst_cell_rate']):>11}"
            f"{fmt(s['worst_cell_upper95']):>9}{s['cells_confirmed']:>7}{s['cells_violated']:>7}"
            f"{s['cells_below_target_runs']:>7}{fmt(s['cost_over_zeta1_median'], 2):>10}  {s['claim']}"
        )
    skipped = [c for c in result["cells"] if c["note"].startswith("skipped")]
    short = [c for c in result["cells"] if c["note"] and not c["note"].startswith("skipped")]
    if skipped:
        print(
            f"skipped cells ({len(skipped)}): " + "; ".join(sorted({f"{c['instance']}: {c['note']}" for c in skipped}))
        )
    if short:
        print(f"cells with fewer runs than the target ({len(short)}):")
        for c in short:
            print(f"  {c['policy']} on {c['instance']} (ζ×{c['factor']:g}): {c['note']}")
    viol = [c for c in result["cells"] if c["violated"]]
    for c in viol:
        print(
            f"VIOLATED: {c['policy']} on {c['instance']} (ζ×{c['factor']:g}): {c['errors']}/{c['runs']} errors, "
            f"95% lower bound {c['lower95']:.4f} > δ"
        )


def _plot(result: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    delta = result["meta"]["delta"]
    cells = [c for c in result["cells"] if c["upper95"] is not None]
    pols = list(dict.fromkeys(c["policy"] for c in cells))
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    ax = axes[0]
    marks = {1.0: ("o", "ζ × 1"), 0.5: ("v", "ζ × 0.5"), 2.0: ("^", "ζ × 2")}
    for f, (m, label) in marks.items():
        xs = [pols.index(c["policy"]) + {1.0: 0, 0.5: -0.2, 2.0: 0.2}[f] for c in cells if c["factor"] == f]
        ys = [max(c["upper95"], 1e-4) for c in cells if c["factor"] == f]
        ax.scatter(xs, ys, marker=m, s=12, alpha=0.6, label=label)
    ax.axhline(delta, color="k", ls="--", lw=1, label=f"δ = {delta}")
    ax.set_yscale("log")
    ax.set_xticks(range(len(pols)), pols, rotation=45, ha="right")
    ax.set_ylabel("error rate, 95% upper bound (per cell)")
    ax.set_title("δ-correctness: one point per (policy, instance)")
    ax.legend(fontsize=8)
    ax = axes[1]
    mis = [c for c in result["cells"] if c["factor"] != 1.0 and c["cost_over_zeta1"] is not None]
    mpols = list(dict.fromkeys(c["policy"] for c in mis))
    for f, (m, label) in marks.items():
        if f == 1.0:
            continue
        xs = [mpols.index(c["policy"]) + (-0.15 if f == 0.5 else 0.15) for c in mis if c["factor"] == f]
        ys = [c["cost_over_zeta1"] for c in mis if c["factor"] == f]
        ax.scatter(xs, ys, marker=m, s=12, alpha=0.6, label=label)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(mpols)), mpols, rotation=45, ha="right")
    ax.set_ylabel("mean cost / mean cost with the true ζ")
    ax.set_title("cost of a miscalibrated ζ")
    ax.legend(fontsize=8)
    save_figure(fig, path)
    plt.close(fig)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--quick",
        action="store_true",
        help="CI size: 4 random instances, published ones with K·M <= 100, 50 runs, 1 CPU s per cell",
    )
    ap.add_argument("--policies", nargs="*", default=None, help="default: every fixed-confidence best-arm policy")
    ap.add_argument("--instances", nargs="*", default=None, help="published instances to use (default: all)")
    ap.add_argument("--no-published", action="store_true", help="random instances only")
    ap.add_argument(
        "--max-published-size", type=int, default=10**9, help="leave out published instances with K·M above this"
    )
    ap.add_argument("--random", type=int, default=50, help="number of random instances")
    ap.add_argument("--misspec-random", type=int, default=10, help="random instances also run with ζ × 0.5, ζ × 2")
    ap.add_argument("--runs", type=int, default=1000, help="target runs per cell")
    ap.add_argument("--cell-time", type=float, default=20.0, help="CPU seconds per cell (then fewer runs)")
    ap.add_argument("--time-budget", type=float, default=3 * 3600.0, help="wall seconds for all cells")
    ap.add_argument("--chunk", type=int, default=200, help="most runs per job")
    ap.add_argument("--max-pulls", type=int, default=500_000, help="pull cap per run (then 'unfinished')")
    ap.add_argument("--delta", type=float, default=0.1)
    ap.add_argument("--jobs", type=int, default=2, help="worker processes")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--out", default="benchmarks/results/delta_correctness.json")
    args = ap.parse_args(argv)
    if args.quick:  # CI size: a few CPU minutes
        args.random = min(args.random, 4)
        args.misspec_random = min(args.misspec_random, 2)
        args.runs = min(args.runs, 50)
        args.cell_time = min(args.cell_time, 1.0)
        args.max_pulls = min(args.max_pulls, 20_000)
        args.max_published_size = min(args.max_published_size, 100)
    if not 0 < args.delta < 1:
        ap.error("--delta must lie in (0, 1)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    result = run(args)
    _print(result)
    out = Path(args.out)
    write_json(out, result)
    _plot(result, out.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
