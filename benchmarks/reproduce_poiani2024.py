"""Poiani et al. 2024 (*Optimal Multi-Fidelity Best-Arm Identification*): the tight lower bound, MF-GRAD
and GRAD against the best-arm identification policies of the seed papers, on the paper's instances.

The paper's figures' numbers could not be read; the reference numbers are those of the authors' released code
(``riccardopoiani/adv-mf-bai``) run at δ = 0.01, as listed in the data set's README (``$MF_SCHED_DATA``).

1. **Tight lower bounds** of every ``poiani2024-*.json`` instance: ``C*(µ)``, the same with fidelity M
   only (GRAD's target, ``λ_M T*``), the Wang et al. (2023) Thm 3.1 complexity, and the support of the
   optimal cost proportions.
2. **Comparison** (the issue's table): mean cost ± 95% CI, error rate and cost / tight lower bound of
   MF-GRAD, GRAD, IISE, IISE-γ, LUCB-EXPLORE-A/B (and the single-fidelity SE and LUCB1) at δ = 0.01 and
   0.001, with the authors' numbers beside ours. Policies are found by registry name; those not
   registered in this checkout are reported as missing. LUCB-EXPLORE-A/B get their prior bounds from
   the policy's ``example_params`` (true top-two means) and a pull cap (they may never stop, as on the
   ``lucb-nonstop`` instance). IISE runs with the theoretical radius of Poiani et al. (2022) and with the
   practical radius of the 2024 authors' code (``IISE.compute_ci``; their IISE numbers use it). The 2024
   instances give no γ; IISE-γ gets the instance's realised bias spread (an oracle value: its most
   favourable case; γ = 2ζ, the bound a user could state, makes it identical to IISE).
3. **Figures** as far as the paper's captions pin them down: cost boxplots on 4x5 and 5x2 (δ = 0.01; the paper
   uses 1,000 runs), MF-GRAD against MF-GRAD with the theoretical learning rate (appendix), and the
   empirical cost proportions ω̂(t) of MF-GRAD run without stopping on 5x2 (paper: 100,000 iterations,
   100 runs, 95% bands, every 50 iterations) against the optimal ω*.

    python -m benchmarks.reproduce_poiani2024 --quick
    python -m benchmarks.reproduce_poiani2024                        # full: 100 runs per cell
    python -m benchmarks.reproduce_poiani2024 --nonstop-runs 20 --proportion-runs 10 --proportion-iterations 20000

Prints tables, writes ``benchmarks/results/poiani2024.json`` and ``poiani2024.png``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import cost_columns, pyplot, save_figure, write_json
from mf_sched import Instance, get_policy, list_policies, load_instance, run_many
from mf_sched._progress import Progress
from mf_sched.policies.mf_grad import MFGrad
from mf_sched.sim.bounds import cost_lower_bound, instance_tight_lower_bound, tight_lower_bound
from mf_sched.sim.instance import published_instance_path

ROOT = Path(__file__).resolve().parents[1]
DATA = published_instance_path("poiani2024-5x2").parent  # the published instances shipped with mf-sched
INSTANCES = ["4x5", "5x2", "mu2", "mu3", "lucb-nonstop"]

# label -> candidate registry names (first registered wins), extra parameters
POLICIES: dict[str, tuple[list[str], dict[str, Any]]] = {
    "MF-GRAD": (["mf-grad"], {}),
    "MF-GRAD (lr theory)": (["mf-grad"], {"learning_rate": "theory"}),
    "GRAD": (["grad"], {}),
    "IISE": (["iise"], {}),
    "IISE (practical radius)": (["iise"], {"radius": "practical"}),
    "IISE-γ (oracle γ)": (["iise-gamma", "iise-g"], {}),
    "LUCB-EXPLORE-A": (["lucb-explore-a", "lucb-a", "lucb-explorea"], {}),
    "LUCB-EXPLORE-B": (["lucb-explore-b", "lucb-b", "lucb-exploreb"], {}),
    "SE": (["se"], {}),
    "LUCB1": (["lucb1"], {}),
}
CAPPED = ("LUCB-EXPLORE-A", "LUCB-EXPLORE-B")
# authors' released code, δ = 0.01, mean cost (40 runs on 4x5/5x2, 30 on mu2/mu3)
AUTHORS = {
    ("4x5", "MF-GRAD"): 84.5,
    ("4x5", "MF-GRAD (lr theory)"): 102.0,
    ("4x5", "GRAD"): 391.6,
    ("4x5", "IISE (practical radius)"): 196.1,
    ("5x2", "MF-GRAD"): 550.8,
    ("5x2", "MF-GRAD (lr theory)"): 800.8,
    ("5x2", "GRAD"): 877.0,
    ("5x2", "IISE (practical radius)"): 2301.6,
    ("mu2", "MF-GRAD"): 123.4,
    ("mu2", "MF-GRAD (lr theory)"): 141.7,
    ("mu2", "GRAD"): 192.8,
    ("mu2", "IISE (practical radius)"): 563.3,
    ("mu3", "MF-GRAD"): 53.5,
    ("mu3", "MF-GRAD (lr theory)"): 61.1,
    ("mu3", "GRAD"): 74.0,
    ("mu3", "IISE (practical radius)"): 85.2,
}
# an independent re-implementation of MF-GRAD made before this one (lr 0.25, 30 runs; 5 runs on lucb-nonstop)
REIMPLEMENTATION = {
    ("4x5", 0.001): 95.6,
    ("5x2", 0.001): 620.4,
    ("mu2", 0.001): 141.8,
    ("mu3", 0.001): 64.3,
    ("lucb-nonstop", 0.01): 41440.0,
}


def resolve(label: str, overrides: dict[str, str]) -> tuple[str | None, dict[str, Any]]:
    names, params = POLICIES[label]
    registered = list_policies()
    if label in overrides:
        return (overrides[label] if overrides[label] in registered else None), dict(params)
    for n in names:
        if n in registered:
            return n, dict(params)
    if label.startswith("LUCB-EXPLORE-"):  # any "lucb…explore…a" style name
        suffix = label[-1].lower()
        pat = re.compile(rf"^lucb.*explore.*{suffix}$|^lucb.*-{suffix}$")
        for n in registered:
            if pat.match(n):
                return n, dict(params)
    return None, dict(params)


def bounds_table(insts: dict[str, Instance]) -> list[dict[str, Any]]:
    rows = []
    for key, inst in insts.items():
        lb = instance_tight_lower_bound(inst, 0.01)
        sigma = inst.noise.sigma
        top_only = tight_lower_bound(inst.means[:, -1:], inst.ladder.costs[-1:], [0.0], 0.01, sigma=sigma)
        wang = cost_lower_bound(inst.means, inst.ladder.costs, inst.ladder.zeta, 0.01, sigma=sigma)
        rows.append(
            {
                "instance": key,
                "K": inst.K,
                "M": inst.M,
                "sigma": sigma,
                "c_star": lb.complexity,
                "c_star_top_fidelity_only": top_only.complexity,
                "wang_complexity": wang.complexity,
                "support": lb.optimal_fidelity(1e-4),
                "cost_proportions": lb.cost_proportions.tolist(),
                "initial_sweep_cost": inst.K * float(sum(inst.ladder.costs)),
            }
        )
    return rows


class _NoStop(MFGrad):
    """MF-GRAD without its stopping rule, to record ω̂(t) as the paper's 5x2 figure does (not registered)."""

    def _check_stop(self, rows: Any) -> None:
        pass


