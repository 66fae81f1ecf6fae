"""Reproduce Table 1 of Poiani, Metelli, Restelli (2022), *Multi-Fidelity Best-Arm Identification*.

Cost complexity of MFE, IISE and IISE-γ as a percentage of Successive Elimination's (SE = 100), on the
released instances (``poiani2022-{synthetic-a,synthetic-b,yahtzee}``, shipped in ``mf_sched/data/instances``),
δ = 0.001. As in the authors' ``result_reading.py`` the percentage is computed per run,
``100 · cost(alg, run r) / cost(SE, run r)`` (runs paired by index, independent seeds), and reported as
mean ± 1.96·sd/√n. MFE uses ``α_m = c·ξ_m`` with c = 0.1 (Synthetic A/B) and c = 0.005 (Yahtzee), the values
that reproduce the paper (§7 does not give MFE's thresholds). Each domain is also run noise-free (observations =
means; the policies keep their σ): those percentages are deterministic and checked against our recomputation.

SE runs through :func:`mf_sched.run_policy` (one round per step); IISE, IISE-γ and MFE through
:mod:`mf_sched.sim.iise_runner` (vectorised, exact; see its docstring for the certified phase skips that
replace the authors' "options" shortcut on Yahtzee).

    python -m benchmarks.reproduce_poiani2022 --quick          # 5 runs per domain (~1 min)
    python -m benchmarks.reproduce_poiani2022 --runs 100       # the paper's protocol
    python -m benchmarks.reproduce_poiani2022 --runs 30 --jobs 2 --domains synthetic-a yahtzee

Writes ``benchmarks/results/poiani2022_table1.json`` (+ ``.png``) and prints the table with the paper's
numbers beside ours.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import pyplot, run_jobs, save_figure, write_json
from mf_sched import Instance, policy_for, run_policy
from mf_sched.policies.iise import check_assumption1
from mf_sched.sim.bounds import instance_lower_bound
from mf_sched.sim.iise_runner import FastStats, run_iise_fast
from mf_sched.sim.instance import load_instance, published_instance_path

ROOT = Path(__file__).resolve().parents[1]
DATA = published_instance_path("poiani2022-yahtzee").parent  # the published instances shipped with mf-sched
DELTA = 0.001
DOMAINS = {
    "synthetic-a": ("poiani2022-synthetic-a.json", 0.1),
    "synthetic-b": ("poiani2022-synthetic-b.json", 0.1),
    "yahtzee": ("poiani2022-yahtzee.json", 0.005),
}
POLICIES = ("iise-max-exploit", "iise", "iise-gamma")
#: Table 1 of the paper: % of SE, mean and 95% CI over 100 runs. The Yahtzee IISE-γ cell is garbled in
#: the extracted text ("0.001 0.01"); we read it as 0.01 ± 0.001 (our noise-free recomputation gives ≈ 0.008).
PAPER = {
    "synthetic-a": {"iise-max-exploit": (212.43, 3.89), "iise": (11.47, 0.31), "iise-gamma": (2.53, 0.06)},
    "synthetic-b": {"iise-max-exploit": (3330.27, 62.59), "iise": (27.06, 0.77), "iise-gamma": (6.39, 0.17)},
    "yahtzee": {"iise-max-exploit": (342.75, 0.69), "iise": (0.53, 0.01), "iise-gamma": (0.01, 0.001)},
}
#: noise-free percentages recomputed independently of this script, for the deterministic check
NOISE_FREE_REFERENCE = {
    "synthetic-a": {"iise-max-exploit": 202.5, "iise": 10.9, "iise-gamma": 2.42},
    "synthetic-b": {"iise-max-exploit": 3206.0, "iise": 26.3, "iise-gamma": 6.13},
    "yahtzee": {"iise-max-exploit": 342.97, "iise": 0.532, "iise-gamma": 0.0080},
}


def _params(name: str, c: float) -> dict[str, Any]:
    return {"c": c} if name == "iise-max-exploit" else {}


def _job(args: tuple[str, str, int, int, bool]) -> dict[str, Any]:
    """One run of one policy on one domain (picklable, for the process pool)."""
    domain, name, run, seed, noise_free = args
    file, c = DOMAINS[domain]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inst = load_instance(DATA / file, warn=False)
    sim = Instance(inst.means, inst.ladder, {"kind": "gaussian", "sigma": 1e-300}) if noise_free else inst
    pol_seed, obs_seed = np.random.SeedSequence([seed, run, sorted(DOMAINS).index(domain)]).spawn(2)
    policy = policy_for(name, inst, delta=DELTA, seed=int(pol_seed.generate_state(1)[0]), **_params(name, c))
    t0 = time.process_time()
    st = FastStats()
    if name == "se":
        res = run_policy(policy, sim, workers=None, completion="batch", seed=obs_seed)
    else:
        res = run_iise_fast(policy, sim, seed=obs_seed, stats_out=st)
    return {
        "domain": domain,
        "policy": name,
        "run": run,
        "cost": res.cost,
        "correct": res.correct,
        "certified": res.recommendation.certified,
        "stop_phase": int(getattr(policy, "phase", inst.M - 1)) + 1,
        "pulls_per_fidelity": res.pulls_per_fidelity,
        "cpu_s": time.process_time() - t0,
        "tv_bound": st.tv_bound,
        "skipped_rounds": st.skipped_rounds,
    }


def _ci(x: np.ndarray) -> tuple[float, float]:
    """Mean and 1.96·sd/√n (the authors' CI)."""
    if x.size < 2:
        return float(x.mean()), float("nan")
    return float(x.mean()), float(1.96 * x.std(ddof=1) / math.sqrt(x.size))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="5 runs per domain")
    ap.add_argument("--runs", type=int, default=100, help="runs per domain and policy (paper: 100)")
    ap.add_argument("--domains", nargs="+", choices=sorted(DOMAINS), default=list(DOMAINS))
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "poiani2022_table1.json")
    args = ap.parse_args(argv)
    runs = 5 if args.quick else args.runs
    if runs < 1:
        ap.error("--runs must be >= 1")
    t_start = time.time()

    nf_jobs = [(d, p, 0, args.seed, True) for d in args.domains for p in ("se", *POLICIES)]
    noise_free = run_jobs(_job, nf_jobs, args.jobs, "noise-free")
    jobs = [(d, p, r, args.seed, False) for d in args.domains for r in range(runs) for p in ("se", *POLICIES)]
    results = run_jobs(_job, jobs, args.jobs, f"table 1 x{runs}")

    report: dict[str, Any] = {
        "benchmark": "Poiani et al. 2022, Table 1 (cost as % of SE)",
        "delta": DELTA,
        "runs": runs,
        "seed": args.seed,
        "ci": "1.96 * sd / sqrt(runs), per-run ratios paired by index (authors' result_reading.py)",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "domains": {},
    }
    for d in args.domains:
        file, c = DOMAINS[d]
        inst = load_instance(DATA / file, warn=False)
        se_nf = next(r for r in noise_free if r["domain"] == d and r["policy"] == "se")["cost"]
        se = np.array(sorted((r["run"], r["cost"]) for r in results if r["domain"] == d and r["policy"] == "se"))[:, 1]
        lb = instance_lower_bound(inst, DELTA)
        dom: dict[str, Any] = {
            "instance": file,
            "K": inst.K,
            "M": inst.M,
            "mfe_c": c,
            "se_cost": {"mean": float(se.mean()), "noise_free": se_nf},
            "lower_bound": lb.value,
            "lower_bound_note": lb.note,
            "assumption1": {
                "zeta": check_assumption1(inst.ladder.costs, inst.ladder.zeta).to_dict(),
                "gamma": check_assumption1(inst.ladder.costs, inst.ladder.gamma, name="gamma").to_dict(),
            },
            "policies": {},
        }
        for p in ("se", *POLICIES):
            rows = sorted((r for r in results if r["domain"] == d and r["policy"] == p), key=lambda r: r["run"])
            cost = np.array([r["cost"] for r in rows])
            pct = 100.0 * cost / se
            m, ci = _ci(pct)
            nf = next(r for r in noise_free if r["domain"] == d and r["policy"] == p)
            dom["policies"][p] = {
                "percent_of_se": {"mean": m, "ci95": ci},
                "paper": None if p == "se" else {"mean": PAPER[d][p][0], "ci95": PAPER[d][p][1]},
                "noise_free_percent": 100.0 * nf["cost"] / se_nf,
                "noise_free_reference_percent": NOISE_FREE_REFERENCE[d].get(p),
                "cost_mean": float(cost.mean()),
                "cost_over_lower_bound": float(cost.mean() / lb.value) if lb.value else None,
                "error_rate": float(np.mean([not r["correct"] for r in rows])),
                "certified_rate": float(np.mean([r["certified"] for r in rows])),
                "stop_phase": {str(k): int(v) for k, v in zip(*np.unique([r["stop_phase"] for r in rows], True))},
                "noise_free_stop_phase": nf["stop_phase"],
                "pulls_per_fidelity_mean": np.mean([r["pulls_per_fidelity"] for r in rows], axis=0).tolist(),
                "cpu_s_per_run": float(np.mean([r["cpu_s"] for r in rows])),
                "tv_bound_max": float(max(r["tv_bound"] for r in rows)),
            }
        report["domains"][d] = dom
    report["wall_s"] = time.time() - t_start

    print(f"\nPoiani et al. 2022, Table 1: cost as % of SE (delta = {DELTA}, {runs} runs; mean ± 1.96 sd/sqrt(n))")
    head = f"{'domain':<12} {'policy':<11} {'ours':>20} {'paper':>20} {'noise-free':>11} {'ref':>9} {'err':>5}"
    print(head)
    print("-" * len(head))
    for d, dom in report["domains"].items():
        for p in POLICIES:
            r = dom["policies"][p]
            ours = f"{r['percent_of_se']['mean']:.4g} ± {r['percent_of_se']['ci95']:.2g}"
            pap = f"{r['paper']['mean']:.4g} ± {r['paper']['ci95']:.2g}"
            print(
                f"{d:<12} {p:<11} {ours:>20} {pap:>20} {r['noise_free_percent']:>11.4g} "
                f"{r['noise_free_reference_percent']:>9.4g} {r['error_rate']:>5.2f}"
            )
        print(
            f"{'':<12} SE cost {dom['se_cost']['mean']:.4g} (noise-free {dom['se_cost']['noise_free']:.4g}); "
            f"lower bound {dom['lower_bound']:.3g}; Assumption 1 (ξ/γ): "
            f"{dom['assumption1']['zeta']['holds']}/{dom['assumption1']['gamma']['holds']}"
        )
    print(f"\nwall time {report['wall_s']:.0f} s")
    write_json(args.out, report)
    _plot(report, args.out.with_suffix(".png"))
    return 0


def _plot(report: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    doms = list(report["domains"])
    fig, ax = plt.subplots(figsize=(8, 4))
    w = 0.25
    for j, p in enumerate(POLICIES):
        xs = np.arange(len(doms)) + (j - 1) * w
        ours = [report["domains"][d]["policies"][p]["percent_of_se"] for d in doms]
        ax.bar(xs, [o["mean"] for o in ours], w, yerr=[o["ci95"] for o in ours], label=f"{p} (ours)", alpha=0.8)
        ax.scatter(xs, [PAPER[d][p][0] for d in doms], color="k", marker="x", zorder=3)
    ax.axhline(100, color="grey", lw=0.8, ls="--")
    ax.set_yscale("log")
    ax.set_xticks(np.arange(len(doms)), doms)
    ax.set_ylabel("cost as % of SE (log)")
    ax.set_title(f"Poiani et al. 2022 Table 1 (x = paper), {report['runs']} runs")
    ax.legend(fontsize=8)
    save_figure(fig, path)


if __name__ == "__main__":
    sys.exit(main())
