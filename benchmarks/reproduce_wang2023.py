"""Reproduce Wang, Wu, Chen, Lui (2023), *Multi-Fidelity Multi-Armed Bandits Revisited*: Figure 1 and Table 3.

* **Figure 1** (Appendix B set-up): LUCB with EXPLORE-A vs EXPLORE-B on the Table 1 instance (Fig. 1a,
  K = 5, M = 3) and the Table 2 instance (Fig. 1b, K = 5, M = 5), δ ∈ {0.05, 0.10, 0.15, 0.20, 0.25},
  prior bounds µ̃1 = 0.95, µ̃2 = 0.75, 100 trials per point in the paper. The figure has no numbers; the
  paper's claim is qualitative: **A is cheaper on 1a, B is cheaper on 1b**.
* **Table 3** (Appendix C): EXPLORE-A, EXPLORE-B and the highest-fidelity baseline (``lucb-highest``) on
  ``µ_k^(m) = 0.1(k + 4) + 0.01(m − 5)``, ζ = (0.04, 0.03, 0.02, 0.01, 0), λ = (1, 2, 3, 4, 5·I) for cases
  I = 1..4, δ = 0.1, 100 trials. The prior bounds are not stated; we run the Appendix B values
  (0.95, 0.75) and the true values (0.9, 0.8) (App. C's true values satisfy the App. B bounds).

Unstated details, resolved as in :mod:`mf_sched.policies._mf_lucb`: Bernoulli rewards, ``L = 4KM``, ``t`` = LUCB round
index, random tie-breaking. Wang et al.'s LUCB needs ~10⁴–10⁶ pulls per run (Fig. 1b ≈ 1.5·10⁶) at tens of µs
per pull here, so the default run counts are below the paper's 100 trials; every count is printed and
stored. ``--quick`` is a CI-size check.

    python -m benchmarks.reproduce_wang2023 --quick      # Fig. 1a at 2 δ and Table 3 cases 1, 4; 2 runs each
    python -m benchmarks.reproduce_wang2023 --runs 10 --runs-true 5 --runs-1b 1 --jobs 2   # the defaults
    python -m benchmarks.reproduce_wang2023 --runs 100 --runs-true 100 --runs-1b 100       # the paper's sizes

Writes ``benchmarks/results/wang2023.json`` (+ ``.png``).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import cost_columns, pyplot, save_figure, write_json
from mf_sched import FidelityLadder, Instance, run_many

ROOT = Path(__file__).resolve().parents[1]

T1 = Instance(
    [[0.70, 0.80, 0.90], [0.75, 0.775, 0.80], [0.50, 0.60, 0.70], [0.50, 0.55, 0.60], [0.30, 0.45, 0.50]],
    FidelityLadder([1.0, 1.1, 1.2], [0.30, 0.15, 0.0]),
    {"kind": "bernoulli"},
    name="wang2023-table1",
)
T2 = Instance(
    [
        [0.83, 0.84, 0.85, 0.85, 0.90],
        [0.82, 0.83, 0.85, 0.86, 0.88],
        [0.76, 0.80, 0.80, 0.80, 0.86],
        [0.82, 0.80, 0.82, 0.80, 0.84],
        [0.70, 0.72, 0.74, 0.76, 0.80],
    ],
    FidelityLadder([1.0, 1.1, 1.2, 1.3, 1.4], [0.10, 0.08, 0.06, 0.04, 0.0]),
    {"kind": "bernoulli"},
    name="wang2023-table2",
)


def table3_instance(case: int) -> Instance:
    """Appendix C: µ_k^(m) = 0.1(k + 4) + 0.01(m − 5) (arm 5 best), ζ tight, λ = (1, 2, 3, 4, 5·case)."""
    mu = [[0.1 * (k + 4) + 0.01 * (m - 5) for m in range(1, 6)] for k in range(1, 6)]
    ladder = FidelityLadder([1.0, 2.0, 3.0, 4.0, 5.0 * case], [0.04, 0.03, 0.02, 0.01, 0.0])
    return Instance(mu, ladder, {"kind": "bernoulli"}, name=f"wang2023-appC-case{case}")


DELTAS = (0.05, 0.10, 0.15, 0.20, 0.25)
PRIOR_PAPER = {"mu1_upper": 0.95, "mu2_lower": 0.75}
PRIOR_TRUE = {"mu1_upper": 0.90, "mu2_lower": 0.80}
PRIORS = (("paper (0.95, 0.75)", PRIOR_PAPER), ("true (0.9, 0.8)", PRIOR_TRUE))
#: Table 3 of the paper (cost complexity × 10⁴, 100 trials)
PAPER_T3 = {
    "lucb-explore-a": [20.5, 20.0, 17.4, 17.4],
    "lucb-explore-b": [36.1, 47.9, 59.5, 69.4],
    "lucb-highest": [21.4, 42.0, 64.6, 86.2],
}


def _summ(s: Any) -> dict[str, Any]:
    return {**cost_columns(s), "lower_bound": s.lower_bound, "cost_over_lower_bound": s.cost_over_lower_bound}


def _run(name: str, inst: Instance, runs: int, delta: float, params: dict[str, Any], seed: int, jobs: int) -> Any:
    return run_many(
        name,
        inst,
        runs=runs,
        seed=seed,
        delta=delta,
        params=params,
        workers=None,
        completion="batch",
        n_jobs=jobs,
        progress=True,
        keep_results=False,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a few runs of a few points")
    ap.add_argument("--runs", type=int, default=10, help="runs per Fig. 1a point and Table 3 cell (paper: 100)")
    ap.add_argument("--runs-true", type=int, default=5, help="runs per Table 3 cell with the true priors")
    ap.add_argument("--runs-1b", type=int, default=1, help="runs per Fig. 1b point (≈1.5e6 pulls each)")
    ap.add_argument("--deltas-1b", type=float, nargs="+", default=[0.05, 0.25], help="δ values for Fig. 1b")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "wang2023.json")
    args = ap.parse_args(argv)
    if args.quick:  # Fig. 1b (≈1.5e6 pulls per run) is left out of the quick mode
        runs, runs1b, deltas_a, deltas_b, cases = 2, 0, (0.05, 0.25), (), (1, 4)
    else:
        runs, runs1b, deltas_a, deltas_b, cases = args.runs, args.runs_1b, DELTAS, tuple(args.deltas_1b), (1, 2, 3, 4)
    t0 = time.time()
    warnings.simplefilter("ignore")
    rep: dict[str, Any] = {
        "benchmark": "Wang et al. 2023, Figure 1 and Table 3",
        "noise": "bernoulli",
        "L": "4KM",
        "t": "LUCB round index",
        "seed": args.seed,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "fig1": {},
        "table3": {},
    }
    for label, inst, deltas, n in (("1a", T1, deltas_a, runs), ("1b", T2, deltas_b, runs1b)):
        if n < 1 or not deltas:
            continue
        pts = []
        for d in deltas:
            row: dict[str, Any] = {"delta": d}
            for name in ("lucb-explore-a", "lucb-explore-b"):
                row[name] = _summ(_run(name, inst, n, d, PRIOR_PAPER, args.seed, args.jobs))
            pts.append(row)
        rep["fig1"][label] = {"instance": inst.name, "runs": n, "points": pts}
    priors = (("paper (0.95, 0.75)", PRIOR_PAPER),) if args.quick else PRIORS
    for prior_name, prior in priors:
        cells: dict[str, Any] = {}
        for name in ("lucb-explore-a", "lucb-explore-b", "lucb-highest"):
            if name == "lucb-highest" and prior is PRIOR_TRUE:
                continue  # needs no prior
            cells[name] = {}
            n = runs if prior is PRIOR_PAPER else args.runs_true
            for case in cases:
                params = {} if name == "lucb-highest" else prior
                s = _run(name, table3_instance(case), n, 0.1, params, args.seed, args.jobs)
                cells[name][str(case)] = _summ(s)
        rep["table3"][prior_name] = cells
    rep["wall_s"] = time.time() - t0

    print("\nWang et al. 2023, Table 3: cost complexity x 1e4 (delta = 0.1; mean ± 95% CI), paper in brackets")
    for prior_name, cells in rep["table3"].items():
        print(f"prior bounds {prior_name}")
        for name, by_case in cells.items():
            parts = []
            for case in cases:
                c = by_case[str(case)]
                parts.append(
                    f"case {case}: {c['cost_mean'] / 1e4:6.1f} ± {c['cost_ci95'] / 1e4:4.1f} "
                    f"[{PAPER_T3[name][case - 1]:5.1f}]"
                )
            print(f"  {name:<15} " + "   ".join(parts) + f"   ({by_case[str(cases[0])]['runs']} runs)")
    print("\nFigure 1: mean cost, EXPLORE-A vs EXPLORE-B (paper: A cheaper on 1a, B cheaper on 1b)")
    for label, fig in rep["fig1"].items():
        for pt in fig["points"]:
            a, b = pt["lucb-explore-a"], pt["lucb-explore-b"]
            win = "A" if a["cost_mean"] < b["cost_mean"] else "B"
            print(
                f"  {label} delta={pt['delta']:.2f}: A {a['cost_mean']:.4g} ± {a['cost_ci95']:.2g}, "
                f"B {b['cost_mean']:.4g} ± {b['cost_ci95']:.2g} -> {win} cheaper "
                f"(errors {a['error_rate']:.2f}/{b['error_rate']:.2f}, {fig['runs']} runs)"
            )
    print(f"\nwall time {rep['wall_s']:.0f} s")
    write_json(args.out, rep)
    _plot(rep, cases, args.out.with_suffix(".png"))
    return 0


def _plot(rep: dict[str, Any], cases: tuple[int, ...], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, label in zip(axes[:2], ("1a", "1b")):
        if label not in rep["fig1"]:
            ax.set_axis_off()
            continue
        pts = rep["fig1"][label]["points"]
        ds = [p["delta"] for p in pts]
        for name, mk in (("lucb-explore-a", "o"), ("lucb-explore-b", "s")):
            m = np.array([p[name]["cost_mean"] for p in pts])
            sd = np.array([p[name]["cost_std"] if p[name]["cost_std"] == p[name]["cost_std"] else 0 for p in pts])
            ax.plot(ds, m, marker=mk, label=name)
            ax.fill_between(ds, m - sd, m + sd, alpha=0.2)
        ax.set_xlabel("δ")
        ax.set_ylabel("cost complexity")
        ax.set_title(f"Fig. {label} ({rep['fig1'][label]['runs']} runs/point)")
        ax.legend(fontsize=8)
    ax = axes[2]
    cells = rep["table3"]["paper (0.95, 0.75)"]
    w = 0.25
    for j, name in enumerate(("lucb-explore-a", "lucb-explore-b", "lucb-highest")):
        xs = np.arange(len(cases)) + (j - 1) * w
        ax.bar(xs, [cells[name][str(c)]["cost_mean"] / 1e4 for c in cases], w, label=name, alpha=0.8)
        ax.scatter(xs, [PAPER_T3[name][c - 1] for c in cases], color="k", marker="x", zorder=3)
    ax.set_xticks(np.arange(len(cases)), [f"case {c}" for c in cases])
    ax.set_ylabel("cost ×1e4 (x = paper)")
    ax.set_title("Table 3, priors (0.95, 0.75)")
    ax.legend(fontsize=7)
    save_figure(fig, path)


if __name__ == "__main__":
    sys.exit(main())