def proportions(inst: Instance, runs: int, iterations: int, every: int, seed: int) -> dict[str, Any]:
    """Empirical cost proportions ``λ_m N_{i,m}(t)/c_t`` of MF-GRAD on ``inst`` every ``every`` pulls."""
    lam = np.asarray(inst.ladder.costs)
    steps = iterations // every
    out = np.zeros((runs, steps, inst.K, inst.M))
    with Progress(runs, "ω̂(t) on 5x2", True) as bar:
        for r in range(runs):
            rng = np.random.default_rng([seed, r])
            p = _NoStop(inst.K, inst.ladder, noise=inst.policy_noise, delta=0.01, seed=r)
            sampler = inst.sampler(rng)
            for s in range(steps):
                for _ in range(every):
                    x = p.ask()
                    p.tell(x, sampler.draw_one(x.arm, x.fidelity))
                w = p.counts * lam
                out[r, s] = w / w.sum()
            bar.update()
    mean = out.mean(0)
    half = 1.96 * out.std(0, ddof=1) / math.sqrt(runs) if runs > 1 else np.zeros_like(mean)
    t = (np.arange(1, steps + 1) * every).tolist()
    return {"runs": runs, "t": t, "mean": mean.tolist(), "ci95": half.tolist()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="10 runs, 3 on lucb-nonstop, a short ω̂(t)")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--nonstop-runs", type=int, default=100, help="runs on lucb-nonstop (MF-GRAD: ~1e5 pulls each)")
    ap.add_argument("--deltas", type=float, nargs="*", default=[0.01, 0.001])
    ap.add_argument("--instances", nargs="*", default=INSTANCES)
    ap.add_argument("--policies", nargs="*", default=list(POLICIES), help="labels: " + ", ".join(POLICIES))
    ap.add_argument("--name", action="append", default=[], metavar="LABEL=NAME", help="registry name for a label")
    ap.add_argument("--lucb-max-pulls", type=int, default=200_000, help="pull cap of LUCB-EXPLORE-A/B (authors')")
    ap.add_argument("--proportion-runs", type=int, default=100)
    ap.add_argument("--proportion-iterations", type=int, default=100_000)
    ap.add_argument("--jobs", type=int, default=1, help="worker processes per cell")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "poiani2024.json"))
    ap.add_argument(
        "--merge", default=None, help="earlier JSON of this script: keep its cells (and ω̂) that are not re-run"
    )
    args = ap.parse_args(argv)
    if args.quick:
        args.runs, args.nonstop_runs = 10, 3
        args.proportion_runs, args.proportion_iterations = 3, 5000
    overrides = dict(s.split("=", 1) for s in args.name)
    insts = {k: load_instance(DATA / f"poiani2024-{k}.json") for k in INSTANCES}

    # 1. bounds (every instance: cheap)
    brows = bounds_table(insts)
    print("Tight lower bound (Poiani et al. 2024): C*(µ); the bound is C*·kl(δ,1−δ) ≈ C*·log(1/δ)")
    print(
        f"{'instance':<14}{'K×M':>6}{'C*':>11}{'C* fid M':>11}{'gain':>7}{'Wang':>10}{'C*/Wang':>9}  support (arm:fid)"
    )
    for r in brows:
        sup = " ".join(f"{i + 1}:{'/'.join(str(m + 1) for m in f)}" for i, f in enumerate(r["support"]))
        print(
            f"{r['instance']:<14}{r['K']}×{r['M']:<4}{r['c_star']:>11.5g}{r['c_star_top_fidelity_only']:>11.5g}"
            f"{r['c_star_top_fidelity_only'] / r['c_star']:>7.2f}{r['wang_complexity']:>10.4g}"
            f"{r['c_star'] / r['wang_complexity']:>9.2f}  {sup}"
        )
    cstar = {r["instance"]: r["c_star"] for r in brows}

    # 2. comparison
    labels = [lab for lab in args.policies if lab in POLICIES]
    resolved = {lab: resolve(lab, overrides) for lab in labels}
    missing = [lab for lab, (n, _) in resolved.items() if n is None]
    if missing:
        print(f"\nnot registered in this checkout (skipped): {', '.join(missing)}")
    cells = []
    for key in args.instances:
        for d in args.deltas:
            for lab in labels:
                name, _ = resolved[lab]
                if name is None or (lab == "MF-GRAD (lr theory)" and (d != 0.01 or key == "lucb-nonstop")):
                    continue
                cells.append((key, d, lab))
    rows: list[dict[str, Any]] = []
    per_run: dict[str, list[float]] = {}
    t_all = time.time()
    with Progress(len(cells), "cells", True) as bar:
        for key, d, lab in cells:
            name, params = resolved[lab]
            inst = insts[key]
            cls = get_policy(name)
            params = {**cls.example_params(inst), **params}
            if lab.startswith("IISE-γ"):  # the instance's realised bias spread: IISE-γ's most favourable γ
                bias = inst.means - inst.true_means[:, None]
                inst = Instance(inst.means, inst.ladder.with_gamma(np.ptp(bias, axis=0).tolist()), inst.noise)
                inst.name = key
            runs = args.nonstop_runs if key == "lucb-nonstop" else args.runs
            cap = args.lucb_max_pulls if lab in CAPPED else None
            t0 = time.time()
            try:
                s = run_many(
                    name,
                    inst,
                    runs=runs,
                    delta=d,
                    params=params,
                    seed=args.seed,
                    max_pulls=cap,
                    n_jobs=args.jobs,
                    progress=False,
                )
            except (ValueError, TypeError) as e:  # a policy that cannot run on this instance
                print(f"\n{lab} on {key}: {e}")
                bar.update()
                continue
            c = np.array([r.cost for r in s.results])
            per_run[f"{key}|{d}|{lab}"] = c.tolist()
            log_lb = cstar[key] * math.log(1 / d)
            rows.append(
                {
                    "instance": key,
                    "delta": d,
                    "policy": lab,
                    "registry_name": name,
                    "params": params,
                    **cost_columns(s),
                    "runs": runs,
                    "cost_median": s.cost_median,
                    "stop_reasons": s.stop_reasons,
                    "tight_lower_bound": s.tight_lower_bound,
                    "cost_over_tight_lower_bound": s.cost_over_tight_lower_bound,
                    "cost_over_c_star_log": s.cost_mean / log_lb,
                    "lower_bound": s.lower_bound,
                    "cost_over_lower_bound": s.cost_over_lower_bound,
                    "authors": AUTHORS.get((key, lab)) if d == 0.01 else None,
                    "reimplementation": REIMPLEMENTATION.get((key, d)) if lab == "MF-GRAD" else None,
                    "pull_cap": cap,
                    "wall_s": time.time() - t0,
                }
            )
            bar.update()
    if args.merge:  # cells of an earlier run that this one did not recompute
        old = json.loads(Path(args.merge).read_text())
        done = {(r["instance"], r["delta"], r["policy"]) for r in rows}
        kept = [r for r in old["rows"] if (r["instance"], r["delta"], r["policy"]) not in done]
        rows = sorted(
            rows + kept,
            key=lambda r: (INSTANCES.index(r["instance"]), -r["delta"], list(POLICIES).index(r["policy"])),
        )
        for k, v in old["per_run_cost"].items():
            per_run.setdefault(k, v)
        print(f"merged {len(kept)} cells from {args.merge}")
    print_table(rows, time.time() - t_all)

    # 3. cost proportions on 5x2
    prop = None
    if "5x2" in args.instances and args.proportion_runs > 0 and args.proportion_iterations >= 50:
        prop = proportions(insts["5x2"], args.proportion_runs, args.proportion_iterations, 50, args.seed)
    elif args.merge:
        prop = json.loads(Path(args.merge).read_text()).get("proportions")
    if prop is not None:
        last = np.array(prop["mean"][-1])
        opt = np.array(next(r for r in brows if r["instance"] == "5x2")["cost_proportions"])
        print(
            f"\n5x2, MF-GRAD without stopping, {prop['runs']} runs × {prop['t'][-1]} pulls: "
            f"ω̂ challengers at fidelity 1 {last[:4, 0].mean():.4f} each (ω* {opt[:4, 0].mean():.4f}), "
            f"at fidelity 2 {last[:4, 1].mean():.4f} (0); best arm at fidelity 2 {last[4, 1]:.4f} "
            f"(ω* {opt[4, 1]:.4f}), at fidelity 1 {last[4, 0]:.4f} (0)"
        )
    out = Path(args.out)
    meta = {k: getattr(args, k) for k in ("runs", "nonstop_runs", "deltas", "lucb_max_pulls", "seed")}
    meta.update(proportion_runs=args.proportion_runs, proportion_iterations=args.proportion_iterations)
    meta["missing_policies"] = missing
    write_json(out, {"meta": meta, "bounds": brows, "rows": rows, "per_run_cost": per_run, "proportions": prop})
    plot(out.with_suffix(".png"), rows, per_run, prop, brows)
    return 0


