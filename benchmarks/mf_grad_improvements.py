"""Can MF-GRAD's burn-in at moderate δ be cut? Candidate improvements against the paper's MF-GRAD.

Variants of ``mf-grad`` (all with the paper's practical threshold and learning rate 0.25):

* ``paper``: the authors' algorithm (Poiani et al. 2024, as in their released code ``riccardopoiani/adv-mf-bai``);
* ``warm-start``: after the initial sweep the exponential weights start from the prior
  ``½ ω*(µ̃) + ½ uniform`` — ``ω*`` the optimal cost proportions of the lower bound for the plug-in model
  ``µ̃`` (the sweep's means projected on the model) — instead of the uniform iterate;
* ``cost-exploration``: forced exploration uniform over pairs in *cost* space (∝ 1/λ in pull space)
  instead of pull space: the same guarantee that every pair is sampled ∝ √t, at a fraction of the price
  when the top fidelity is expensive;
* ``both``.

Instances: the four published ones (``poiani2024-{4x5,5x2,mu2,mu3}.json``) and random ones from the
paper's generator (the authors' ``generate_rnd_cfg.py``: K = 4, M = 5; top means U(0, 1) with gaps to the best in [0.1,
0.4]; ``|µ_m − µ_M| ≤ ζ_m`` drawn uniformly; two families: "4x5-like" λ = (0.05, 0.1, 0.2, 0.4, 5), σ = 0.1
and "mu2-like" λ_M = 1, σ = 0.25). Every variant sees the same seeds. A variant is **kept** only if its
mean cost is lower than the paper's on the published instances *and* on the random ones (ratio of mean
costs, 95% bootstrap interval below 1) and its error rate stays within δ (binomial test at 1%).

    python -m benchmarks.mf_grad_improvements --quick
    python -m benchmarks.mf_grad_improvements --runs 100 --random-instances 30 --random-runs 20

Prints tables, writes ``benchmarks/results/mf_grad_improvements.json`` and a PNG.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

from benchmarks._common import pyplot, save_figure, write_json
from mf_sched import FidelityLadder, Instance, load_instance, run_many
from mf_sched._progress import Progress

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "instances"
VARIANTS = {
    "paper": {},
    "warm-start": {"warm_start": True},
    "cost-exploration": {"forced_exploration": "cost"},
    "both": {"warm_start": True, "forced_exploration": "cost"},
}
PUBLISHED = ["4x5", "5x2", "mu2", "mu3"]
ZETA = np.array([0.1, 0.08, 0.05, 0.025, 0.0])  # b_m + o_m/2 of the authors' generator
FAMILIES = {
    "4x5-like": ([0.05, 0.1, 0.2, 0.4, 5.0], 0.1),
    "mu2-like": ([0.05, 0.1, 0.2, 0.4, 1.0], 0.25),
}


def random_instance(rng: np.random.Generator, family: str, index: int) -> Instance:
    """The authors' ``generate_rnd_cfg.py`` (``riccardopoiani/adv-mf-bai``), K = 4, M = 5."""
    costs, sigma = FAMILIES[family]
    while True:
        top = rng.uniform(0, 1, 4)
        gaps = top.max() - np.delete(top, top.argmax())
        if np.all((gaps >= 0.1) & (gaps <= 0.4)):
            break
    means = top[:, None] + rng.uniform(-1, 1, (4, 5)) * ZETA[None, :]
    means[:, -1] = top
    return Instance(means, FidelityLadder(costs, ZETA), {"kind": "gaussian", "sigma": sigma}, name=f"{family}-{index}")


