"""Build the ζ⁺ prior shipped with mf-sched (``mf_sched/data/race_prior.json``) and report its held-out coverage.

ζ⁺(f) bounds how much the best of a study's configurations still improves after a fraction ``f`` of its
training (:mod:`mf_sched.racing.bias`). It is estimated with :func:`mf_sched.curves.calibration.calibrate_race` on every
source of ``../shared/data`` (the data is not shipped; see ``mf_sched/curves/datasets.py`` for where it comes from),
per metric family:

* ``unit`` — metrics in [0, 1] (accuracy, mAP, SSIM, error, WER), absolute form (metric units): LCBench
  (34 tasks, validation accuracy), DeepOBS test accuracy (5 problems), AlgoPerf accuracy-like workloads
  (ImageNet accuracy, OGBG mAP, fastMRI SSIM; one task per workload variant);
* ``loss`` — non-negative losses, relative form (the improvement as a fraction of the current loss, ideal 0):
  TaskSet (12 tasks), DeepOBS test loss (8 problems), AlgoPerf validation losses and LibriSpeech WER (one task
  per workload variant and metric).

Tasks with fewer than 5 complete configurations are left out.

Each source gives its own bound (task-mixture quantile, bootstrap over its tasks); the family's prior is the
largest of them at every fraction, so that every source is covered. Reported per source: its tasks, ζ̂ of
today's all-configuration calibration (:func:`mf_sched.curves.calibration.calibrate`, which the IISE rule needs),
the source's own ζ⁺, and the leave-one-task-out coverage of the family prior on that source (each task's
draws against the prior rebuilt without it). Target: ≥ 0.95 per source.

    python -m benchmarks.race_prior            # ~10 min; writes mf_sched/data/race_prior.json
    python -m benchmarks.race_prior --quick    # fewer LCBench configurations, no package data written

Prints tables, writes ``benchmarks/results/race_prior.json`` and ``.png``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks._common import pyplot, save_figure, write_json
from mf_sched._progress import Progress
from mf_sched.curves.calibration import calibrate
from mf_sched.racing.calibration import improvement_samples, race_bound

FRACTIONS = [0.01, 0.02, 0.04, 0.06, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.67, 0.8, 1.0]
N_ARMS = 20
QUANTILE = 0.95
CONFIDENCE = 0.95
ROOT = Path(__file__).resolve().parents[1]

# AlgoPerf workloads per family: (workload prefix, metric). LibriSpeech's WER exceeds 1 early in training
# (insertions), so it is not a [0, 1] metric: it is treated as a loss (non-negative, minimised).
ALGOPERF_UNIT = [
    ("imagenet", "validation/accuracy"),
    ("ogbg", "validation/mean_average_precision"),
    ("fastmri", "validation/ssim"),
]
ALGOPERF_LOSS = [
    ("criteo1tb", "validation/loss"),
    ("wmt", "validation/loss"),
    ("imagenet", "validation/loss"),
    ("ogbg", "validation/loss"),
    ("librispeech", "validation/ctc_loss"),
    ("librispeech", "validation/wer"),
]
MIN_CONFIGS = 5  # a task with fewer complete configurations says little about "the best of 20"


def algoperf_workloads() -> list[str]:
    from mf_sched.curves._readers import _open_text
    from mf_sched.curves.datasets import _resolve

    names = set()
    with _open_text(_resolve("algoperf", None)) as fh:
        head = fh.readline().rstrip("\n").split(",")
        i = head.index("workload")
        for line in fh:
            names.add(line.split(",", i + 1)[i])
    return sorted(names)


def sources(quick: bool) -> dict[str, tuple[str, list]]:
    """name -> (family, [LearningCurves as fractions of each run, ...])."""
    from mf_sched.curves.datasets import LCBenchSurrogate, load_algoperf, load_deepobs, load_taskset

    out: dict[str, tuple[str, list]] = {}
    sur = LCBenchSurrogate()
    lc = sur.curves(n_configs=150 if quick else 500, epochs=list(range(1, 53)), seed=0)
    out["lcbench"] = ("unit", [lc.to_fraction()])
    out["deepobs-acc"] = ("unit", [load_deepobs(metric="test_acc").to_fraction()])
    out["taskset"] = ("loss", [load_taskset().to_fraction()])
    out["deepobs-loss"] = ("loss", [load_deepobs(metric="test_loss").to_fraction()])
    wl = algoperf_workloads()
    for fam, table in (("unit", ALGOPERF_UNIT), ("loss", ALGOPERF_LOSS)):
        tabs = []
        for prefix, metric in table:
            ws = [w for w in wl if w.startswith(prefix)]
            if ws:
                tabs.append(load_algoperf(workloads=ws, metric=metric).to_fraction())
        out[f"algoperf-{fam}"] = (fam, tabs)
    return out


def usable(tables: list) -> list[int]:
    """Indices of FRACTIONS at which at least half the configurations of every table have a value."""
    ok = np.ones(len(FRACTIONS), dtype=bool)
    for c in tables:
        m = c.values_at(FRACTIONS).means()
        ok &= np.mean(np.isfinite(m), axis=0) >= 0.5
    ok[-1] = True
    return np.flatnonzero(ok).tolist()


def expand(x: np.ndarray, use: list[int]) -> np.ndarray:
    """Values at ``use`` placed on the full FRACTIONS grid (NaN elsewhere)."""
    out = np.full(len(FRACTIONS), np.nan)
    out[use] = x
    return out


def family_max(rows: list[np.ndarray]) -> np.ndarray:
    """The largest value over sources at each fraction; ``inf`` where no source has data (no bound there)."""
    a = np.array(rows)
    have = ~np.isnan(a).all(axis=0)
    out = np.full(a.shape[1], np.inf)
    out[have] = np.nanmax(a[:, have], axis=0)
    out[-1] = 0.0
    return np.maximum.accumulate(out[::-1])[::-1]  # never smaller at a cheaper rung


def _json_list(x: np.ndarray, digits: int = 4) -> list:
    return [None if np.isnan(v) else ("inf" if np.isinf(v) else round(float(v), digits)) for v in np.asarray(x)]


def row(x: np.ndarray) -> str:
    return " ".join("   n/a" if np.isnan(v) else f"{v:6.3f}" for v in np.asarray(x, dtype=float))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer configurations; do not write the package data")
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--out", default="benchmarks/results/race_prior.json")
    args = ap.parse_args()
    t0 = time.perf_counter()
    try:
        srcs = sources(args.quick)
    except (FileNotFoundError, ImportError) as e:
        print(f"cannot load the learning-curve data: {e}", file=sys.stderr)
        return 1
    print(f"loaded the sources in {time.perf_counter() - t0:.0f} s", flush=True)
    form = {"unit": ("absolute", None), "loss": ("relative", 0.0)}
    per_source: dict[str, dict] = {}
    with Progress(len(srcs), "sources", True) as bar:
        for name, (fam, tables) in srcs.items():
            f, ideal = form[fam]
            use = usable(tables)  # rungs every table reports (a source that first evaluates at 2% has no 1% value)
            fr = [FRACTIONS[j] for j in use]
            samples: dict = {}
            zeta_all = []
            for i, curves in enumerate(tables):
                s = improvement_samples(curves, fr, n_arms=N_ARMS, form=f, ideal=ideal, draws=args.draws, seed=i,
                                        min_configs=MIN_CONFIGS)  # fmt: skip
                samples.update({f"{curves.metric_name}:{k}": v for k, v in s.items()})
                try:  # today's all-configuration ζ̂ (the IISE rule's), for comparison
                    zeta_all.append(calibrate(curves, fr, quantile=QUANTILE, seed=0, holdout=None).zeta)
                except ValueError as e:
                    print(f"  {name}: all-configuration ζ̂ not computed ({e})")
            cal = race_bound(samples, fr, quantile=QUANTILE, confidence=CONFIDENCE, bootstrap=args.bootstrap,
                             form=f, ideal=None if ideal is None else 0.0, n_arms=N_ARMS, source=name)  # fmt: skip
            per_source[name] = {"family": fam, "cal": cal, "samples": samples, "use": use,
                                "upper": expand(cal.upper, use), "typical": expand(cal.typical, use),
                                "zeta_all": expand(np.max(zeta_all, axis=0), use) if zeta_all else None}  # fmt: skip
            bar.update()
    families: dict[str, dict] = {}
    report: dict[str, dict] = {}
    for fam in ("unit", "loss"):
        names = [n for n, d in per_source.items() if d["family"] == fam]
        upper = family_max([per_source[n]["upper"] for n in names])
        typical = np.minimum(family_max([per_source[n]["typical"] for n in names]), upper)
        cover = {}
        for n in names:
            d = per_source[n]
            cal, use = d["cal"], d["use"]
            others = [per_source[o]["upper"][use] for o in names if o != n]
            rest = np.nan_to_num(np.nanmax(others, axis=0), nan=0.0) if others else 0.0
            cov = np.array([
                (d["samples"][t] <= np.maximum(cal.holdout_upper[i], rest) + 1e-12).mean(axis=0)
                for i, t in enumerate(cal.tasks)
            ])  # fmt: skip
            cover[n] = {"mean": expand(cov.mean(axis=0), use), "min": expand(cov.min(axis=0), use),
                        "n_tasks": len(cal.tasks),
                        "per_task": {str(t): _json_list(expand(c, use)) for t, c in zip(cal.tasks, cov)}}  # fmt: skip
        f, ideal = form[fam]
        families[fam] = {
            "description": (
                "metrics in [0, 1] (accuracy, mAP, SSIM, error rate, WER), absolute: metric units"
                if fam == "unit"
                else "non-negative losses, relative: fraction of the current loss (ideal 0)"
            ),
            "form": f,
            "ideal": ideal,
            "fractions": FRACTIONS,
            "upper": _json_list(upper, 6),
            "typical": _json_list(typical, 6),
            "provenance": {
                "sources": {n: len(per_source[n]["cal"].tasks) for n in names},
                "n_arms": N_ARMS,
                "quantile": QUANTILE,
                "confidence": CONFIDENCE,
                "holdout_coverage_mean": {n: _json_list(cover[n]["mean"]) for n in names},
                "holdout_coverage_min": {n: _json_list(cover[n]["min"]) for n in names},
                "made_by": "benchmarks/race_prior.py (calibrate_race per source, max over sources)",
            },
        }
        report[fam] = {"names": names, "cover": cover, "upper": upper}
        families[fam]["provenance"]["holdout_coverage_per_task"] = {n: cover[n]["per_task"] for n in names}
    # ---- print
    np.set_printoptions(precision=3, suppress=True, linewidth=200)
    frs = " ".join(f"{x:6.2f}" for x in FRACTIONS[:-1])
    for fam in ("unit", "loss"):
        print(f"\n== family {fam!r} ({families[fam]['form']}); fractions of training:\n{'':34s}{frs}")
        for n in report[fam]["names"]:
            d = per_source[n]
            za = d["zeta_all"]
            print(f"{n:18s} ζ̂ all configs  " + ("  n/a" if za is None else row(za[:-1])))
            print(f"{'':18s} ζ⁺ own tasks    " + row(d["upper"][:-1]))
            c = report[fam]["cover"][n]
            print(f"{'':18s} prior held-out  " + row(c["mean"][:-1])
                  + f"   ({c['n_tasks']} tasks; worst task {np.nanmin(c['min'][:-1]):.3f})")  # fmt: skip
        print(f"{'prior':18s} ζ⁺              " + row(report[fam]["upper"][:-1]))
    print(f"\nwall time {time.perf_counter() - t0:.0f} s")
    out = ROOT / args.out
    dump = {
        "families": families,
        "sources": {
            n: {"family": d["family"], "calibration": d["cal"].to_dict(),
                "zeta_all_configs": None if d["zeta_all"] is None else _json_list(d["zeta_all"])}
            for n, d in per_source.items()
        },
        "args": vars(args),
    }  # fmt: skip
    write_json(out, dump)
    if not args.quick:
        pkg = ROOT / "mf_sched" / "data" / "race_prior.json"
        write_json(pkg, {"format": "mf_sched.race_prior/1", "families": families})
    plt = pyplot()
    if plt is None:
        return 0
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, fam in zip(axes, ("unit", "loss")):
        for i, n in enumerate(report[fam]["names"]):
            ax.plot(FRACTIONS[:-1], per_source[n]["upper"][:-1], "o-", color=f"C{i}", label=f"{n} ζ⁺")
            za = per_source[n]["zeta_all"]
            if za is not None and fam == "unit":
                ax.plot(FRACTIONS[:-1], za[:-1], ":", color=f"C{i}", label=f"{n} ζ̂ all configs")
        ax.plot(FRACTIONS[:-1], report[fam]["upper"][:-1], "k-", lw=2, label="prior (max)")
        ax.set_xscale("log")
        ax.set_xlabel("fraction of training")
        ax.set_ylabel("ζ⁺ (metric units)" if fam == "unit" else "ρ (fraction of the current loss)")
        ax.set_title(f"family {fam!r}")
        ax.legend(fontsize=7)
    save_figure(fig, out.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
