"""The racing rule against FIFO, ASHA, HyperBand and Optuna's pruners on real learning curves (LCBench, TaskSet).

Every task of a source is held out in turn: ζ⁺ (the racing rule's bias bound) and, for today's IISE rule, the
all-configuration ζ̂ are calibrated on the source's *other* tasks (leave-one-task-out,
:func:`mf_sched.curves.calibration.calibrate_race` / :func:`mf_sched.curves.calibration.calibrate`), so no method
sees the held-out task before it runs. Curves are cut at 27 epochs (TaskSet: evaluations) so that every method's rungs
are 1, 3, 9, 27. For every (task, seed) a run draws ``K`` configurations of the task and one noisy
learning curve per configuration (the source's curve plus N(0, 0.01²) per epoch: LCBench's surrogate and
TaskSet have one seed, 0.01 is the seed spread DeepOBS shows); every method sees the same configurations and
the same noise draws.

Part ``ray`` — a Ray Tune experiment of ``K`` trials on 2 workers, every scheduler run to completion through the
same simulation of Tune's trial loop (:mod:`benchmarks.tune_sim`: the real scheduler objects, no actors;
checkpoint at every epoch). FIFO trains everything (its answer: the best final value). ASHA and HyperBand at
their documented defaults except rungs aligned to ours (reduction factor 3, grace period 1, ``max_t`` = the
last epoch). IISE (today's synchronous rule, all-configuration ζ̂), racing with ζ⁺ calibrated on other tasks,
and racing with the shipped prior (zero configuration). Each is scored on its own answer (the best trial that
reached the last epoch); reported: epochs as a fraction of FIFO's, the share of runs whose answer is FIFO's,
the share with regret no worse than FIFO's, mean simple regret.

With ``--syne-python`` (an environment with ``syne-tune==0.16`` and ``pandas<3``, see
:mod:`benchmarks.syne_tune_runner`), Syne Tune's ASHA and BOHB run on the same curves with its own simulator.

Part ``optuna`` — the same configurations as a categorical parameter, an equal budget of epochs (``8`` full runs,
enforced exactly: the study stops when it is spent, mid-trial if need be): Random and TPE with Optuna's Median,
SuccessiveHalving and Hyperband pruners (rungs aligned: reduction factor 3, minimum resource 1), Random +
MFPruner (racing), MFSampler + MFPruner (racing; an ordinary objective, and a resumable one with
``train_to()``/``finish()``), the zero-configuration ``MFSampler()`` + ``MFPruner()``, and today's IISE rule
(``policy="iise-rungs"``). Every method is scored on its own answer (``study.best_trial``; MFSampler's
recommendation); reported: mean and median final simple regret, wins against TPE + Hyperband.

    python -m benchmarks.racing --quick                    # 3 tasks per source, 2 seeds
    python -m benchmarks.racing                            # every task, 10 seeds (hours on 2 cores)
    python -m benchmarks.racing --part optuna --sources lcbench

Prints tables, writes ``benchmarks/results/racing.json`` and ``racing.png`` (Ray: mean regret against epochs as
a fraction of FIFO's; Optuna: median regret against epochs spent). ``--replot JSON`` redraws a plot from a run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from mf_sched.integrations._common import auto_resources

from benchmarks._common import pyplot, run_jobs, save_figure, write_json
from mf_sched.curves import LearningCurves
from mf_sched.curves.calibration import calibrate
from mf_sched.curves.race_calibration import best_of_k_improvements, race_bound
from mf_sched.ladder import FidelityLadder

ROOT = Path(__file__).resolve().parents[1]
NOISE = 0.01
K_RAY = 24
K_OPTUNA = 40
BUDGET_RUNS = 8
#: every curve is cut at 27 epochs (evaluations, for TaskSet), so that HyperBand's brackets (max_t = 27, η = 3)
#: and ASHA's rungs fall exactly on our rungs 1, 3, 9, 27: no method pauses between checkpoints or is scored
#: at another fidelity
MAX_EPOCH = 27


@dataclass
class Source:
    name: str
    scores: dict[str, np.ndarray]  # task -> (configurations, T) true score per epoch (higher is better)
    mode: str  # the metric's own direction: metric = score ("max") or -score ("min")
    form: str  # ζ⁺ form: "absolute" or "relative" (ideal 0 for a loss)

    @property
    def T(self) -> int:
        return next(iter(self.scores.values())).shape[1]

    @property
    def rungs(self) -> list[int]:
        return [int(r) for r in auto_resources(self.T)]


def load_source(name: str, n_tasks: int | None, n_configs: int) -> Source:
    from mf_sched.curves.datasets import LCBenchSurrogate, load_taskset

    if name == "lcbench":
        sur = LCBenchSurrogate()
        tasks = list(sur.tasks)[:n_tasks]
        curves = sur.curves(tasks, n_configs=n_configs, epochs=list(range(1, 53)), seed=0)
        T, mode, form = 52, "max", "absolute"
    elif name == "taskset":
        curves = load_taskset()
        tasks = list(curves.task_labels)[:n_tasks]
        curves = curves.select(tasks=tasks)
        T, mode, form = 51, "min", "relative"  # a loss: ζ⁺ as a fraction of the current loss (as the prior)
    else:
        raise ValueError(f"unknown source {name!r}; accepted: lcbench, taskset")
    rv = curves.values_at(np.arange(1, T + 1))
    means = rv.means()
    scores = {}
    for ti, t in enumerate(curves.task_labels):
        x = means[rv.config_task == ti]
        scores[str(t)] = x[np.isfinite(x).all(axis=1), :MAX_EPOCH]
    return Source(name, scores, mode, form)


def calibrations(src: Source, seed: int = 0, method: str = "bootstrap") -> tuple[dict, dict]:
    """Leave-one-task-out ζ⁺ (RaceBias) and all-configuration ζ ladders, per held-out task."""
    rungs = src.rungs
    cols = np.array(rungs) - 1
    rng = np.random.default_rng(seed)
    ideal = 0.0 if src.form == "relative" else None
    samples = {
        t: best_of_k_improvements(x[:, cols], 20, 200, rng, form=src.form, ideal=ideal) for t, x in src.scores.items()
    }
    race, iise = {}, {}
    for t in src.scores:
        others = {u: s for u, s in samples.items() if u != t}
        cal = race_bound(others, rungs, form=src.form, ideal=ideal, n_arms=20, holdout=False, bootstrap=500,
                         method=method,
                         source=f"{src.name} without task {t}")  # fmt: skip
        race[t] = cal.bias()
        rows = [
            {"task": u, "config": c, "fidelity": float(r), "metric": float(x[c, r - 1])}
            for u, x in src.scores.items() if u != t for c in range(x.shape[0]) for r in rungs
        ]  # fmt: skip
        lc = LearningCurves.from_records(rows, metric="metric", mode="max", fidelity="fidelity", task="task")
        zeta = calibrate(lc, rungs, quantile=0.95, seed=0, holdout=None).zeta
        iise[t] = FidelityLadder(costs=rungs, zeta=zeta, resources=rungs)
    return race, iise


def draw(scores: np.ndarray, task: str, seed: int, K: int) -> tuple[np.ndarray, np.ndarray]:
    """K configurations of ``task`` (true score curves) and their noisy curves, the same for every method (the
    random stream depends on the task's name, the seed and K only: every process draws the same)."""
    x = scores
    rng = np.random.default_rng([seed, zlib.crc32(task.encode()), K])
    arms = rng.choice(x.shape[0], K, replace=False)
    true = x[arms]
    return true, true + NOISE * rng.standard_normal(true.shape)


# ------------------------------------------------------------------------------------------ Optuna part
def optuna_run(label: str, true: np.ndarray, noisy: np.ndarray, mode: str, rungs: list[int], bias, ladder_iise,
               seed: int) -> dict:  # fmt: skip
    import optuna
    from mf_sched.integrations.optuna import MFPruner, MFSampler, finish, train_to

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    K, T = true.shape
    B = BUDGET_RUNS * T
    sign = 1.0 if mode == "max" else -1.0
    s, p = optuna.samplers, optuna.pruners
    hb = dict(min_resource=1, max_resource=T, reduction_factor=3)
    space = {"arm": list(range(K))}
    resumable = False
    if label == "Random+Median":
        sampler, pruner = s.RandomSampler(seed=seed), p.MedianPruner()
    elif label == "Random+SH":
        sampler, pruner = s.RandomSampler(seed=seed), p.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3)
    elif label == "Random+Hyperband":
        sampler, pruner = s.RandomSampler(seed=seed), p.HyperbandPruner(**hb)
    elif label == "TPE+Median":
        sampler, pruner = s.TPESampler(seed=seed), p.MedianPruner()
    elif label == "TPE+Hyperband":
        sampler, pruner = s.TPESampler(seed=seed), p.HyperbandPruner(**hb)
    elif label == "Random+MFPruner":
        sampler, pruner = s.RandomSampler(seed=seed), MFPruner(race_bias=bias, sigma=NOISE, max_resource=T)
    elif label == "MFSampler+MFPruner":
        sampler = MFSampler(race_bias=bias, sigma=NOISE, max_resource=T, search_space=space, seed=seed)
        pruner = MFPruner()
    elif label == "MFSampler resumable":
        sampler = MFSampler(race_bias=bias, sigma=NOISE, max_resource=T, search_space=space, seed=seed)
        pruner, resumable = MFPruner(), True
    elif label == "MFSampler() zero-config":
        sampler, pruner = MFSampler(search_space=space, seed=seed), MFPruner()
    elif label == "IISE rule (iise-rungs)":
        sampler = MFSampler(ladder_iise, policy="iise-rungs", sigma=NOISE, search_space=space, seed=seed)
        pruner, resumable = MFPruner(ladder_iise, rule="iise", sigma=NOISE), True
    else:
        raise ValueError(label)
    spent = [0]
    ckpt: dict[int, int] = {}
    curve: list[tuple[int, float]] = []
    best_true = float(true[:, -1].max())

    def out_of_budget(trial: optuna.Trial) -> bool:
        if spent[0] >= B:
            trial.study.stop()
            return True
        return False

    def ordinary(trial: optuna.Trial) -> float:
        a = trial.suggest_categorical("arm", space["arm"])
        for e in range(1, T + 1):
            if out_of_budget(trial):
                raise optuna.TrialPruned("budget spent")
            spent[0] += 1
            trial.report(sign * noisy[a, e - 1], e)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return sign * noisy[a, T - 1]

    def resumable_objective(trial: optuna.Trial) -> float:
        a = trial.suggest_categorical("arm", space["arm"])
        target = train_to(trial)
        v = sign * noisy[a, min(ckpt.get(a, 1), T) - 1]
        for e in range(ckpt.get(a, 0) + 1, target + 1):
            if out_of_budget(trial):
                raise optuna.TrialPruned("budget spent")
            spent[0] += 1
            ckpt[a] = e
            v = sign * noisy[a, e - 1]
            trial.report(v, e)
        return finish(trial, v)

    def answer(study: optuna.Study) -> int | None:
        if isinstance(sampler, MFSampler):
            rec = sampler.recommendation(study)
            return None if rec.params is None else int(rec.params["arm"])
        try:
            return int(study.best_trial.params["arm"])
        except ValueError:
            return None

    def track(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        a = answer(study)
        curve.append((spent[0], best_true - float(true[a, -1]) if a is not None else math.nan))

    study = optuna.create_study(
        direction="maximize" if mode == "max" else "minimize", sampler=sampler, pruner=pruner,
        study_name=f"{label}-{seed}-{K}",  # HyperbandPruner assigns brackets from the study name: keep it fixed
    )  # fmt: skip
    study.optimize(resumable_objective if resumable else ordinary, n_trials=10 * K * len(rungs), callbacks=[track])
    a = answer(study)
    regret = best_true - float(true[a, -1]) if a is not None else math.nan
    return {"method": label, "epochs": spent[0], "regret": regret, "trials": len(study.trials), "curve": curve}


OPTUNA_METHODS = [
    "Random+Median",
    "Random+SH",
    "Random+Hyperband",
    "TPE+Median",
    "TPE+Hyperband",
    "Random+MFPruner",
    "MFSampler+MFPruner",
    "MFSampler resumable",
    "MFSampler() zero-config",
    "IISE rule (iise-rungs)",
]


# ------------------------------------------------------------------------------------------ Ray part
def ray_methods(bias, ladder_iise, T: int, K: int) -> dict:
    from mf_sched.integrations.ray import IISEScheduler
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, HyperBandScheduler

    return {
        "FIFO": lambda: FIFOScheduler(),
        "ASHA": lambda: ASHAScheduler(max_t=T, grace_period=1, reduction_factor=3),
        "HyperBand": lambda: HyperBandScheduler(max_t=T, reduction_factor=3),
        "IISE rule (synchronous)": lambda: IISEScheduler(ladder_iise, rule="iise", sigma=NOISE, n_trials=K),
        "racing (ζ⁺ other tasks)": lambda: IISEScheduler(race_bias=bias, sigma=NOISE, n_trials=K, fixed_arms=True),
        "racing (zero-config)": lambda: IISEScheduler(),
    }


def ray_run(make, curves: np.ndarray, mode: str):
    """One experiment through the simulation of Tune's loop (:func:`benchmarks.tune_sim.simulate`): 2 workers,
    a checkpoint with every report, actors reused, the metric in its own orientation."""
    from benchmarks.tune_sim import simulate

    return simulate(make(), curves, workers=2, metric="acc", mode=mode, max_t=curves.shape[1], checkpoint=True,
                    reuse_actors=True, record_events=False)  # fmt: skip


def syne_tune_rows(jobs: list[tuple], python: str, tmp: Path) -> list[dict]:
    """ASHA and BOHB of Syne Tune (its own environment, :mod:`benchmarks.syne_tune_runner`) on the same Ray-part
    curves: one batch per source, scored like the Ray schedulers."""
    import subprocess

    out: list[dict] = []
    for src in sorted({j[0] for j in jobs}):
        mine = [j for j in jobs if j[0] == src]
        arrays, meta = {}, []
        for i, (_, task, seed, _, _, _, scores, mode, _) in enumerate(mine):
            true, noisy = draw(scores, task, seed, K_RAY)
            arrays[f"curves_{i}"] = noisy if mode == "max" else -noisy
            meta.append((task, seed, true, noisy, mode))
        npz, res = tmp / f"{src}.npz", tmp / f"{src}.json"
        np.savez(npz, **arrays)
        subprocess.run([python, str(ROOT / "benchmarks" / "syne_tune_runner.py"), str(npz), str(res), "--mode",
                        meta[0][4], "--workers", "2", "--reduction-factor", "3"], check=True,
                       stderr=subprocess.DEVNULL)  # fmt: skip
        for r in json.loads(res.read_text())["results"]:
            task, seed, true, noisy, _ = meta[r["set"]]
            fifo_arm = int(np.argmax(noisy[:, -1]))
            best = float(true[:, -1].max())
            arm = r["best"]
            out.append({
                "part": "ray", "source": src, "task": task, "seed": seed, "method": f"{r['scheduler']} (syne-tune)",
                "epochs": r["total_epochs"], "answer": arm, "fifo_answer": fifo_arm,
                "regret": best - float(true[arm, -1]) if arm is not None else math.nan,
                "fifo_regret": best - float(true[fifo_arm, -1]), "hang": False,
            })  # fmt: skip
    return out


# ------------------------------------------------------------------------------------------ driver
def job(args: tuple) -> list[dict]:
    src_name, task, seed, parts, bias, ladder_iise, scores, mode, rungs = args
    out = []
    if "ray" in parts:
        true, noisy = draw(scores, task, seed, K_RAY)
        fifo_arm = int(np.argmax(noisy[:, -1]))
        best = float(true[:, -1].max())
        metric = noisy if mode == "max" else -noisy  # what the trainable reports (a loss for TaskSet)
        for label, make in ray_methods(bias, ladder_iise, true.shape[1], K_RAY).items():
            r = ray_run(make, metric, mode)
            arm = r.best()
            out.append({
                "part": "ray", "source": src_name, "task": task, "seed": seed, "method": label,
                "epochs": r.total_epochs, "answer": arm, "fifo_answer": fifo_arm,
                "regret": best - float(true[arm, -1]) if arm is not None else math.nan,
                "fifo_regret": best - float(true[fifo_arm, -1]), "hang": bool(r.hang),
                "makespan": r.makespan, "utilisation": r.utilisation,
            })  # fmt: skip
    if "optuna" in parts:
        true, noisy = draw(scores, task, seed, K_OPTUNA)
        for label in OPTUNA_METHODS:
            r = optuna_run(label, true, noisy, mode, rungs, bias, ladder_iise, seed)
            r.update(part="optuna", source=src_name, task=task, seed=seed)
            out.append(r)
    return out


def summarise(rows: list[dict]) -> dict:
    summary: dict = {}
    for part in ("ray", "optuna"):
        for src in sorted({r["source"] for r in rows if r["part"] == part}):
            rs = [r for r in rows if r["part"] == part and r["source"] == src]
            methods = list(dict.fromkeys(r["method"] for r in rs))
            key = f"{part}/{src}"
            summary[key] = {}
            if part == "ray":
                fifo = {(r["task"], r["seed"]): r["epochs"] for r in rs if r["method"] == "FIFO"}
                print(f"\n== Ray, {src}: {len(fifo)} (task, seed) runs × {K_RAY} trials, 2 workers")
                print(f"{'method':28s} {'epochs/FIFO':>11s} {'FIFO answer':>11s} {'regret≤FIFO':>11s} "
                      f"{'regret mean':>11s} {'median':>8s}")  # fmt: skip
                for m in methods:
                    mr = [r for r in rs if r["method"] == m]
                    s = {
                        "epochs_ratio": float(np.mean([r["epochs"] / fifo[(r["task"], r["seed"])] for r in mr])),
                        "same_answer": float(np.mean([r["answer"] == r["fifo_answer"] for r in mr])),
                        "regret_le_fifo": float(np.mean([r["regret"] <= r["fifo_regret"] + 1e-12 for r in mr])),
                        "regret_mean": float(np.nanmean([r["regret"] for r in mr])),
                        "regret_median": float(np.nanmedian([r["regret"] for r in mr])),
                        "hangs": int(sum(r["hang"] for r in mr)),
                        "runs": len(mr),
                    }
                    summary[key][m] = s
                    print(f"{m:28s} {s['epochs_ratio']:11.3f} {s['same_answer']:11.3f} {s['regret_le_fifo']:11.3f} "
                          f"{s['regret_mean']:11.4f} {s['regret_median']:8.4f}")  # fmt: skip
            else:
                ref = {(r["task"], r["seed"]): r["regret"] for r in rs if r["method"] == "TPE+Hyperband"}
                print(f"\n== Optuna, {src}: {len(ref)} (task, seed) runs × {K_OPTUNA} configurations, equal budget "
                      f"of {BUDGET_RUNS} full runs")  # fmt: skip
                print(f"{'method':28s} {'regret mean':>11s} {'median':>8s} {'≤ TPE+HB':>9s} {'epochs':>7s} "
                      f"{'trials':>7s}")  # fmt: skip
                for m in methods:
                    mr = [r for r in rs if r["method"] == m]
                    reg = np.array([r["regret"] for r in mr], dtype=float)
                    s = {
                        "regret_mean": float(np.nanmean(reg)),
                        "regret_median": float(np.nanmedian(reg)),
                        "no_answer": int(np.isnan(reg).sum()),
                        "le_tpe_hyperband": float(
                            np.mean(
                                [
                                    np.isfinite(r["regret"]) and r["regret"] <= ref[(r["task"], r["seed"])] + 1e-12
                                    for r in mr
                                ]
                            )
                        ),  # fmt: skip
                        "epochs_mean": float(np.mean([r["epochs"] for r in mr])),
                        "trials_mean": float(np.mean([r["trials"] for r in mr])),
                        "runs": len(mr),
                    }
                    summary[key][m] = s
                    print(f"{m:28s} {s['regret_mean']:11.4f} {s['regret_median']:8.4f} {s['le_tpe_hyperband']:9.3f} "
                          f"{s['epochs_mean']:7.0f} {s['trials_mean']:7.0f}")  # fmt: skip
    return summary


def plot(rows: list[dict], path: Path) -> None:
    plt = pyplot()
    if plt is None:
        return

    keys = sorted({(r["part"], r["source"]) for r in rows})
    fig, axes = plt.subplots(1, len(keys), figsize=(5.5 * len(keys), 4.2), squeeze=False)
    for ax, (part, src) in zip(axes[0], keys):
        rs = [r for r in rows if r["part"] == part and r["source"] == src]
        methods = list(dict.fromkeys(r["method"] for r in rs))
        for i, m in enumerate(methods):
            mr = [r for r in rs if r["method"] == m]
            if part == "ray":
                fifo = {(r["task"], r["seed"]): r["epochs"] for r in rs if r["method"] == "FIFO"}
                x = np.mean([r["epochs"] / fifo[(r["task"], r["seed"])] for r in mr])
                ax.scatter(x, np.nanmean([r["regret"] for r in mr]), s=60, color=f"C{i}", label=m)
                ax.set_xlabel("epochs / FIFO's")
            else:
                B = max(r["epochs"] for r in rs)
                grid = np.linspace(0, B, 60)
                ys = []
                for r in mr:
                    if not r["curve"]:
                        continue
                    e, g = np.array(r["curve"], dtype=float).T
                    ys.append([g[np.searchsorted(e, x, side="right") - 1] if x >= e[0] else np.nan for x in grid])
                with warnings.catch_warnings():  # a grid point before any answer: NaN
                    warnings.simplefilter("ignore", RuntimeWarning)
                    ax.plot(grid, np.nanmedian(np.array(ys, dtype=float), axis=0), color=f"C{i}", label=m)
                ax.set_xlabel("epochs spent")
                ax.set_yscale("symlog", linthresh=1e-3)
        ax.set_ylabel("mean simple regret" if part == "ray" else "median simple regret (runs with an answer)")
        ax.set_title(f"{part}: {src}")
        ax.legend(fontsize=7)
    save_figure(fig, path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 tasks per source, 2 seeds")
    ap.add_argument("--sources", default="lcbench,taskset")
    ap.add_argument("--part", default="ray,optuna", help="ray, optuna or both")
    ap.add_argument("--tasks", type=int, default=None)
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--calibration", default="bootstrap", choices=("bootstrap", "conformal"),
                    help="how ζ⁺ is bounded over the other tasks (race_bound's method)")  # fmt: skip
    ap.add_argument(
        "--syne-python", default=None,
        help="python of an environment with syne-tune 0.16 (pandas<3): adds its ASHA and BOHB to the Ray part",
    )  # fmt: skip
    ap.add_argument("--out", default="benchmarks/results/racing.json")
    ap.add_argument("--replot", default=None, help="a results JSON of an earlier run: redraw its plot and table")
    args = ap.parse_args()
    if args.replot:
        saved = json.loads(Path(args.replot).read_text())
        summarise(saved["rows"])
        plot(saved["rows"], Path(args.replot).with_suffix(".png"))
        return 0
    n_tasks = args.tasks or (3 if args.quick else None)
    n_seeds = args.seeds or (2 if args.quick else 10)
    parts = set(args.part.split(","))
    t0 = time.perf_counter()
    jobs = []
    for name in args.sources.split(","):
        try:
            src = load_source(name, n_tasks, 150 if args.quick else 400)
        except (FileNotFoundError, ImportError) as e:
            print(f"cannot load {name}: {e}", file=sys.stderr)
            return 1
        race, iise = calibrations(src, method=args.calibration)
        print(f"{name}: {len(src.scores)} tasks, rungs {src.rungs}, calibrated in {time.perf_counter() - t0:.0f} s",
              flush=True)  # fmt: skip
        for t in src.scores:
            for seed in range(n_seeds):
                jobs.append((name, t, seed, parts, race[t], iise[t], src.scores[t], src.mode, src.rungs))
    rows: list[dict] = [row for out in run_jobs(job, jobs, args.jobs, "(task, seed) runs") for row in out]
    if args.syne_python and "ray" in parts:
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            rows.extend(syne_tune_rows(jobs, args.syne_python, Path(d)))
    summary = summarise(rows)
    print(f"\nwall time {time.perf_counter() - t0:.0f} s")
    out = ROOT / args.out
    write_json(out, {"summary": summary, "rows": rows, "args": vars(args)}, indent=None)
    plot(rows, out.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
