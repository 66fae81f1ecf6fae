"""Fit the curve-aware bound shipped with mf-sched (``mf_sched/data/curve_bound.json``) and measure its held-out
coverage: leave-tasks-out within every source, and leave-one-source-out (the honest test of a new kind of task).

The bound (:mod:`mf_sched.racing.curve_bound`) says how much the run a full search would return can still improve
after a rung, given its own value and slope there; it is fitted per metric family with
:func:`mf_sched.racing.fit.fit_curve_bound` on *observed* curves (one seed per configuration, seed noise
included), from the learning-curve sources of ``../shared/data`` (not shipped; see
:mod:`mf_sched.curves.datasets` for where each comes from):

* ``unit`` (metrics in [0, 1], absolute form): LCBench validation accuracy (34 tasks; the surrogate gives
  mean curves, so N(0, 0.01²) seed noise is added: the seed spread DeepOBS shows), DeepOBS test accuracy
  (5 problems), AlgoPerf ImageNet accuracy, OGBG mAP and fastMRI SSIM (one task per workload variant);
* ``loss`` (non-negative losses, relative form, ideal 0): TaskSet (12 tasks), DeepOBS test loss (8 problems),
  AlgoPerf validation losses and LibriSpeech WER.

Held-out evaluation, for every source: its tasks in ``--folds`` groups, each group's miss rate measured with a bound
fitted on every other task of the family (leave-tasks-out); and the whole source's miss rate with a bound fitted on
the family's *other* sources (leave-one-source-out). The miss rate is the share of random ``K``-subsets of a task in
which every configuration within the tolerance of the subset's best final value exceeds the bound at some rung of a
ladder: the racing rule's all-rung error event. Reported worst over the canonical ladders (the table) and per
ladder at ``K = 24`` (a study uses the λ of the ladder that starts nearest its own first rung). Target: ≤ α.

    python -m benchmarks.curve_bound            # ~15 min on 2 cores; writes mf_sched/data/curve_bound.json
    python -m benchmarks.curve_bound --quick    # fewer LCBench configurations and folds; no package data written

Prints a table per family, writes ``benchmarks/results/curve_bound.json`` and ``.png`` (miss rate per held-out
source and fold against α).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks._common import pyplot, save_figure, write_json
from mf_sched._progress import Progress
from mf_sched.racing.curve_bound import FORMAT
from mf_sched.racing.fit import LADDERS, fit_curve_bound, miss_rate, observed_runs

ROOT = Path(__file__).resolve().parents[1]
FRACTIONS = sorted({round(f, 9) for lad in LADDERS for f in lad} | {1.0})
N_ARMS = (8, 24, 64)
ALPHAS = (0.05, 0.1, 0.2)
TOLERANCES = (0.0, 0.005, 0.01)
#: what the held-out tables report (the defaults of the adapters)
REPORT_ALPHA, REPORT_TOL = 0.05, 0.005
FAMILY_FORM = {"unit": ("absolute", None), "loss": ("relative", 0.0)}
LCBENCH_NOISE = 0.01


def load_sources(quick: bool) -> dict[str, tuple[str, dict]]:
    """name -> (family, {task: observed curves at FRACTIONS})."""
    from benchmarks.race_prior import ALGOPERF_LOSS, ALGOPERF_UNIT, algoperf_workloads
    from mf_sched.curves.datasets import LCBenchSurrogate, load_algoperf, load_deepobs, load_taskset

    out: dict[str, tuple[str, dict]] = {}
    lc = LCBenchSurrogate().curves(n_configs=150 if quick else 500, epochs=list(range(1, 53)), seed=0)
    out["lcbench"] = ("unit", observed_runs(lc.to_fraction(), FRACTIONS, noise=LCBENCH_NOISE, seed=1))
    out["deepobs-acc"] = ("unit", observed_runs(load_deepobs(metric="test_acc").to_fraction(), FRACTIONS, seed=2))
    out["taskset"] = ("loss", observed_runs(load_taskset().to_fraction(), FRACTIONS, seed=3))
    out["deepobs-loss"] = ("loss", observed_runs(load_deepobs(metric="test_loss").to_fraction(), FRACTIONS, seed=4))
    wl = algoperf_workloads()
    for fam, table in (("unit", ALGOPERF_UNIT), ("loss", ALGOPERF_LOSS)):
        tasks: dict = {}
        for i, (prefix, metric) in enumerate(table):
            ws = [w for w in wl if w.startswith(prefix)]
            if ws:
                curves = load_algoperf(workloads=ws, metric=metric).to_fraction()
                for k, v in observed_runs(curves, FRACTIONS, seed=10 + i).items():
                    tasks[f"{metric}:{k}"] = v
        out[f"algoperf-{fam}"] = (fam, tasks)
    return {name: (fam, {t: v for t, v in d.items() if v.shape[0] >= 5}) for name, (fam, d) in out.items()}


def _json_list(x: np.ndarray) -> list:
    return [None if not np.isfinite(v) else round(float(v), 4) for v in np.asarray(x, dtype=float)]


def _fmt(x: float | None) -> str:
    return "  - " if x is None else f"{x:.3f}"


def family_tasks(
    srcs: dict, fam: str, skip: set[tuple[str, str]] = frozenset(), skip_source: str | None = None
) -> dict:
    return {
        f"{name}/{t}": v
        for name, (f, d) in srcs.items()
        if f == fam and name != skip_source
        for t, v in d.items()
        if (name, t) not in skip
    }


def fit(tasks: dict, fam: str, args: argparse.Namespace, provenance: dict | None = None):
    form, ideal = FAMILY_FORM[fam]
    return fit_curve_bound(tasks, FRACTIONS, family=fam, form=form, ideal=ideal, n_arms=N_ARMS, alphas=ALPHAS,
                           tolerances=TOLERANCES, per_task=args.per_task, draws=args.draws, seed=0,
                           provenance=provenance)  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer configurations and folds; no package data written")
    ap.add_argument("--folds", type=int, default=5, help="task groups per source for the leave-tasks-out check")
    ap.add_argument("--per-task", type=int, default=40)
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--out", default="benchmarks/results/curve_bound.json")
    args = ap.parse_args()
    if args.quick:
        args.folds = min(args.folds, 2)
    t0 = time.perf_counter()
    try:
        srcs = load_sources(args.quick)
    except (FileNotFoundError, ImportError) as e:
        print(f"cannot load the learning-curve data: {e}", file=sys.stderr)
        return 1
    print(f"loaded {sum(len(d) for _, d in srcs.values())} tasks from {len(srcs)} sources in "
          f"{time.perf_counter() - t0:.0f} s", flush=True)  # fmt: skip
    report: dict = {}
    families: dict = {}
    n_fits = sum(1 + sum(1 for n, (f, _) in srcs.items() if f == fam) * (args.folds + 1) for fam in FAMILY_FORM)
    with Progress(n_fits, "fits", True) as bar:
        for fam in FAMILY_FORM:
            names = [n for n, (f, _) in srcs.items() if f == fam]
            rows: dict = {}
            for name in names:
                tasks = list(srcs[name][1])
                per_task = {}
                by_ladder_loto = []  # per group: the K = 24 miss rate on each canonical ladder
                for g in range(args.folds):  # leave-tasks-out: each group against a fit on every other task
                    held = tasks[g :: args.folds]
                    if not held:
                        bar.update()
                        continue
                    b = fit(family_tasks(srcs, fam, skip={(name, t) for t in held}), fam, args)
                    for K in N_ARMS:
                        r = miss_rate(b, {t: srcs[name][1][t] for t in held}, FRACTIONS, n_arms=K,
                                      alpha=REPORT_ALPHA, tolerance=REPORT_TOL, per_task=True)  # fmt: skip
                        for t, x in zip(held, r):
                            per_task.setdefault(str(K), {})[t] = None if np.isnan(x) else round(float(x), 4)
                    held_tasks = {t: srcs[name][1][t] for t in held}
                    lad = miss_rate(b, held_tasks, FRACTIONS, n_arms=24, alpha=REPORT_ALPHA, tolerance=REPORT_TOL,
                                    by_ladder=True)  # fmt: skip
                    by_ladder_loto.append((len(held), lad))
                    bar.update()
                b = fit(family_tasks(srcs, fam, skip_source=name), fam, args)  # leave-one-source-out
                loso = {}
                for K in N_ARMS:
                    loso[str(K)] = {
                        str(a): round(
                            miss_rate(b, srcs[name][1], FRACTIONS, n_arms=K, alpha=a, tolerance=REPORT_TOL), 4
                        )
                        for a in ALPHAS
                    }
                lso_ladder = miss_rate(b, srcs[name][1], FRACTIONS, n_arms=24, alpha=REPORT_ALPHA,
                                       tolerance=REPORT_TOL, by_ladder=True)  # fmt: skip
                # the bound given the study's own evidence (mf_sched.racing.evidence): the n' runs a race finishes
                loso_ev = {str(K): {str(n): round(miss_rate(b, srcs[name][1], FRACTIONS, n_arms=K, alpha=REPORT_ALPHA,
                                                            tolerance=REPORT_TOL, evidence_n=n), 4) for n in (1, 3)}
                           for K in N_ARMS}  # fmt: skip
                w = np.array([n for n, _ in by_ladder_loto], dtype=float)
                lto_ladder = np.array([x for _, x in by_ladder_loto])
                with np.errstate(invalid="ignore"):
                    lto_ladder = np.nansum(lto_ladder * w[:, None], axis=0) / np.sum(
                        np.isfinite(lto_ladder) * w[:, None], axis=0
                    )
                bar.update()
                loto = {K: np.array([x for x in v.values() if x is not None]) for K, v in per_task.items()}
                rows[name] = {
                    "tasks": len(tasks),
                    "leave_tasks_out_miss": {K: round(float(v.mean()), 4) for K, v in loto.items()},
                    "leave_tasks_out_worst_task": {K: round(float(v.max()), 4) for K, v in loto.items()},
                    "leave_tasks_out_per_task": per_task,
                    "leave_source_out_miss": loso,
                    "leave_source_out_miss_with_evidence": loso_ev,
                    "by_ladder_K24": {
                        "ladders": [[round(f, 4) for f in lad] for lad in b.ladders],
                        "leave_tasks_out": _json_list(lto_ladder),
                        "leave_source_out": _json_list(lso_ladder),
                    },
                }
            summary = ", ".join(f"{n} ({rows[n]['tasks']} tasks)" for n in names)
            full = fit(family_tasks(srcs, fam), fam, args, provenance={
                "summary": f"fitted on {summary}",
                "sources": {n: rows[n]["tasks"] for n in names},
                "observed_curves": f"one seed per configuration; LCBench surrogate means + N(0, {LCBENCH_NOISE}^2)",
                "held_out": {n: {k: v for k, v in rows[n].items() if k != "leave_tasks_out_per_task"} for n in names},
                "held_out_setting": {"alpha": REPORT_ALPHA, "tolerance": REPORT_TOL, "folds": args.folds},
                "made_by": "python -m benchmarks.curve_bound",
            })  # fmt: skip
            bar.update()
            families[fam] = full.to_dict()
            report[fam] = rows
    print(f"\nall-rung miss rate at alpha = {REPORT_ALPHA}, tolerance = {REPORT_TOL} (target <= alpha)")
    print(f"{'family':7s} {'source':15s} {'tasks':>5s}  " + "  ".join(
        f"{'K=' + str(K) + ' tasks-out':>15s} {'worst':>6s} {'source-out':>10s}" for K in N_ARMS))  # fmt: skip
    for fam, rows in report.items():
        for name, r in rows.items():
            cells = [
                f"{r['leave_tasks_out_miss'][str(K)]:15.3f} {r['leave_tasks_out_worst_task'][str(K)]:6.3f} "
                f"{r['leave_source_out_miss'][str(K)][str(REPORT_ALPHA)]:10.3f}"
                for K in N_ARMS
            ]
            print(f"{fam:7s} {name:15s} {r['tasks']:5d}  " + "  ".join(cells))
    print("\nsource held out, the bound learned from the study's own n' finished runs (n' = 1 / 3)")
    for fam, rows in report.items():
        for name, r in rows.items():
            ev = r["leave_source_out_miss_with_evidence"]
            print(f"{fam:7s} {name:15s}  " + "  ".join(f"K={K}: {ev[str(K)]['1']:.3f} / {ev[str(K)]['3']:.3f}"
                                                       for K in N_ARMS))  # fmt: skip
    print("\nper canonical ladder (first rung), K = 24: tasks held out / source held out")
    for fam, rows in report.items():
        lads = next(iter(rows.values()))["by_ladder_K24"]["ladders"]
        print(f"{'family':7s} {'source':15s}  " + "  ".join(f"{'from ' + format(lad[0], '.3g'):>13s}" for lad in lads))
        for name, r in rows.items():
            bl = r["by_ladder_K24"]
            cells = [f"{_fmt(a)} / {_fmt(b)}" for a, b in zip(bl["leave_tasks_out"], bl["leave_source_out"])]
            print(f"{fam:7s} {name:15s}  " + "  ".join(f"{c:>13s}" for c in cells))
    print(f"\nwall time {time.perf_counter() - t0:.0f} s")
    write_json(ROOT / args.out, {"report": report, "families": families, "args": vars(args)})
    if not args.quick:
        write_json(ROOT / "mf_sched" / "data" / "curve_bound.json", {"format": FORMAT, "families": families})
    plt = pyplot()
    if plt is not None:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for ax, (fam, rows) in zip(axes, report.items()):
            names = list(rows)
            x = np.arange(len(names))
            for j, K in enumerate(N_ARMS):
                ax.bar(x + (j - 1) * 0.27, [rows[n]["leave_source_out_miss"][str(K)][str(REPORT_ALPHA)] for n in names],
                       0.25, label=f"source held out, K={K}", color=f"C{j}")  # fmt: skip
                ax.plot(x + (j - 1) * 0.27, [rows[n]["leave_tasks_out_miss"][str(K)] for n in names], "k.",
                        label="tasks held out" if j == 0 else None)  # fmt: skip
            ax.axhline(REPORT_ALPHA, color="r", ls="--", label=f"α = {REPORT_ALPHA}")
            ax.set_xticks(x, names, rotation=15)
            ax.set_ylabel("all-rung miss rate")
            ax.set_title(f"family {fam!r} (tolerance {REPORT_TOL})")
            ax.legend(fontsize=7)
        save_figure(fig, (ROOT / args.out).with_suffix(".png"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
