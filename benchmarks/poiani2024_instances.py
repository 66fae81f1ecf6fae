"""Every issue-3 policy on the instances of Poiani et al. (2024), *Optimal Multi-Fidelity Best-Arm Identification*.

Instances ``poiani2024-{4x5,5x2,mu2,mu3,lucb-nonstop}`` (shipped with mf-sched, ``mf_sched/data/instances``),
Gaussian with the
σ given in each file, δ = 0.01. For every policy: mean cost ± 95% CI, error rate, certified rate, and the
cost divided by the instance's lower bound — both Wang et al.'s Thm 3.1 bound (:mod:`mf_sched.sim.bounds`) and
the tight characteristic-time bound ``C*·log(1/δ)`` of Poiani et al. 2024 (values computed with
:func:`mf_sched.sim.bounds.tight_lower_bound`).

Policies: ``se``; ``iise`` as in Poiani et al. 2022 (theory radius), also on the fidelities where Assumption
1 holds (``fidelities="hull"``; 4x5 and mu2 violate it at fidelity 2); ``iise`` with ``radius="practical"``
— the IISE baseline as configured in the code of Poiani et al. 2024 (``IISE.compute_ci``), the one their numbers
(185 on 4x5, 2063 on 5x2, 10 runs) come from; ``iise-max-exploit`` (MFE, c = 0.1); ``lucb-highest``; ``lucb-explore-c``;
``lucb-explore-a`` / ``-b`` with the true top-two means as prior bounds (and µ̃1 = 0.6, µ̃2 = 0.5 on the
non-stopping instance, as in the authors' demonstration). IISE-γ is not run: these files carry no γ, and
γ = 2ζ (always valid) makes it identical to IISE. The LUCB procedures run under a cost cap (``budget``)
because on ``lucb-nonstop`` EXPLORE-A/B never certify: they stop at the cap, uncertified.

    python -m benchmarks.poiani2024_instances --quick
    python -m benchmarks.poiani2024_instances --runs 40 --jobs 2

Writes ``benchmarks/results/poiani2024_instances.json`` (+ ``.png``).
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

from benchmarks._common import cost_columns, pyplot, save_figure, write_json
from mf_sched import run_many
from mf_sched.policies.iise import check_assumption1
from mf_sched.sim.iise_runner import run_many_fast
from mf_sched.sim.instance import load_instance, published_instance_path

ROOT = Path(__file__).resolve().parents[1]
DATA = published_instance_path("poiani2024-5x2").parent  # the published instances shipped with mf-sched
DELTA = 0.01
INSTANCES = ("4x5", "5x2", "mu2", "mu3", "lucb-nonstop")
#: C*(µ) of Poiani et al. 2024 (:func:`mf_sched.sim.bounds.tight_lower_bound`): the tight lower bound is C*·log(1/δ)
C_STAR = {"4x5": 2.0002, "5x2": 26.6491, "mu2": 3.6206, "mu3": 1.9671, "lucb-nonstop": 4000.0}
#: what the authors' code gives (``riccardopoiani/adv-mf-bai``; δ = 0.01; mean (sd)); [DATA] = 10 runs, others 40 / 30
AUTHORS = {
    "4x5": {"IISE [DATA, 10 runs]": 185, "IISE (40 runs)": "196.1 (47.6)", "MF-GRAD [DATA]": 89, "GRAD [DATA]": 313},
    "5x2": {
        "IISE [DATA, 10 runs]": 2063,
        "IISE (40 runs)": "2301.6 (445.1)",
        "MF-GRAD [DATA]": 576,
        "GRAD [DATA]": 820,
    },
    "mu2": {"IISE (30 runs)": "563.3 (117.3)", "MF-GRAD lr 0.25 (30 runs)": "123.4 (42.2)"},
    "mu3": {"IISE (30 runs)": "85.2 (15.7)", "MF-GRAD lr 0.25 (30 runs)": "53.5 (18.8)"},
    "lucb-nonstop": {"LUCB fidelity 2 only": "stops after 69k-93k samples", "EXPLORE-A/B": "never stop"},
}
FAST = {"iise", "iise-practical", "iise-hull", "iise-max-exploit"}


def _policies(inst_name: str, top: np.ndarray, quick: bool) -> list[tuple[str, str, dict[str, Any], float | None]]:
    """(label, registry name, params, budget) for one instance."""
    prior = {"mu1_upper": float(top[0]), "mu2_lower": float(top[1])}
    cap = 2e5 if not quick else 2e4
    nonstop = inst_name == "lucb-nonstop"
    if nonstop:
        prior = {"mu1_upper": 0.6, "mu2_lower": 0.5}
    cap_ab = (5e4 if not quick else 5e3) if nonstop else cap
    cap_lucb = 1e6 if nonstop else cap
    return [
        ("se", "se", {}, None),
        ("iise", "iise", {}, None),
        ("iise-practical", "iise", {"radius": "practical"}, None),
        ("iise-hull", "iise", {"fidelities": "hull"}, None),
        ("iise-max-exploit", "iise-max-exploit", {"c": 0.1}, None),
        ("lucb-highest", "lucb-highest", {}, cap_lucb),
        ("lucb-explore-c", "lucb-explore-c", {}, cap_lucb),
        ("lucb-explore-a", "lucb-explore-a", prior, cap_ab),
        ("lucb-explore-b", "lucb-explore-b", prior, cap_ab),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="5 runs (2 for LUCB), small caps")
    ap.add_argument("--runs", type=int, default=40, help="runs per policy (IISE family and SE)")
    ap.add_argument("--runs-lucb", type=int, default=10, help="runs per LUCB policy")
    ap.add_argument("--instances", nargs="+", choices=INSTANCES, default=list(INSTANCES))
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "poiani2024_instances.json")
    args = ap.parse_args(argv)
    runs, runs_lucb = (5, 2) if args.quick else (args.runs, args.runs_lucb)
    warnings.simplefilter("ignore")
    t0 = time.time()
    rep: dict[str, Any] = {
        "benchmark": "issue-3 policies on the Poiani et al. 2024 instances",
        "delta": DELTA,
        "seed": args.seed,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "instances": {},
    }
    for name in args.instances:
        inst = load_instance(DATA / f"poiani2024-{name}.json", warn=False)
        top = np.sort(inst.true_means)[::-1]
        tight = C_STAR[name] * math.log(1 / DELTA)
        rows: dict[str, Any] = {}
        for label, pol, params, budget in _policies(name, top, args.quick):
            ts = time.time()
            if label in FAST:
                s = run_many_fast(pol, inst, runs=runs, delta=DELTA, seed=args.seed, params=params, n_jobs=args.jobs)
            else:
                s = run_many(
                    pol,
                    inst,
                    runs=runs if pol == "se" else runs_lucb,
                    seed=args.seed,
                    delta=DELTA,
                    budget=budget,
                    params=params,
                    workers=None,
                    completion="batch",
                    n_jobs=args.jobs,
                    keep_results=False,
                )
            rows[label] = {
                "policy": pol,
                "params": params,
                "budget": budget,
                **cost_columns(s),
                "stop_reasons": s.stop_reasons,
                "cost_over_wang_lb": s.cost_over_lower_bound,
                "cost_over_tight_lb": s.cost_mean / tight,
                "wall_s": time.time() - ts,
            }
        rep["instances"][name] = {
            "K": inst.K,
            "M": inst.M,
            "sigma": inst.noise.sigma,
            "wang_lower_bound": rows["se"]["cost_mean"] / rows["se"]["cost_over_wang_lb"],
            "tight_lower_bound": tight,
            "assumption1": check_assumption1(inst.ladder.costs, inst.ladder.zeta).to_dict(),
            "authors": AUTHORS[name],
            "policies": rows,
        }
    rep["wall_s"] = time.time() - t0

    print(f"\nPoiani et al. 2024 instances, delta = {DELTA}: mean cost ± 95% CI")
    head = f"{'instance':<13} {'policy':<16} {'runs':>4} {'cost':>22} {'err':>5} {'cert':>5} {'/LB':>8} {'/C*log':>8}"
    for name, d in rep["instances"].items():
        print(head)
        print("-" * len(head))
        for label, r in d["policies"].items():
            cost = f"{r['cost_mean']:.5g} ± {r['cost_ci95']:.3g}"
            print(
                f"{name:<13} {label:<16} {r['runs']:>4} {cost:>22} {r['error_rate']:>5.2f} {r['certified_rate']:>5.2f} "
                f"{r['cost_over_wang_lb']:>8.3g} {r['cost_over_tight_lb']:>8.3g}"
            )
        print(
            f"  lower bounds: Wang Thm 3.1 {d['wang_lower_bound']:.4g}, C*log(1/δ) {d['tight_lower_bound']:.4g}; "
            f"Assumption 1 holds: {d['assumption1']['holds']} (hull {d['assumption1']['hull']})"
        )
        print(f"  authors' code: {d['authors']}\n")
    print(f"wall time {rep['wall_s']:.0f} s")
    write_json(args.out, rep)
    _plot(rep, args.out.with_suffix(".png"))
    return 0


def _plot(rep: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    names = list(rep["instances"])
    fig, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names), 3.6), squeeze=False)
    for ax, name in zip(axes[0], names):
        d = rep["instances"][name]["policies"]
        labels = list(d)
        ratio = [d[k]["cost_over_tight_lb"] for k in labels]
        colors = ["tab:green" if d[k]["certified_rate"] == 1 else "tab:red" for k in labels]
        ax.barh(labels, ratio, color=colors)
        ax.set_xscale("log")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("cost / (C* log 1/δ)", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle("Poiani et al. 2024 instances (red: not always certified)", fontsize=9)
    save_figure(fig, path)


if __name__ == "__main__":
    sys.exit(main())
