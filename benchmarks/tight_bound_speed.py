"""Time of the tight lower bound (Poiani et al. 2024): the reference cutting planes vs the decomposition.

``mf-sched simulate --delta`` spends its time in :func:`mf_sched.sim.bounds.instance_tight_lower_bound` at large K
(issue 19, defect 3). For random instances from Poiani et al. (2022)'s generator (corrected;
``Instance.synthetic``, M = 3 fidelities with costs 1, 10, 100) at each K this script solves the bound with

* ``method="cutting-plane"`` (the reference: Kelley's method with one LP in all K·M shares per iteration;
  the method before issue 19), with a time limit and only up to ``--reference-max-k`` (one LP at
  K = 100,000 alone takes minutes), and
* ``method="decomposition"`` (the fast solver, what ``method="auto"`` uses beyond K·M = 1,000),

in the same process, and reports wall and CPU seconds, their ratio, both values of ``C*`` and the certified
gaps. Prints a table, writes JSON and a PNG plot.

    python -m benchmarks.tight_bound_speed                              # K = 1,000, 10,000, 100,000
    python -m benchmarks.tight_bound_speed --arms 1000 3000 --reference-limit 60
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from benchmarks._common import meta, pyplot, save_figure, write_json
from mf_sched import Instance
from mf_sched._progress import Progress
from mf_sched.sim.bounds import tight_lower_bound

COSTS, OFFSETS, GAMMA = [1, 10, 100], [1.0, 0.2, 0.0], [0.3, 0.05, 0.0]


def _time(inst: Instance, method: str, limit: float | None) -> dict:
    mu, lad = inst.means, inst.ladder
    w0, c0 = time.perf_counter(), time.process_time()
    lb = tight_lower_bound(mu, lad.costs, lad.zeta, 0.05, sigma=1.0, method=method, time_limit=limit)
    return {
        "method": method,
        "wall_s": time.perf_counter() - w0,
        "cpu_s": time.process_time() - c0,
        "complexity": lb.complexity,
        "gap": lb.gap,
        "iterations": lb.iterations,
        "timed_out": lb.timed_out,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arms", nargs="*", type=int, default=[1000, 10_000, 100_000])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reference-limit", type=float, default=600.0, help="seconds for the reference method")
    ap.add_argument("--reference-max-k", type=int, default=10_000, help="largest K given to the reference")
    ap.add_argument("--out", default="benchmarks/results/tight_bound_speed.json")
    args = ap.parse_args(argv)
    rows = []
    with Progress(len(args.arms), "tight bound", True) as bar:
        for K in args.arms:
            inst = Instance.synthetic(K, COSTS, OFFSETS, GAMMA, seed=args.seed)
            fast = _time(inst, "decomposition", None)
            ref = _time(inst, "cutting-plane", args.reference_limit) if K <= args.reference_max_k else None
            row = {"K": K, "M": inst.M, "decomposition": fast, "cutting_plane": ref}
            if ref is not None:
                row["wall_ratio"] = ref["wall_s"] / fast["wall_s"]
                row["cpu_ratio"] = ref["cpu_s"] / fast["cpu_s"]
                row["relative_difference"] = abs(ref["complexity"] - fast["complexity"]) / ref["complexity"]
            rows.append(row)
            bar.update()
    head = f"{'K':>8}  {'reference s (cpu)':>20}  {'ref gap':>8}  {'decomposition s (cpu)':>22}  {'gap':>8}  "
    print(head + f"{'speed-up (cpu)':>15}  {'|ΔC*|/C*':>9}")
    for r in rows:
        f, c = r["decomposition"], r["cutting_plane"]
        ref = "not run" if c is None else f"{c['wall_s']:.2f} ({c['cpu_s']:.2f})" + (" ⏱" if c["timed_out"] else "")
        ref_gap = "" if c is None else f"{c['gap']:.1e}"
        speed = "" if c is None else f"{r['wall_ratio']:.1f} ({r['cpu_ratio']:.1f})"
        diff = "" if c is None else f"{r['relative_difference']:.1e}"
        print(
            f"{r['K']:>8}  {ref:>20}  {ref_gap:>8}  {f['wall_s']:>12.2f} ({f['cpu_s']:.2f}){'':>3}  {f['gap']:>8.1e}  "
            f"{speed:>15}  {diff:>9}"
        )
    print("⏱: the reference stopped at its time limit (its value is then a looser valid bound)")
    out = Path(args.out)
    instance = f"Instance.synthetic(K, {COSTS}, {OFFSETS}, {GAMMA}, seed={args.seed}), sigma = 1"
    info = meta(instance=instance, reference_limit_s=args.reference_limit, reference_max_k=args.reference_max_k)
    write_json(out, {"meta": info, "rows": rows})
    plt = pyplot()
    if plt is None:
        return 0
    fig, ax = plt.subplots(figsize=(6, 4))
    ks = [r["K"] for r in rows]
    ax.loglog(ks, [r["decomposition"]["wall_s"] for r in rows], "o-", label="decomposition")
    ref = [(r["K"], r["cutting_plane"]["wall_s"]) for r in rows if r["cutting_plane"] is not None]
    if ref:
        ax.loglog(*zip(*ref), "s--", label="cutting planes (reference)")
    ax.set_xlabel("arms K (M = 3)")
    ax.set_ylabel("wall time (s)")
    ax.set_title("tight lower bound C*(µ)")
    ax.legend()
    save_figure(fig, out.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
