"""ζ̂, σ̂ and held-out coverage on the four learning-curve sources, beside the data README's numbers.

For each source (LCBench through the YAHPO surrogate, TaskSet, DeepOBS, AlgoPerf) the curves are read at
10 / 25 / 50 / 75 / 100% of each run (:meth:`LearningCurves.to_fraction`), and we report per rung

* the median and the 90% quantile of the gap ``|metric(rung) − metric(final)|`` beside the "typical size of
  the bias" table of ``../shared/data/README.md`` (measured there on the same files; medians can differ
  where the README pooled seeds or workloads differently — the 90% quantiles are the comparable numbers);
* ζ̂ at quantile 0.95 (exact bootstrap bound at confidence 0.95, non-increasing envelope) and its held-out
  coverage when configurations are split in halves and, where the source has several tasks, when whole
  tasks are held out (the target is 0.95);
* the held-out coverage of γ̂'s band (the fraction of held-out signed biases inside it; target 0.95);
* σ̂, the pooled seed-to-seed standard deviation (DeepOBS and AlgoPerf have seeds; the README lists the
  median AlgoPerf seed spread of the final metric).

Writes ``benchmarks/results/calibration.json`` and ``calibration.png``.

    python -m benchmarks.calibration            # full: LCBench 34 tasks x 200 configurations
    python -m benchmarks.calibration --quick    # LCBench 8 tasks x 60, 5 coverage splits
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks._common import pyplot, save_figure, write_json
from mf_sched._progress import Progress
from mf_sched.curves.calibration import calibrate
from mf_sched.curves.datasets import LCBenchSurrogate, load_algoperf, load_deepobs, load_taskset

FRACTIONS = [0.1, 0.25, 0.5, 0.75, 1.0]
IMAGENET = [
    "imagenet_resnet_jax",
    "imagenet_resnet_pytorch",
    "imagenet_resnet_large_bn_init_jax",
    "imagenet_resnet_large_bn_init_pytorch",
    "imagenet_vit_jax",
    "imagenet_vit_pytorch",
]
#: ../shared/data/README.md, "Typical size of the bias" (median / 90% quantile at 10/25/50/75% of the run)
README = {
    "lcbench": [(0.051, 0.181), (0.024, 0.096), (0.012, 0.049), (0.005, 0.021)],
    "deepobs-cifar10": [(0.088, 0.250), (0.035, 0.142), (0.013, 0.073), (0.002, 0.029)],
    "algoperf-imagenet": [(0.223, 0.380), (0.133, 0.271), (0.067, 0.162), (0.020, 0.074)],
    "taskset": [(0.002, 0.336), (0.001, 0.173), (0.001, 0.077), (0.001, 0.033)],
}
README_SEED_STD = {"algoperf-imagenet": 0.0013}


def sources(quick: bool) -> list[tuple[str, str, object]]:
    """(key, description, loader) for every dataset row."""
    n_tasks, n_cfg = (8, 60) if quick else (34, 200)

    def lcbench():
        sur = LCBenchSurrogate()
        return sur.curves(sur.tasks[:n_tasks], n_configs=n_cfg, seed=0)

    return [
        ("lcbench", f"LCBench val accuracy (surrogate, {n_tasks} tasks x {n_cfg} configs)", lcbench),
        ("taskset", "TaskSet valid loss (12 tasks x 1000 configs)", load_taskset),
        ("deepobs-cifar10", "DeepOBS cifar10_3c3d test accuracy", lambda: load_deepobs(problems="cifar10_3c3d")),
        (
            "deepobs-acc",
            "DeepOBS test accuracy, 5 problems",
            lambda: load_deepobs(
                problems=["cifar10_3c3d", "cifar100_allcnnc", "fmnist_2c2d", "svhn_wrn164", "tolstoi_char_rnn"]
            ),
        ),
        ("algoperf-imagenet", "AlgoPerf ImageNet val accuracy, 6 workloads", lambda: load_algoperf(workloads=IMAGENET)),
        (
            "algoperf-wmt",
            "AlgoPerf WMT val BLEU, 4 workloads",
            lambda: load_algoperf(workloads=["wmt_jax", "wmt_pytorch", "wmt_glu_tanh_jax", "wmt_glu_tanh_pytorch"]),
        ),  # fmt: skip
    ]


def run(quick: bool) -> dict:
    rows = {}
    srcs = sources(quick)
    repeats = 5 if quick else 20
    with Progress(len(srcs), "calibration", True) as bar:
        for key, desc, load in srcs:
            t0 = time.perf_counter()
            try:
                curves = load().to_fraction()
            except FileNotFoundError as e:
                print(f"skipping {key}: {e}", file=sys.stderr)
                bar.update()
                continue
            t_load = time.perf_counter() - t0
            rv = curves.values_at(FRACTIONS)
            q90 = calibrate(rv, quantile=0.9, holdout=None)
            by_cfg = calibrate(rv, quantile=0.95, confidence=0.95, holdout="configs", repeats=repeats, seed=0)
            by_task = None
            if curves.n_tasks >= 2:
                by_task = calibrate(rv, quantile=0.95, confidence=0.95, holdout="tasks", repeats=repeats, seed=0)
            rows[key] = {
                "description": desc,
                "curves": repr(curves),
                "n_dropped_nonfinite": curves.n_dropped,
                "seconds_load": round(t_load, 2),
                "rungs": FRACTIONS,
                "gap_median": q90.gap_median.tolist(),
                "gap_q90": q90.zeta_point.tolist(),
                "readme": README.get(key),
                "zeta95": by_cfg.zeta.tolist(),
                "zeta95_point": by_cfg.zeta_point.tolist(),
                "gamma95": by_cfg.gamma.tolist(),
                "underestimating": by_cfg.underestimating.tolist(),
                "coverage_configs": by_cfg.coverage.to_dict(),
                "coverage_tasks": None if by_task is None else by_task.coverage.to_dict(),
                "sigma_pooled": [None if np.isnan(x) else x for x in by_cfg.sigma.tolist()],
                "sigma_median": [None if np.isnan(x) else x for x in by_cfg.sigma_median.tolist()],
                "sigma_configs": by_cfg.sigma_configs.tolist(),
                "readme_seed_std": README_SEED_STD.get(key),
                "n_configs": by_cfg.n_configs.tolist(),
                "calibration": by_cfg,
            }
            bar.update()
    return rows


def fmt(x: float | None, p: int = 3) -> str:
    return "-" if x is None else f"{x:.{p}f}"


def print_tables(rows: dict) -> None:
    print("\nGap |metric(rung) − metric(final)| at 10/25/50/75% of the run: ours (README)")
    print(f"{'source':<18} {'rung':>5}  {'median':>15}  {'90% quantile':>15}")
    for key, r in rows.items():
        for m, f in enumerate(FRACTIONS[:-1]):
            ref = r["readme"][m] if r["readme"] else (None, None)
            print(
                f"{key:<18} {f:>5.2f}  {fmt(r['gap_median'][m]):>6} ({fmt(ref[0]):>6})  "
                f"{fmt(r['gap_q90'][m]):>6} ({fmt(ref[1]):>6})"
            )
    print("\nζ̂ (0.95-quantile, 0.95 bootstrap bound, envelope), held-out coverage (target 0.95), σ̂ from seeds")
    head = f"{'source':<18} {'rung':>5} {'configs':>7} {'ζ̂':>7} {'γ̂':>7} {'cov cfg':>8} {'worst':>6}"
    print(head + f" {'cov task':>8} {'worst':>6} {'γ cov':>6} {'σ̂ pooled':>9} {'σ̂ median':>9}")
    for key, r in rows.items():
        cc, ct = r["coverage_configs"], r["coverage_tasks"]
        for m, f in enumerate(FRACTIONS):
            sp, sm = r["sigma_pooled"][m], r["sigma_median"][m]
            print(
                f"{key:<18} {f:>5.2f} {r['n_configs'][m]:>7d} {r['zeta95'][m]:>7.4f} {r['gamma95'][m]:>7.4f} "
                f"{cc['zeta'][m]:>8.3f} {cc['zeta_worst'][m]:>6.3f} "
                f"{fmt(ct['zeta'][m] if ct else None):>8} {fmt(ct['zeta_worst'][m] if ct else None):>6} "
                f"{cc['gamma'][m]:>6.3f} "
                f"{fmt(sp, 4):>9} {fmt(sm, 4):>9}"
            )
        if r["readme_seed_std"]:
            print(f"{'':<18} README median seed std of the final metric: {r['readme_seed_std']}")


def plot(rows: dict, path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for key, r in rows.items():
        (line,) = ax1.plot(FRACTIONS[:-1], r["gap_q90"][:-1], "o-", label=key)
        if r["readme"]:
            ax1.plot(FRACTIONS[:-1], [x[1] for x in r["readme"]], "x--", color=line.get_color())
        ax2.plot(FRACTIONS[:-1], r["coverage_configs"]["zeta"][:-1], "o-", color=line.get_color(), label=key)
        if r["coverage_tasks"]:
            ax2.plot(FRACTIONS[:-1], r["coverage_tasks"]["zeta"][:-1], "s:", color=line.get_color())
    ax1.set_yscale("log")
    ax1.set_xlabel("fraction of the run")
    ax1.set_ylabel("90% quantile of |gap| (x: README)")
    ax1.legend(fontsize=7)
    ax2.axhline(0.95, color="grey", lw=0.8)
    ax2.set_xlabel("fraction of the run")
    ax2.set_ylabel("held-out coverage of ζ̂ (o: configs, s: tasks)")
    ax2.set_ylim(0.5, 1.01)
    save_figure(fig, path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "calibration.json"))
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = run(args.quick)
    print_tables(rows)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    plot(rows, out.with_suffix(".png"))
    for r in rows.values():
        r.pop("calibration")
    meta = {"quick": args.quick, "seconds": round(time.perf_counter() - t0, 1), "python": platform.python_version()}
    write_json(out, {"meta": meta, "sources": rows})
    print(f"{meta['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