def ratio_ci(a: np.ndarray, b: np.ndarray, rng: np.random.Generator, n_boot: int = 2000) -> tuple[float, float, float]:
    """mean(a)/mean(b) with a 95% paired bootstrap interval (runs paired by seed)."""
    r = a.mean() / b.mean()
    idx = rng.integers(0, a.size, (n_boot, a.size))
    boots = a[idx].mean(1) / b[idx].mean(1)
    return float(r), float(np.quantile(boots, 0.025)), float(np.quantile(boots, 0.975))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="20 runs, 6 random instances of 10 runs")
    ap.add_argument("--runs", type=int, default=100, help="runs per published instance")
    ap.add_argument("--random-instances", type=int, default=30, help="random instances (half per family)")
    ap.add_argument("--random-runs", type=int, default=20, help="runs per random instance")
    ap.add_argument("--delta", type=float, default=0.01)
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "mf_grad_improvements.json"))
    args = ap.parse_args(argv)
    if args.quick:
        args.runs, args.random_instances, args.random_runs = 20, 6, 10
    delta = args.delta
    rng = np.random.default_rng(args.seed)
    instances = [(f"poiani2024-{n}", load_instance(DATA / f"poiani2024-{n}.json"), args.runs) for n in PUBLISHED]
    fams = list(FAMILIES)
    for j in range(args.random_instances):
        inst = random_instance(rng, fams[j % 2], j)
        instances.append((inst.name, inst, args.random_runs))
    costs: dict[str, dict[str, np.ndarray]] = {v: {} for v in args.variants}
    errors: dict[str, dict[str, int]] = {v: {} for v in args.variants}
    rows = []
    t0 = time.time()
    with Progress(len(instances) * len(args.variants), "mf-grad variants", True) as bar:
        for name, inst, runs in instances:
            for v in args.variants:
                s = run_many(
                    "mf-grad", inst, runs=runs, delta=delta, params=VARIANTS[v], seed=args.seed, progress=False
                )
                c = np.array([r.cost for r in s.results])
                costs[v][name] = c
                errors[v][name] = int(round(s.error_rate * runs))
                rows.append(
                    {
                        "instance": name,
                        "variant": v,
                        "runs": runs,
                        "cost_mean": float(c.mean()),
                        "cost_ci95": float(s.cost_ci95),
                        "errors": errors[v][name],
                        "cost_over_tight_lower_bound": s.cost_over_tight_lower_bound,
                    }
                )
                bar.update()
    elapsed = time.time() - t0
    brng = np.random.default_rng(1)
    print(f"\nδ = {delta}; mean cost (errors / runs); ratio to 'paper' with 95% paired bootstrap interval")
    print(f"{'instance':<18}" + "".join(f"{v:>26}" for v in args.variants))
    for name, _, runs in instances[: len(PUBLISHED)]:
        cells = []
        for v in args.variants:
            c = costs[v][name]
            if v == "paper":
                cells.append(f"{c.mean():9.1f} ({errors[v][name]}/{runs})")
            else:
                r, lo, hi = ratio_ci(c, costs["paper"][name], brng)
                cells.append(f"{c.mean():8.1f} ×{r:.3f} [{lo:.2f},{hi:.2f}]")
        print(f"{name:<18}" + "".join(f"{x:>26}" for x in cells))
    summary = {}
    for group, names in (
        ("published", [n for n, _, _ in instances[: len(PUBLISHED)]]),
        ("random", [n for n, _, _ in instances[len(PUBLISHED) :]]),
    ):
        if not names:
            continue
        print(f"\n{group}: geometric mean over instances of the cost ratio to 'paper'; errors / runs")
        for v in args.variants:
            ratios = np.array([costs[v][n].mean() / costs["paper"][n].mean() for n in names])
            # bootstrap over instances and runs: resample runs within each instance
            boots = []
            for _ in range(400):
                rr = []
                for n in names:
                    k = costs[v][n].size
                    i = brng.integers(0, k, k)
                    rr.append(costs[v][n][i].mean() / costs["paper"][n][i].mean())
                boots.append(np.exp(np.mean(np.log(rr))))
            gm = float(np.exp(np.log(ratios).mean()))
            lo, hi = (float(x) for x in np.quantile(boots, [0.025, 0.975]))
            n_err = sum(errors[v][n] for n in names)
            n_runs = sum(costs[v][n].size for n in names)
            p_err = float(stats.binomtest(n_err, n_runs, delta, alternative="greater").pvalue)
            summary.setdefault(group, {})[v] = {
                "geo_mean_ratio": gm,
                "ci95": [lo, hi],
                "errors": n_err,
                "runs": n_runs,
                "p_error_above_delta": p_err,
                "per_instance_ratio": dict(zip(names, ratios.tolist())),
            }
            print(f"  {v:<18} ×{gm:.3f} [{lo:.3f}, {hi:.3f}]   errors {n_err}/{n_runs} (p(err > δ) = {p_err:.2f})")
    verdict = {}
    for v in args.variants:
        if v == "paper":
            continue
        ok = all(summary[g][v]["ci95"][1] < 1.0 and summary[g][v]["p_error_above_delta"] > 0.01 for g in summary)
        verdict[v] = "keep" if ok else "reject"
    print("\nverdict (cost lower on published AND random, 95% interval below 1; error within δ):", verdict)
    print(f"({elapsed:.0f} s)")
    out = Path(args.out)
    meta = {"delta": delta, "runs": args.runs, "random_instances": args.random_instances}
    meta.update(random_runs=args.random_runs, variants=VARIANTS, seed=args.seed, elapsed_s=elapsed)
    write_json(out, {"meta": meta, "rows": rows, "summary": summary, "verdict": verdict})
    plt = pyplot()
    if plt is None:
        return 0
    fig, ax = plt.subplots(figsize=(8, 4))
    names = [n for n, _, _ in instances]
    for j, v in enumerate(x for x in args.variants if x != "paper"):
        r = [costs[v][n].mean() / costs["paper"][n].mean() for n in names]
        ax.scatter(np.arange(len(names)) + 0.15 * j, r, label=v, s=14)
    ax.axhline(1.0, color="k", lw=1)
    ax.axvline(len(PUBLISHED) - 0.5, color="grey", ls=":")
    ax.set_xticks(np.arange(len(names)), names, rotation=90, fontsize=6)
    ax.set_ylabel("mean cost / paper's MF-GRAD")
    ax.set_title(f"MF-GRAD variants, δ = {delta}")
    ax.legend(fontsize=7)
    save_figure(fig, out.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
