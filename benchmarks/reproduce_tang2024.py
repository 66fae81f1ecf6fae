"""Reproduce Tang, Jain, Nayyar, Nuzzo (2024): error probability of SFSR, SFSR-L and USLP vs the budget N.

Instances (:func:`mf_sched.constrained.tang2024_instance`):

* the six L = 2, K = 24 instances of Appendix C, **Table 1, exactly** (D1P, D2P, D3P, D1I, D2I, D3I;
  Fig. 5 of the paper, 5,000 runs per point);
* **stand-ins** for the L = 1, K = 16 instances of Figs. 2–3, whose means the paper shows only as
  plots: A1–A3-standin (random instances of the documented types) and H2-standin (the structure of
  Appendix A). They are labelled as stand-ins everywhere; they are not the paper's instances.

Noise σ_r = 1, σ_c = 0.5 (the paper's). Error = the output support (slacks included) differs from the
optimal support I*, or "infeasible" is output (strict criterion of Tang et al. 2024, §2); 95%
Wilson intervals. The paper gives **no numbers** for any figure (the plots were lost in the text, and
the text states only qualitative claims), so the table prints the claims beside our rates:
(1) on A1–A3 SFSR and SFSR-L clearly beat USLP and are nearly indistinguishable; (2) on H2 SFSR-L fails;
(3) on the L = 2 instances SFSR-L is equal to or slightly better than SFSR. Every run counts its pulls
and asserts ``≤ N`` (Proposition 1); the mean pulls used are reported (SFSR leaves budget unused).

Each (instance, algorithm, N) point uses its own root seed. By default each round's pulls are drawn as
sufficient statistics (``fast=True`` of :func:`mf_sched.constrained.run_many_constrained`: per arm the
sum of its T pulls ~ N(T·mean, T·σ²), exact in distribution for the paper's Gaussian noise), so a run
costs the same at any N and decisions go through the policies' own scoring and rejection code;
``--protocol`` drives every pull through ask/tell instead (same distribution, ~2.5 µs per pull).

    python -m benchmarks.reproduce_tang2024 --quick          # a few minutes
    python -m benchmarks.reproduce_tang2024                  # full mode: 5,000 runs per point (hours)
    python -m benchmarks.reproduce_tang2024 --runs 300 --jobs 2 --instances D1P D2I
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
import zlib
from pathlib import Path

from benchmarks._common import pyplot, save_figure, write_json
from mf_sched.constrained import run_many_constrained, tang2024_instance

ALGOS = {"SFSR": ("sfsr", {"score": "iv"}), "SFSR-L": ("sfsr", {"score": "lagrangian"}), "USLP": ("uslp", {})}
L2 = ["D1P", "D2P", "D3P", "D1I", "D2I", "D3I"]
L1 = ["A1-standin", "A2-standin", "A3-standin", "H2-standin"]
BUDGETS = {2: [10_000, 20_000, 40_000, 80_000, 160_000], 1: [2_000, 5_000, 10_000, 20_000, 40_000]}
QUICK_BUDGETS = {2: [10_000, 40_000], 1: [10_000, 40_000]}
CLAIMS = {
    **{n: "Fig. 5: SFSR-L <= SFSR (equal or slightly better); no numbers in the text" for n in L2},
    **{n: "Fig. 2 (A1-A3): SFSR ~ SFSR-L, both clearly below USLP (stand-in instance)" for n in L1[:3]},
    "H2-standin": "Fig. 3 (H2): SFSR-L fails (Appendix A); stand-in instance",
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="200 runs, two budgets, D1P D3P D2I H2-standin")
    ap.add_argument("--runs", type=int, default=None, help="runs per point (full: 5000, quick: 200)")
    ap.add_argument("--instances", nargs="*", default=None, help=f"subset of {L2 + L1}")
    ap.add_argument("--budgets", nargs="*", type=int, default=None, help="override the budget grid N")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="benchmarks/results/reproduce_tang2024.json")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--protocol", action="store_true", help="every pull through ask/tell (slow at large N)")
    args = ap.parse_args(argv)
    runs = args.runs or (200 if args.quick else 5000)
    names = args.instances or (["D1P", "D3P", "D2I", "H2-standin"] if args.quick else L2 + L1)
    points = []
    t_start = time.perf_counter()
    for name in names:
        inst = tang2024_instance(name)
        grid = args.budgets or (QUICK_BUDGETS if args.quick else BUDGETS)[inst.L]
        for N in grid:
            row = {"instance": name, "L": inst.L, "K": inst.K, "N": N, "claim": CLAIMS[name]}
            for label, (pol, params) in ALGOS.items():
                seed = zlib.crc32(f"{args.seed}/{name}/{label}/{N}".encode())
                t0 = time.perf_counter()
                s = run_many_constrained(
                    pol,
                    inst,
                    pull_budget=N,
                    runs=runs,
                    seed=seed,
                    params=params,
                    n_jobs=args.jobs,
                    progress=not args.no_progress,
                    keep_results=False,
                    fast=not args.protocol,
                )
                assert s.pulls_max <= N, f"{label} used {s.pulls_max} > N = {N} pulls"
                row[label] = {
                    "error_rate": s.error_rate,
                    "ci95": list(s.error_ci95),
                    "infeasible_rate": s.infeasible_rate,
                    "pulls_mean": s.pulls_mean,
                    "regret_mean": s.regret_mean,
                    "violation_rate": s.violation_rate,
                    "seconds": time.perf_counter() - t0,
                }
            points.append(row)
            print(_fmt(row), flush=True)
    total = time.perf_counter() - t_start
    out = {
        "paper": "Tang, Jain, Nayyar, Nuzzo 2024 (arXiv 2405.15090), Figs. 2, 3, 5 and Table 1",
        "runs_per_point": runs,
        "simulation": "per-pull ask/tell" if args.protocol else "sufficient statistics per round (exact in law)",
        "noise": {"sigma_reward": 1.0, "sigma_cost": 0.5},
        "criterion": "output support (slacks included) != optimal support, or 'infeasible' output",
        "paper_runs_per_point": {"L=1": 10_000, "L=2": 5_000},
        "points": points,
        "instances": {n: _describe(n) for n in names},
        "seconds": total,
        "machine": platform.platform(),
        "python": sys.version.split()[0],
    }
    path = Path(args.out)
    print(f"\n{len(points)} points x 3 algorithms x {runs} runs in {total:.0f} s")
    write_json(path, out)
    _plot(points, path.with_suffix(".png"))
    return 0


def _describe(name: str) -> dict:
    inst = tang2024_instance(name)
    return {
        "source": inst.source,
        "optimum": inst.optimum.to_dict(),
        "assumption": inst.assumption.to_dict(),
    }


def _fmt(row: dict) -> str:
    cells = []
    for label in ALGOS:
        r = row[label]
        cells.append(
            f"{label} {r['error_rate']:.4f} [{r['ci95'][0]:.3f},{r['ci95'][1]:.3f}] pulls {r['pulls_mean']:.0f}"
        )
    return f"{row['instance']:<11} N={row['N']:>7}  " + "  |  ".join(cells) + f"   paper: {row['claim']}"


def _plot(points: list[dict], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    names = list(dict.fromkeys(p["instance"] for p in points))
    cols = min(4, len(names))
    rows = (len(names) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.2 * rows), squeeze=False)
    for ax, name in zip(axes.ravel(), names):
        pts = [p for p in points if p["instance"] == name]
        for label, style in zip(ALGOS, ("o-", "s--", "^:")):
            x = [p["N"] for p in pts]
            y = [max(p[label]["error_rate"], 1e-4) for p in pts]
            lo = [max(p[label]["ci95"][0], 1e-4) for p in pts]
            hi = [max(p[label]["ci95"][1], 1e-4) for p in pts]
            ax.errorbar(
                x, y, yerr=[[a - b for a, b in zip(y, lo)], [b - a for a, b in zip(y, hi)]], fmt=style, label=label
            )
        ax.set_yscale("log")
        ax.set_title(name + (" (stand-in)" if "standin" in name else " (Table 1)"), fontsize=9)
        ax.set_xlabel("budget N")
        ax.set_ylabel("error rate")
        ax.grid(alpha=0.3)
    for ax in axes.ravel()[len(names) :]:
        ax.axis("off")
    axes[0, 0].legend(fontsize=8)
    save_figure(fig, path)


if __name__ == "__main__":
    sys.exit(main())
