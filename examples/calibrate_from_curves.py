"""Estimate ζ from learning curves, then run IISE with it on a replay of LCBench, against guessed ζ.

For each LCBench task (the YAHPO Gym surrogate in ``$MF_SCHED_DATA/lcbench``; needs ``onnxruntime``,
the ``bench`` extra) we

1. draw ``--configs`` random configurations and read their validation accuracy at epochs 1, 3, 9, 27, 52;
2. build a :class:`~mf_sched.curves.replay.ReplayBenchmark` whose arms are ``--arms`` of those configurations;
   ζ̂ (0.95-quantile of |acc(epoch) − acc(52)|, 0.95 bootstrap upper bound, non-increasing envelope),
   γ̂ and λ (the surrogate's measured training time) are estimated on the *other* configurations, so the
   fraction of arms within ζ̂ is a held-out check; observations are the surrogate's value plus
   ``N(0, --noise²)`` (the surrogate has one seed; 0.01 is the order of the seed-to-seed σ̂ that
   ``benchmarks/calibration.py`` measures on DeepOBS test accuracy, 0.006–0.011);
3. run IISE (Poiani et al. 2022) with the calibrated ζ̂ and with two guessed ladders — ``guess-small``
   (early epochs within a few points: ζ = 0.05, 0.02, 0.01, 0.005, 0) and ``guess-large``
   (ζ = 0.3, 0.2, 0.1, 0.05, 0) — plus the other best-arm policies on the calibrated ladder for reference:
   IISE-γ with γ̂, successive elimination at the last epoch, successive halving and Hyperband (η = 3).
   IISE and IISE-γ stop at an ``--epsilon``-optimal arm (default 0.005, half an accuracy point; Poiani et
   al. §4.3) because exact identification among near-tied top configurations under σ = 0.01 noise is
   dominated by the last epoch whatever ζ is; successive elimination identifies exactly.

The table reports, over tasks × runs, how often the true best configuration (best accuracy at epoch 52)
was returned, the mean simple regret (accuracy points lost), and the mean training time spent (surrogate
seconds; a run capped at ``--budget-runs`` full trainings per arm counts as "capped").

    python examples/calibrate_from_curves.py            # 34 tasks x 3 runs (~5 min)
    python examples/calibrate_from_curves.py --quick    # 6 tasks x 2 runs
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from mf_sched import FidelityLadder
from mf_sched._progress import Progress
from mf_sched.curves.datasets import LCBenchSurrogate
from mf_sched.curves.replay import ReplayBenchmark
from mf_sched.registry import build_policy
from mf_sched.sim.simulate import run_policy

EPOCHS = [1, 3, 9, 27, 52]
GUESSES = {"guess-small": [0.05, 0.02, 0.01, 0.005, 0.0], "guess-large": [0.3, 0.2, 0.1, 0.05, 0.0]}
#: (row label, registry name, ladder, extra parameters)
POLICIES = [
    ("iise (calibrated ζ̂)", "iise", "calibrated", {}),
    ("iise (guess-small ζ)", "iise", "guess-small", {}),
    ("iise (guess-large ζ)", "iise", "guess-large", {}),
    ("iise-gamma (calibrated γ̂)", "iise-gamma", "calibrated", {}),
    ("se (epoch 52 only)", "se", "calibrated", {}),
    ("sh (η = 3)", "sh", "calibrated", {}),
    ("hyperband (η = 3)", "hyperband", "calibrated", {}),
]


def ladder_for(bench: ReplayBenchmark, which: str) -> FidelityLadder:
    if which == "calibrated":
        return bench.ladder
    lad = bench.ladder
    return FidelityLadder(list(lad.costs), GUESSES[which], resources=list(lad.resources))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="6 tasks x 2 runs")
    ap.add_argument("--tasks", type=int, default=None, help="number of LCBench tasks (default: all 34)")
    ap.add_argument("--runs", type=int, default=None, help="runs per task and policy (default 3)")
    ap.add_argument("--configs", type=int, default=2000, help="configurations drawn per task")
    ap.add_argument("--arms", type=int, default=50, help="configurations the policies choose among")
    ap.add_argument("--noise", type=float, default=0.01, help="σ of the Gaussian noise added to each evaluation")
    ap.add_argument("--delta", type=float, default=0.05)
    ap.add_argument("--epsilon", type=float, default=0.005, help="IISE / IISE-γ stop at an ε-optimal arm (§4.3)")
    ap.add_argument("--budget-runs", type=float, default=400.0, help="cap: this many epoch-52 trainings per arm")
    ap.add_argument("--out", default="results/calibrate_from_curves.json")
    args = ap.parse_args(argv)
    n_tasks = args.tasks or (6 if args.quick else 34)
    runs = args.runs or (2 if args.quick else 3)

    try:
        sur = LCBenchSurrogate()
    except (FileNotFoundError, ImportError) as e:
        print(f"cannot load the LCBench surrogate: {e}", file=sys.stderr)
        return 1
    tasks = list(sur.tasks)[:n_tasks]
    res: dict[str, list[dict]] = {label: [] for label, *_ in POLICIES}
    zeta_rows, coverage_rows = [], []
    t0 = time.perf_counter()
    with Progress(len(tasks), "tasks", True) as bar:
        for ti, task in enumerate(tasks):
            curves = sur.curves(task, n_configs=args.configs, epochs=EPOCHS, seed=ti)
            bench = ReplayBenchmark.from_curves(
                curves, EPOCHS, n_arms=args.arms, calibration="holdout", extra_noise=args.noise, seed=ti
            )
            if ti == 0:
                print(f"\nLCBench task {task}: ζ̂ estimated on the {args.configs - args.arms} configurations not drawn")
                print(bench.calibration.table())
                print(bench.ladder.describe())
            zeta_rows.append(list(bench.ladder.zeta))
            coverage_rows.append(bench.zeta_coverage.tolist())
            budget = args.budget_runs * bench.K * bench.ladder.costs[-1]
            for label, name, which, extra in POLICIES:
                for r in range(runs):
                    seed = 1000 * ti + r
                    prob = {
                        **bench.problem(delta=args.delta, budget=budget, seed=seed),
                        "ladder": ladder_for(bench, which),
                    }
                    if name in ("iise", "iise-gamma"):
                        extra = {**extra, "epsilon": args.epsilon}
                    pol = build_policy(name, prob, **extra)
                    out = run_policy(pol, bench, budget=budget, workers=None, completion="batch", seed=seed)
                    res[label].append(
                        {
                            "task": task,
                            "correct": bool(out.correct),
                            "simple_regret": float(out.simple_regret),
                            "cost": float(out.cost),
                            "capped": out.stop_reason != "done",
                        }
                    )
            bar.update()

    zeta = np.asarray(zeta_rows)
    cov = np.asarray(coverage_rows)
    print(
        f"\n{len(tasks)} tasks x {runs} runs, {args.arms} arms, noise σ = {args.noise}, δ = {args.delta}, "
        f"IISE ε = {args.epsilon}"
    )
    print("calibrated ζ̂ over tasks (median [min, max]) and the fraction of arms within it (mean):")
    for m, e in enumerate(EPOCHS):
        print(
            f"  epoch {e:>2}: ζ̂ {np.median(zeta[:, m]):.3f} [{zeta[:, m].min():.3f}, {zeta[:, m].max():.3f}]"
            f"   arms within ζ̂ {cov[:, m].mean():.3f}"
        )
    base = np.mean([x["cost"] for x in res[POLICIES[0][0]]])
    print(
        f"\n{'policy':<28} {'P(best)':>8} {'regret':>8} {'max regret':>10} {'cost (s)':>10} "
        f"{'vs iise ζ̂':>9} {'capped':>6}"
    )
    summary = {}
    for label, rows in res.items():
        c = np.array([x["correct"] for x in rows])
        reg = np.array([x["simple_regret"] for x in rows])
        cost = np.array([x["cost"] for x in rows])
        cap = int(sum(x["capped"] for x in rows))
        summary[label] = {
            "p_correct": float(c.mean()),
            "mean_regret": float(reg.mean()),
            "max_regret": float(reg.max()),
            "mean_cost": float(cost.mean()),
            "cost_ratio": float(cost.mean() / base),
            "capped": cap,
            "runs": len(rows),
        }
        print(
            f"{label:<28} {c.mean():>8.3f} {reg.mean():>8.4f} {reg.max():>10.4f} {cost.mean():>10.3g} "
            f"{cost.mean() / base:>9.2f} {cap:>6d}"
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "tasks": tasks,
        "runs": runs,
        "arms": args.arms,
        "configs": args.configs,
        "noise": args.noise,
        "delta": args.delta,
        "epsilon": args.epsilon,
        "budget_runs": args.budget_runs,
        "guesses": GUESSES,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    payload = {"meta": meta, "zeta": zeta.tolist(), "arms_within_zeta": cov.tolist(), "summary": summary, "runs": res}
    out.write_text(json.dumps(payload, indent=1))
    print(f"\nwrote {out} ({meta['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
