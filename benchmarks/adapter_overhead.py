"""Per-call overhead of the adapters as studies grow: MFSampler / MFPruner against Optuna's samplers and pruners,
and the Ray scheduler against ASHA, at n = 100 … 5,000 trials.

Optuna (in-memory storage, one process): a study is filled with ``n`` finished trials of a 40-configuration
categorical space with learning curves at epochs 1 … 27 (values of a fixed random table; a third of them pruned
at rungs, as a race leaves them), then we time, per call, in the same process (the categorical has 10,000
choices for every sampler, so that MFSampler's race is still under way at every ``n``):

* **samplers** — one trial's sampling: ``study.ask()``, ``suggest_categorical``, and ``study.tell`` of a
  full-fidelity value (``before_trial`` + ``sample_independent`` + ``after_trial``), for MFSampler (racing,
  zero configuration), TPESampler and RandomSampler; MFSampler is also timed once its race is over (the
  study keeps sampling, ``keep_sampling=True``);
* **pruners** — ``pruner.prune(study, trial)`` for a running trial that has just crossed a rung, for
  MFPruner (racing, with RandomSampler), MedianPruner and HyperbandPruner.

Ray (no actors): ``n`` stub trials, each reporting its first rung and pausing, then the time of one
``on_trial_result`` (a trial crossing a rung) and one ``choose_trial_to_run``, for IISEScheduler (racing) and
ASHAScheduler (which never pauses: it is timed on the same calls).

Reported: median milliseconds per call, the ratio to the baseline (TPESampler, HyperbandPruner, ASHA) timed in
the same process, and the growth exponent (slope of log time against log n). CPU time (process_time) is used,
so the other processes on a shared machine matter less.

    python -m benchmarks.adapter_overhead            # n = 100, 500, 1000, 2000, 5000
    python -m benchmarks.adapter_overhead --quick    # n = 100, 500

Prints a table, writes ``benchmarks/results/adapter_overhead.json`` and ``.png``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from benchmarks._common import pyplot, save_figure, write_json

ROOT = Path(__file__).resolve().parents[1]
K = 40
EPOCHS = 27
RUNGS = (1, 3, 9, 27)
BIG_K = 10_000


def _table(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    final = rng.uniform(0.5, 0.9, K)
    return final[:, None] * (1 - 0.3 * np.exp(-np.arange(1, EPOCHS + 1)[None, :] / 4))


def _filled_study(n: int, sampler, pruner, curves: np.ndarray, mf: bool, choices: int = K):
    import optuna
    from optuna.distributions import CategoricalDistribution
    from optuna.trial import TrialState, create_trial

    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=pruner)
    dist = {"arm": CategoricalDistribution(list(range(choices)))}
    rng = np.random.default_rng(1)
    for i in range(n):
        a = i % K
        stop = EPOCHS if rng.random() < 0.66 else int(rng.choice(RUNGS[:-1]))
        iv = {e: float(curves[a, e - 1]) for e in range(1, stop + 1)}
        attrs = {"mf:arm": a, "mf:fidelity": len(RUNGS) - 1} if mf else {}
        study.add_trial(
            create_trial(
                state=TrialState.COMPLETE if stop == EPOCHS else TrialState.PRUNED,
                value=iv[stop], params={"arm": a}, distributions=dist, intermediate_values=iv, system_attrs=attrs,
            )
        )  # fmt: skip
    return study


def _cpu(fn, reps: int) -> float:
    out = []
    for _ in range(reps):
        t0 = time.process_time()
        fn()
        out.append(time.process_time() - t0)
    return float(np.median(out))


def time_samplers(n: int, reps: int) -> dict[str, float]:
    import optuna
    from mf_sched.integrations.optuna import MFPruner, MFSampler

    curves = _table()
    out = {}
    big = {"arm": list(range(BIG_K))}  # a race still under way: more candidates than trials
    makers = {
        "TPESampler": (lambda: optuna.samplers.TPESampler(seed=0), False, False),
        "RandomSampler": (lambda: optuna.samplers.RandomSampler(seed=0), False, False),
        "MFSampler": (lambda: MFSampler(seed=0, search_space=big, max_grid=BIG_K, max_resource=EPOCHS), True, False),
        "MFSampler (race over)": (lambda: MFSampler(seed=0, keep_sampling=True), True, True),
    }
    for label, (make, mf, over) in makers.items():
        sampler = make()
        choices = K if over else BIG_K  # the same 10,000-point space for every sampler (the race is under way)
        study = _filled_study(n, sampler, MFPruner() if mf else optuna.pruners.NopPruner(), curves, mf, choices)
        if over:  # one decision marks the race as over (every candidate is at the top or stopped)
            t = study.ask()
            t.suggest_categorical("arm", list(range(K)))
            study.tell(t, 0.5)

        space = list(range(choices))

        def one(study=study, space=space) -> None:
            t = study.ask()
            t.suggest_categorical("arm", space)
            study.tell(t, 0.5)

        out[label] = _cpu(one, reps)
    return out


def time_pruners(n: int, reps: int) -> dict[str, float]:
    import optuna
    from mf_sched.integrations.optuna import MFPruner

    curves = _table()
    out = {}
    makers = {
        "HyperbandPruner": lambda: optuna.pruners.HyperbandPruner(
            min_resource=1, max_resource=EPOCHS, reduction_factor=3
        ),
        "MedianPruner": lambda: optuna.pruners.MedianPruner(),
        "MFPruner": lambda: MFPruner(max_resource=EPOCHS),
    }  # fmt: skip
    for label, make in makers.items():
        pruner = make()
        study = _filled_study(n, optuna.samplers.RandomSampler(seed=0), pruner, curves, False)
        trial = study.ask()
        trial.suggest_categorical("arm", list(range(K)))
        for e in range(1, 10):
            trial.report(float(curves[0, e - 1]), e)  # the trial has just crossed rung 9
        frozen = study._storage.get_trial(trial._trial_id)
        pruner.prune(study, frozen)  # warm (Hyperband initialises its brackets on the first call)
        out[label] = _cpu(lambda p=pruner, s=study, f=frozen: p.prune(s, f), reps)
    return out


def time_ray(n: int, reps: int) -> dict[str, float]:
    from mf_sched.integrations.ray import IISEScheduler
    from ray.tune.experiment import Trial
    from ray.tune.schedulers import ASHAScheduler

    class Controller:
        def __init__(self, trials):
            self.trials = trials

        def get_trials(self):
            return self.trials

        def stop_trial(self, trial):
            trial.set_status(Trial.TERMINATED)

    out = {}
    rng = np.random.default_rng(0)
    for label, make in {
        "ASHAScheduler": lambda: ASHAScheduler(
            metric="acc", mode="max", max_t=EPOCHS, grace_period=1, reduction_factor=3
        ),
        "IISEScheduler": lambda: IISEScheduler(metric="acc", mode="max", max_t=EPOCHS),
    }.items():  # fmt: skip
        sched = make()
        trials = [Trial("__fake", trial_id=f"t{i}", stub=True, config={}) for i in range(n)]
        ctl = Controller(trials)
        for t in trials:
            sched.on_trial_add(ctl, t)
        for t in trials:
            t.set_status(Trial.RUNNING)
            res = {"training_iteration": 1, "acc": float(rng.uniform(0.3, 0.6)), "should_checkpoint": True}
            if sched.on_trial_result(ctl, t, res) == "PAUSE":
                t.set_status(Trial.PAUSED)
        live = [t for t in trials if t.status in (Trial.RUNNING, Trial.PAUSED)]
        probe = live[0]
        probe.set_status(Trial.RUNNING)
        it = iter(range(2, 10**9))

        def result(s=sched, c=ctl, p=probe) -> None:
            s.on_trial_result(c, p, {"training_iteration": 2, "acc": 0.5, "should_checkpoint": True})

        out[f"{label}.on_trial_result"] = _cpu(result, reps)
        out[f"{label}.choose_trial_to_run"] = _cpu(lambda s=sched, c=ctl: s.choose_trial_to_run(c), reps)
        next(it)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", default=None, help="comma-separated n (default 100,500,1000,2000,5000)")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--out", default="benchmarks/results/adapter_overhead.json")
    args = ap.parse_args()
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    import warnings

    warnings.simplefilter("ignore")
    sizes = [int(x) for x in (args.sizes or ("100,500" if args.quick else "100,500,1000,2000,5000")).split(",")]
    rows: dict[str, dict[int, float]] = {}
    t0 = time.perf_counter()
    for n in sizes:
        for group in (time_samplers(n, args.reps), time_pruners(n, args.reps), time_ray(n, args.reps)):
            for k, v in group.items():
                rows.setdefault(k, {})[n] = v
        print(f"n = {n} done ({time.perf_counter() - t0:.0f} s)", flush=True)
    base = {"MFSampler": "TPESampler", "MFSampler (race over)": "TPESampler", "RandomSampler": "TPESampler",
            "MFPruner": "HyperbandPruner", "MedianPruner": "HyperbandPruner",
            "IISEScheduler.on_trial_result": "ASHAScheduler.on_trial_result",
            "IISEScheduler.choose_trial_to_run": "ASHAScheduler.choose_trial_to_run"}  # fmt: skip
    print(f"\nCPU ms per call (median of {args.reps}); ratio to the baseline at the largest n; growth exponent")
    head = " ".join(f"{n:>8d}" for n in sizes)
    print(f"{'call':38s} {head} {'ratio':>7s} {'slope':>6s}")
    summary = {}
    for k, d in rows.items():
        ms = [1e3 * d[n] for n in sizes]
        slope = float(np.polyfit(np.log(sizes), np.log(np.maximum(ms, 1e-6)), 1)[0]) if len(sizes) > 1 else float("nan")
        ratio = d[sizes[-1]] / rows[base[k]][sizes[-1]] if k in base else float("nan")
        summary[k] = {"ms": dict(zip(sizes, ms)), "ratio_to_baseline": ratio, "baseline": base.get(k), "slope": slope}
        print(f"{k:38s} " + " ".join(f"{x:8.2f}" for x in ms) + f" {ratio:7.2f} {slope:6.2f}")
    out = ROOT / args.out
    write_json(out, {"summary": summary, "sizes": sizes, "args": vars(args)})
    plt = pyplot()
    if plt is None:
        return 0
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, (k, d) in enumerate(rows.items()):
        ax.plot(sizes, [1e3 * d[n] for n in sizes], "o-", color=f"C{i % 10}", label=k,
                ls="-" if "MF" in k or "IISE" in k else "--")  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("trials in the study")
    ax.set_ylabel("CPU ms per call")
    ax.legend(fontsize=7)
    save_figure(fig, out.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
