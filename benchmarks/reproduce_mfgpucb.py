"""Reproduce Kandasamy et al. (2016), Fig. 3/8: simple regret S(Λ) vs capital, MF-GP-UCB vs GP-UCB.

The paper's claim (App. D, Fig. 8 and the main text's Fig. 3; the figures carry no numbers in the
text we have): MF-GP-UCB reaches a given simple regret with a fraction of GP-UCB's capital on the
synthetic functions Currin (2-D), Park (4-D), Borehole (8-D), Hartmann-3 and Hartmann-6, each with
costs λ(m) = 10^(m−1).

Protocol (App. B and D.2; the authors' released code where the text is silent): capital Λ = ``--capital`` × λ(M)
(default 100, the code's demo), the initialisation (Λ_0 = 10 λ(M)) counted in it; noiseless evaluations;
``S(c) = f⋆ − max`` of the fidelity-M values observed with cumulative cost ≤ c (undefined before the first
fidelity-M value); mean ± one standard error over seeds (the paper: 20 runs). Every policy option is the library
default (see ``mf_sched/policies/mf_gp_ucb.py``).

**Capital ratio.** For a target regret ``s`` we take the first capital at which each method's mean
curve is ≤ ``s``; the ratio is MF-GP-UCB's capital / GP-UCB's. Targets: GP-UCB's mean S at Λ/2 and
at Λ (its final level). A ratio < 1 means MF-GP-UCB needs less capital; "> x" means MF-GP-UCB did not
reach the target within Λ (x = Λ / GP-UCB's capital).

    python -m benchmarks.reproduce_mfgpucb --quick            # 3 seeds, Λ = 30 λ(M): a few minutes
    nice python -m benchmarks.reproduce_mfgpucb --seeds 20    # the paper's 20 seeds (long)

Writes ``benchmarks/results/mfgpucb.json`` (every run's curve included) and ``mfgpucb.png``.
"""

from __future__ import annotations

import os

# one BLAS thread per process: the GP matrices are small, and threads only fight on a shared machine
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks._common import meta, print_table, pyplot, run_jobs, save_figure, write_json  # noqa: E402
from mf_sched.continuous.functions import get_function  # noqa: E402
from mf_sched.registry import get_policy  # noqa: E402

FUNCTIONS = ["currin", "park", "borehole", "hartmann3", "hartmann6"]
METHODS = ["mf-gp-ucb", "gp-ucb"]
GRID = 200


def run_one(fname: str, method: str, seed: int, capital_mult: float) -> dict:
    f = get_function(fname)
    budget = capital_mult * f.costs[-1]
    policy = get_policy(method)(f.space, f.ladder, budget=budget, seed=seed)
    t0 = time.process_time()
    while not policy.done:
        pull = policy.ask()
        policy.tell(pull, f(policy.x(pull), pull.fidelity))
    cpu = time.process_time() - t0
    obs = policy.observations()
    top = obs["fidelity"] == f.M - 1
    best = np.maximum.accumulate(np.where(top, obs["value"], -np.inf))
    grid = np.linspace(0.0, budget, GRID + 1)
    idx = np.searchsorted(obs["cost"], grid, side="right") - 1
    regret = np.where(idx >= 0, f.f_star - best[np.maximum(idx, 0)], np.inf)
    return {
        "function": fname,
        "method": method,
        "seed": seed,
        "budget": budget,
        "cost": float(obs["cost"][-1]),
        "cpu_s": cpu,
        "n_evaluations": int(obs["value"].size),
        "per_fidelity": np.bincount(obs["fidelity"], minlength=f.M).tolist(),
        "zeta_checks": int(np.count_nonzero(obs["role"] == 2)),
        "final_regret": float(regret[-1]),
        "regret": [None if not np.isfinite(r) else float(r) for r in regret],
    }


def _task(args: tuple) -> dict:
    return run_one(*args)


def first_capital(grid: np.ndarray, curve: np.ndarray, target: float) -> float | None:
    ok = np.flatnonzero(np.isfinite(curve) & (curve <= target * (1 + 1e-12)))
    return None if ok.size == 0 else float(grid[ok[0]])