def print_table(rows: list[dict[str, Any]], elapsed: float) -> None:
    print(f"\n({elapsed:.0f} s)  cost mean ± 95% CI (sd); /LB = cost / (C*·kl(δ,1−δ)); ", end="")
    print("/C*log = cost / (C*·log 1/δ)")
    hdr = f"{'instance':<13}{'δ':>7} {'policy':<20}{'runs':>5}{'cost':>22}{'err':>7}{'/LB':>8}{'/C*log':>8}"
    hdr += f"{'authors':>9}  notes"
    print(hdr)
    for r in rows:
        cost = f"{r['cost_mean']:.4g} ± {r['cost_ci95']:.2g} ({r['cost_std']:.3g})"
        ref = r["authors"] or r["reimplementation"]
        refs = "" if ref is None else (f"{ref:.4g}" + ("" if r["authors"] else "*"))
        notes = "" if r["stop_reasons"] == {"done": r["runs"]} else str(r["stop_reasons"])
        lb = r["cost_over_tight_lower_bound"]
        print(
            f"{r['instance']:<13}{r['delta']:>7} {r['policy']:<20}{r['runs']:>5}{cost:>22}{r['error_rate']:>7.3f}"
            f"{lb if lb is None else format(lb, '.2f'):>8}{r['cost_over_c_star_log']:>8.2f}{refs:>9}  {notes}"
        )
    print("authors: the authors' code at δ = 0.01; * an independent re-implementation (lr 0.25, 30 runs)")


