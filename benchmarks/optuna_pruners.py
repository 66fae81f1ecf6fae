"""MFSampler / MFPruner against Optuna's samplers and pruners on LCBench learning-curve replays.

Each task of LCBench (through the YAHPO surrogate, ``../shared/data``) gives a replay benchmark
(:class:`mf_sched.curves.replay.ReplayBenchmark`): ``K`` configurations with their learning curves at epochs
1, 3, 9, 27, 52 (plus N(0, 0.01²) seed noise), ζ calibrated on *other* configurations of the task. A trial
is one configuration (the categorical parameter ``arm``) trained epoch-rung by epoch-rung, reporting its
validation accuracy at each rung step; all methods get the same budget of cumulative epochs (trials are
started until it is spent; pruned trials pay only the epochs they trained; resumable runs are continued,
not retrained, for MFSampler, whose objective resumes the configuration's run at its previous rung).

Methods: Random and TPE samplers with MedianPruner, SuccessiveHalvingPruner, HyperbandPruner; Random +
MFPruner; MFSampler (``iise-rungs``) + MFPruner. Measured: simple regret (true final accuracy of the best
configuration minus that of the method's answer: ``study.best_trial``, i.e. the best full-fidelity (COMPLETE)
trial, for every method; for MFSampler the policy's recommendation once the policy has finished, or while
no configuration has reached full fidelity) against
cumulative epochs, and the epochs each method
first reaches TPE+Hyperband's mean final regret. Also the per-trial overhead of MFSampler's ``ask`` with 1,000
finished trials in SQLite, as a ratio to TPESampler's, measured in the same process.

    python -m benchmarks.optuna_pruners --quick     # 2 tasks × 2 seeds
    python -m benchmarks.optuna_pruners             # 6 tasks × 5 seeds

Prints a table, writes ``benchmarks/results/optuna_pruners.json`` and ``.png``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import optuna
from mf_sched.integrations.optuna import MFPruner, MFSampler, budget, finish

from mf_sched._progress import Progress
from mf_sched.curves.datasets import LCBenchSurrogate
from mf_sched.curves.replay import ReplayBenchmark

EPOCHS = [1, 3, 9, 27, 52]
NOISE = 0.01


def methods(ladder, K: int, seed: int) -> dict[str, tuple]:
    s = optuna.samplers
    p = optuna.pruners
    hb = dict(min_resource=1, max_resource=EPOCHS[-1], reduction_factor=3)
    sh = dict(min_resource=1, reduction_factor=3)
    return {
        "Random+Median": (s.RandomSampler(seed=seed), p.MedianPruner(n_warmup_steps=1)),
        "Random+SH": (s.RandomSampler(seed=seed), p.SuccessiveHalvingPruner(**sh)),
        "Random+Hyperband": (s.RandomSampler(seed=seed), p.HyperbandPruner(**hb)),
        "TPE+Hyperband": (s.TPESampler(seed=seed), p.HyperbandPruner(**hb)),
        "TPE+Median": (s.TPESampler(seed=seed), p.MedianPruner(n_warmup_steps=1)),
        "Random+MFPruner": (s.RandomSampler(seed=seed), MFPruner(ladder, sigma=NOISE, n_trials=None)),
        "MFSampler+MFPruner": (
            MFSampler(ladder, search_space={"arm": list(range(K))}, sigma=NOISE, seed=seed),
            MFPruner(ladder, sigma=NOISE),
        ),
    }


def run_one(bench: ReplayBenchmark, label: str, sampler, pruner, budget_epochs: float, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    K = bench.K
    runs: dict[int, tuple] = {}  # MFSampler: the run of each arm and the rung it reached
    spent = [0.0]
    curve: list[tuple[float, float]] = []
    true = bench.true_means
    best = float(true.max())

    def answer(study: optuna.Study) -> int | None:
        # every method answers with its best full-fidelity (COMPLETE) trial; MFSampler's policy answers
        # instead once it has finished (its recommendation then carries the certificate)
        r = sampler.recommendation(study) if isinstance(sampler, MFSampler) else None
        if r is not None and r.done:
            return r.arm
        try:
            return int(study.best_trial.params["arm"])
        except ValueError:  # no full-fidelity trial yet: MFSampler's policy answers from the rungs it reached
            return None if r is None else r.arm

    def objective(trial: optuna.Trial) -> float:
        arm = trial.suggest_categorical("arm", list(range(K)))
        target = budget(trial) if isinstance(sampler, MFSampler) else EPOCHS[-1]
        m_target = EPOCHS.index(target)
        start_m = -1
        if isinstance(sampler, MFSampler) and arm in runs and runs[arm][1] < m_target:
            run, start_m = runs[arm]
        else:
            run = bench.start_run(arm, rng)
        val = float("nan")
        for m in range(start_m + 1, m_target + 1):
            ev = run.advance(m)
            spent[0] += EPOCHS[m] - (EPOCHS[m - 1] if m > 0 else 0)
            val = ev.score
            runs[arm] = (run, m)
            trial.report(val, EPOCHS[m])
            if trial.should_prune():
                raise optuna.TrialPruned()
        return finish(trial, val) if isinstance(sampler, MFSampler) else val

    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=pruner)
    while spent[0] < budget_epochs:
        study.optimize(objective, n_trials=5)
        a = answer(study)
        curve.append((spent[0], best - float(true[a]) if a is not None else float("nan")))
        if isinstance(sampler, MFSampler) and sampler.recommendation(study).done:
            break
    return {"method": label, "epochs": spent[0], "regret": curve[-1][1], "curve": curve, "trials": len(study.trials)}


def overhead(n: int = 1000) -> dict:
    """Seconds per ask() with n finished trials in SQLite: MFSampler vs TPESampler (same process)."""
    from optuna.distributions import CategoricalDistribution
    from optuna.trial import TrialState, create_trial

    from mf_sched import FidelityLadder

    ladder = FidelityLadder([1, 3, 9, 27], [0.2, 0.1, 0.05, 0.0], resources=[1, 3, 9, 27])
    out = {}
    with tempfile.TemporaryDirectory() as d:
        for label, sampler in (
            ("TPESampler", optuna.samplers.TPESampler(seed=0)),
            ("MFSampler", MFSampler(ladder, search_space={"arm": list(range(200))}, sigma=0.01, seed=0)),
        ):
            st = optuna.create_study(storage=f"sqlite:///{d}/{label}.db", direction="maximize", sampler=sampler)
            rng = np.random.default_rng(0)
            dist = {"arm": CategoricalDistribution(list(range(200)))}
            for i in range(n):
                attrs = {"mf:arm": i % 200, "mf:fidelity": 0, "mf:result": float(rng.random())}
                st.add_trial(
                    create_trial(
                        state=TrialState.PRUNED if label == "MFSampler" else TrialState.COMPLETE,
                        value=float(rng.random()),
                        params={"arm": i % 200},
                        distributions=dist,
                        system_attrs=attrs if label == "MFSampler" else {},
                    )
                )
            t0 = time.perf_counter()
            for _ in range(10):
                tr = st.ask()
                tr.suggest_categorical("arm", list(range(200)))
                st.tell(tr, 0.5)
            out[label] = (time.perf_counter() - t0) / 10
    out["ratio"] = out["MFSampler"] / out["TPESampler"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--tasks", type=int, default=None)
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--arms", type=int, default=40)
    ap.add_argument("--budget-runs", type=float, default=8.0, help="budget = this many full 52-epoch runs")
    ap.add_argument("--out", default="benchmarks/results/optuna_pruners.json")
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    n_tasks = args.tasks or (2 if args.quick else 6)
    n_seeds = args.seeds or (2 if args.quick else 5)
    try:
        sur = LCBenchSurrogate()
    except (FileNotFoundError, ImportError) as e:
        print(f"cannot load the LCBench surrogate: {e}", file=sys.stderr)
        return 1
    tasks = list(sur.tasks)[:n_tasks]
    rows: list[dict] = []
    t0 = time.perf_counter()
    budget_epochs = args.budget_runs * EPOCHS[-1]
    with Progress(n_tasks * n_seeds, "task × seed", True) as bar:
        for ti, task in enumerate(tasks):
            curves = sur.curves(task, n_configs=400, epochs=EPOCHS, seed=ti)
            bench = ReplayBenchmark.from_curves(
                curves, EPOCHS, n_arms=args.arms, calibration="holdout", extra_noise=NOISE, seed=ti
            )
            for s in range(n_seeds):
                for label, (sampler, pruner) in methods(bench.ladder, bench.K, 100 * ti + s).items():
                    r = run_one(bench, label, sampler, pruner, budget_epochs, 100 * ti + s)
                    r.update(task=task, seed=s)
                    rows.append(r)
                bar.update()
    labels = list(dict.fromkeys(r["method"] for r in rows))
    ref = np.nanmean([r["regret"] for r in rows if r["method"] == "TPE+Hyperband"])
    print(
        f"\nLCBench replays: {n_tasks} tasks × {n_seeds} seeds, {args.arms} configurations, budget "
        f"{budget_epochs:g} epochs ({args.budget_runs:g} full runs); simple regret of the answer (accuracy)"
    )
    print(
        f"{'method':22s} {'regret mean':>12s} {'median':>8s} {'epochs':>8s} {'trials':>7s} "
        f"{'epochs to TPE+HB regret':>24s}"
    )
    summary = {}
    for lab in labels:
        rs = [r for r in rows if r["method"] == lab]
        reg = np.array([r["regret"] for r in rs], dtype=float)
        reach = []
        for r in rs:
            hit = [e for e, g in r["curve"] if np.isfinite(g) and g <= ref + 1e-12]
            reach.append(hit[0] if hit else np.nan)
        summary[lab] = {
            "regret_mean": float(np.nanmean(reg)),
            "regret_median": float(np.nanmedian(reg)),
            "epochs_mean": float(np.mean([r["epochs"] for r in rs])),
            "trials_mean": float(np.mean([r["trials"] for r in rs])),
            "epochs_to_reference_regret_median": float(np.nanmedian(reach)) if np.isfinite(reach).any() else None,
            "reached_reference": float(np.mean(np.isfinite(reach))),
        }
        s_ = summary[lab]
        reach_s = (
            "-"
            if s_["epochs_to_reference_regret_median"] is None
            else f"{s_['epochs_to_reference_regret_median']:.0f} ({100 * s_['reached_reference']:.0f}% runs)"
        )
        print(
            f"{lab:22s} {s_['regret_mean']:12.4f} {s_['regret_median']:8.4f} {s_['epochs_mean']:8.0f} "
            f"{s_['trials_mean']:7.0f} {reach_s:>24s}"
        )
    ov = overhead()
    print(
        f"\nper-trial ask+tell with 1,000 finished trials in SQLite: MFSampler {ov['MFSampler'] * 1e3:.1f} ms, "
        f"TPESampler {ov['TPESampler'] * 1e3:.1f} ms (ratio {ov['ratio']:.2f})"
    )
    print(f"wall time {time.perf_counter() - t0:.0f} s")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"summary": summary, "overhead": ov, "rows": rows, "args": vars(args)}, indent=1))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4.5))
        grid = np.linspace(0, budget_epochs, 60)
        for i, lab in enumerate(labels):
            ys = []
            for r in (r for r in rows if r["method"] == lab):
                e, g = np.array(r["curve"]).T
                ys.append([g[np.searchsorted(e, x, side="right") - 1] if x >= e[0] else np.nan for x in grid])
            ax.plot(grid, np.nanmean(np.array(ys, dtype=float), axis=0), label=lab, color=f"C{i}")
        ax.set_xlabel("cumulative epochs")
        ax.set_ylabel("simple regret (accuracy)")
        ax.set_yscale("symlog", linthresh=1e-3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out.with_suffix(".png"), dpi=120)
        print(f"wrote {out} and {out.with_suffix('.png')}")
    except ImportError:  # pragma: no cover
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