def summarise(runs: list[dict], fname: str, budget: float) -> dict:
    grid = np.linspace(0.0, budget, GRID + 1)
    out: dict = {"function": fname, "budget": budget, "grid": grid.tolist(), "methods": {}}
    curves = {}
    for method in METHODS:
        rs = [r for r in runs if r["function"] == fname and r["method"] == method]
        if not rs:
            continue
        R = np.array([[np.inf if v is None else v for v in r["regret"]] for r in rs])
        fin = np.all(np.isfinite(R), axis=0)
        mean = np.where(fin, np.mean(np.where(np.isfinite(R), R, 0.0), axis=0), np.nan)
        se = np.where(fin, np.std(np.where(np.isfinite(R), R, 0.0), axis=0, ddof=1) / np.sqrt(len(rs)), np.nan)
        curves[method] = mean
        out["methods"][method] = {
            "runs": len(rs),
            "mean": [None if np.isnan(v) else float(v) for v in mean],
            "se": [None if np.isnan(v) else float(v) for v in se],
            "final_mean": float(mean[-1]),
            "final_se": float(se[-1]),
            "cpu_s_mean": float(np.mean([r["cpu_s"] for r in rs])),
            "evaluations_mean": float(np.mean([r["n_evaluations"] for r in rs])),
            "per_fidelity_mean": np.mean([r["per_fidelity"] for r in rs], axis=0).tolist(),
        }
    ratios = {}
    if len(curves) == 2:
        gp, mf = curves["gp-ucb"], curves["mf-gp-ucb"]
        for label, at in (("gp_half", GRID // 2), ("gp_final", GRID)):
            ratios[label] = capital_ratio(grid, gp, mf, at, budget)
        # robustness check: the same on the median curves (one stuck seed moves a mean a lot)
        med = {}
        for method in METHODS:
            rs = [r for r in runs if r["function"] == fname and r["method"] == method]
            R = np.array([[np.inf if v is None else v for v in r["regret"]] for r in rs])
            med[method] = np.median(R, axis=0)
            out["methods"][method]["median"] = [None if not np.isfinite(v) else float(v) for v in med[method]]
        for label, at in (("gp_half_median", GRID // 2), ("gp_final_median", GRID)):
            ratios[label] = capital_ratio(grid, med["gp-ucb"], med["mf-gp-ucb"], at, budget)
    out["capital_ratio"] = ratios
    return out


def capital_ratio(grid: np.ndarray, gp: np.ndarray, mf: np.ndarray, at: int, budget: float) -> dict:
    """Capital each curve needs to reach GP-UCB's level at grid index ``at``, and their ratio."""
    target = float(gp[at])
    c_gp = first_capital(grid, gp, target)
    c_mf = first_capital(grid, mf, target)
    return {
        "target_regret": target,
        "capital_gp_ucb": c_gp,
        "capital_mf_gp_ucb": c_mf,
        "ratio": None if (c_mf is None or not c_gp) else c_mf / c_gp,
        "ratio_lower_bound": None if c_mf is not None or not c_gp else budget / c_gp,
    }


def fmt_ratio(r: dict) -> str:
    if r.get("ratio") is not None:
        return f"{r['ratio']:.2f}"
    if r.get("ratio_lower_bound") is not None:
        return f"> {r['ratio_lower_bound']:.2f}"
    return "n/a"


def plot(summaries: list[dict], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(1, len(summaries), figsize=(4.2 * len(summaries), 3.6), squeeze=False)
    for ax, s in zip(axes[0], summaries):
        grid = np.array(s["grid"])
        for method, color in (("mf-gp-ucb", "tab:blue"), ("gp-ucb", "tab:orange")):
            m = s["methods"].get(method)
            if not m:
                continue
            mean = np.array([np.nan if v is None else v for v in m["mean"]])
            se = np.array([np.nan if v is None else v for v in m["se"]])
            ax.plot(grid, mean, color=color, label=f"{method} ({m['runs']} runs)")
            ax.fill_between(grid, np.maximum(mean - se, 1e-12), mean + se, color=color, alpha=0.2)
        ax.set_yscale("log")
        ax.set_title(s["function"])
        ax.set_xlabel("capital Λ")
        ax.set_ylabel("simple regret S(Λ)")
        ax.legend(fontsize=7)
    save_figure(fig, path, dpi=110)


def run_all(args: argparse.Namespace) -> tuple[list[dict], float]:
    tasks = [(f, m, s, args.capital) for f in args.functions for m in METHODS for s in range(args.seeds)]
    t0 = time.time()
    runs = run_jobs(_task, tasks, args.jobs, "MF-GP-UCB reproduction", not args.no_progress)
    return runs, time.time() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--functions", nargs="+", default=FUNCTIONS)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--capital", type=float, default=100.0, help="capital Λ in units of λ(M) (default 100)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--quick", action="store_true", help="3 seeds, Λ = 30 λ(M)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "mfgpucb.json"))
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--summarise", metavar="JSON", help="re-summarise the runs of an earlier output; run nothing")
    args = ap.parse_args(argv)
    if args.quick:
        args.seeds, args.capital = min(args.seeds, 3), min(args.capital, 30.0)
    if args.summarise:
        old = json.loads(Path(args.summarise).read_text())
        runs = old["runs"]
        wall = float(old["wall_s"])
        args.seeds, args.capital = old["settings"]["seeds"], old["settings"]["capital_in_lambda_M"]
        args.functions = [f for f in args.functions if any(r["function"] == f for r in runs)]
    else:
        runs, wall = run_all(args)
    summaries = [summarise(runs, f, args.capital * get_function(f).costs[-1]) for f in args.functions]

    print(f"\nSimple regret S(Λ) at Λ = {args.capital:g} λ(M), mean ± s.e. over {args.seeds} seeds; capital ratio")
    print("MF-GP-UCB / GP-UCB to reach GP-UCB's mean regret at Λ/2 and at Λ (paper: MF-GP-UCB needs less,")
    print("i.e. ratio < 1, on every function — Fig. 3/8, no numbers in the text); also on the median curves\n")
    columns = [("function", "<10"), ("MF-GP-UCB S(Λ)", ">22"), ("GP-UCB S(Λ)", ">22"), ("ratio@Λ/2", ">10"),
               ("ratio@Λ", ">9"), ("median: @Λ/2", ">12"), ("@Λ", ">7"), ("MF evals/fid", ">20")]  # fmt: skip
    table = []
    for s in summaries:
        mf, gp = s["methods"]["mf-gp-ucb"], s["methods"]["gp-ucb"]
        r = s["capital_ratio"]
        table.append([s["function"], f"{mf['final_mean']:.4g} ± {mf['final_se']:.2g}",
                      f"{gp['final_mean']:.4g} ± {gp['final_se']:.2g}"]
                     + [fmt_ratio(r[k]) for k in ("gp_half", "gp_final", "gp_half_median", "gp_final_median")]
                     + ["/".join(f"{v:.0f}" for v in mf["per_fidelity_mean"])])  # fmt: skip
    print_table(columns, table, rule=True)
    print(
        f"\nwall time {wall:.0f} s; CPU per run (mean): "
        + ", ".join(
            f"{s['function']} {s['methods']['mf-gp-ucb']['cpu_s_mean']:.0f}/"
            f"{s['methods']['gp-ucb']['cpu_s_mean']:.0f} s"
            for s in summaries
        )
        + " (MF/GP)"
    )

    out = Path(args.out)
    payload = {
        "benchmark": "reproduce_mfgpucb",
        "paper": "Kandasamy et al. 2016, Fig. 3/8",
        "settings": {
            "seeds": args.seeds,
            "capital_in_lambda_M": args.capital,
            "functions": args.functions,
            "quick": args.quick,
        },
        "machine": meta(platform=platform.platform(), cpus=os.cpu_count()),
        "wall_s": wall,
        "summaries": summaries,
        "runs": runs,
    }
    write_json(out, payload)
    plot(summaries, out.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