def plot(path: Path, rows: list[dict[str, Any]], per_run: dict[str, list[float]], prop: Any, brows: list) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    for ax, key in zip(axes[:2], ("4x5", "5x2")):
        labs = [r["policy"] for r in rows if r["instance"] == key and r["delta"] == 0.01]
        data = [per_run[f"{key}|0.01|{lab}"] for lab in labs]
        if data:
            ax.boxplot(data, showfliers=True)
            ax.set_xticks(np.arange(1, len(labs) + 1), labs, rotation=30, ha="right", fontsize=7)
            ax.set_yscale("log")
            c = next(b["c_star"] for b in brows if b["instance"] == key)
            ax.axhline(c * math.log(100), color="k", ls="--", lw=1, label="C*·log(1/δ)")
            for j, lab in enumerate(labs):
                if (key, lab) in AUTHORS:
                    ax.scatter([j + 1], [AUTHORS[(key, lab)]], marker="x", color="r", zorder=3)
            ax.legend(fontsize=7)
        ax.set_title(f"{key}, δ = 0.01: cost (× = authors' code mean)")
    ax = axes[2]
    if prop is not None:
        t = np.array(prop["t"])
        mean, half = np.array(prop["mean"]), np.array(prop["ci95"])
        opt = np.array(next(r for r in brows if r["instance"] == "5x2")["cost_proportions"])
        series = {
            "arms 1–4, fidelity 1 (each)": (mean[:, :4, 0].mean(1), half[:, :4, 0].mean(1), opt[:4, 0].mean()),
            "arms 1–4, fidelity 2 (each)": (mean[:, :4, 1].mean(1), half[:, :4, 1].mean(1), 0.0),
            "arm 5, fidelity 1": (mean[:, 4, 0], half[:, 4, 0], opt[4, 0]),
            "arm 5, fidelity 2": (mean[:, 4, 1], half[:, 4, 1], opt[4, 1]),
        }
        for (lab, (m, h, o)), col in zip(series.items(), ("C0", "C1", "C2", "C3")):
            ax.plot(t, m, color=col, label=lab)
            ax.fill_between(t, m - h, m + h, color=col, alpha=0.25)
            ax.axhline(o, color=col, ls=":", lw=1)
        ax.set_xscale("log")
        ax.set_xlabel("pulls")
        ax.set_ylabel("empirical cost proportion ω̂")
        ax.set_title("5x2: MF-GRAD ω̂(t) (dotted: ω*)")
        ax.legend(fontsize=7)
    save_figure(fig, path)


if __name__ == "__main__":
    sys.exit(main())
