"""Where MFSampler's configurations come from on a continuous space: TPE proposals (the default) against the former
fixed scrambled-Sobol candidates, and against TPESampler + MFPruner, at the same epoch budget (a sanity check).

**The benchmark.** A synthetic continuous task with learning curves: three hyperparameters in [0, 1]³ (suggested
as floats); the final accuracy is ``q(x) = 0.5 + 0.1·H(x)`` with H the Hartmann-3 function (maximum 3.8628 at
(0.1146, 0.5556, 0.8525), so ``q* = 0.886``; several local maxima), and the curve
``acc(e) = q(x)·(1 − c(x)·exp(−(e − 1)/τ(x))) + ε`` rises over 27 epochs at a speed that depends on the
configuration (``τ = 1 + 7·x₁``: slow starters exist, ``c = 0.1 + 0.3·x₂``) with measurement noise ``ε ~ N(0,
0.005²)`` that is a fixed function of (configuration, epoch, task seed), so a configuration trained again shows the
same curve. Every trial is an ordinary Optuna objective (``trial.report`` every epoch, ``trial.should_prune``).

**The methods**, each stopped once ``budget`` epochs are spent (summed over trials; a trial that trains from scratch
pays again), and scored by the regret ``q* − q(answer)`` of its own answer:

* ``MFSampler()`` (TPE): ``MFSampler(seed=s, budget=B)`` + ``MFPruner()`` — K = 64 configurations proposed by
  ``TPESampler(seed=s)``; the answer is ``recommendation(study).params``;
* ``MFSampler(proposer="sobol")``: the same race over 64 fixed scrambled-Sobol points (the behaviour before the
  proposer);
* ``TPESampler + MFPruner``: ``TPESampler(seed=s)`` + ``MFPruner(budget=B)`` (racing cut plus ASHA's rule); the
  answer is ``study.best_trial`` (or, while no trial completed, the best value at the furthest step).

Budgets are in full trainings (27 epochs): ``--budgets 8 24 64`` (64 = a full-fidelity search of the K = 64
configurations; MFSampler's race ends before that, once its 64 configurations are raced). Prints a table (mean regret
± its standard error over the seeds, and the epochs actually spent), writes ``benchmarks/results/proposer.json`` and
a plot of mean regret against the epochs spent.

    python -m benchmarks.proposer                       # 10 seeds × 3 budgets × 3 methods (~5 min on 2 cores)
    python -m benchmarks.proposer --seeds 3 --budgets 8 --n-jobs 1
"""

from __future__ import annotations

import argparse
import math
import warnings
from typing import Any

import numpy as np

from benchmarks._common import RESULTS, meta, print_table, pyplot, run_jobs, save_figure, write_json

EPOCHS = 27
K = 64
NOISE = 0.005
METHODS = ("MFSampler() (TPE)", "MFSampler(proposer='sobol')", "TPESampler + MFPruner")

_A = np.array([[3.0, 10, 30], [0.1, 10, 35], [3.0, 10, 30], [0.1, 10, 35]])
_P = 1e-4 * np.array([[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547], [381, 5743, 8828]])
_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
H_MAX = 3.86278


def hartmann3(x: np.ndarray) -> float:
    """The Hartmann-3 function (to be maximised): max 3.86278 at (0.114614, 0.555649, 0.852547)."""
    return float(np.sum(_ALPHA * np.exp(-np.sum(_A * (np.asarray(x) - _P) ** 2, axis=1))))


def quality(x: np.ndarray) -> float:
    """The configuration's final (noise-free) accuracy."""
    return 0.5 + 0.1 * hartmann3(x)


Q_STAR = 0.5 + 0.1 * H_MAX


def curve(x: np.ndarray, task_seed: int) -> np.ndarray:
    """The configuration's 27 observed accuracies (a fixed function of the configuration and the task seed)."""
    x = np.asarray(x, dtype=float)
    e = np.arange(1, EPOCHS + 1)
    tau, c = 1.0 + 7.0 * x[0], 0.1 + 0.3 * x[1]
    key = [task_seed, *np.round(x * 1e9).astype(np.int64).tolist()]
    noise = np.random.default_rng(key).normal(0.0, NOISE, EPOCHS)
    return quality(x) * (1.0 - c * np.exp(-(e - 1) / tau)) + noise


def run_one(job: tuple[str, float, int]) -> dict[str, Any]:
    """One study: ``(method, budget in full trainings, seed)`` → the answer's regret and the epochs spent."""
    import optuna
    from mf_sched.integrations.optuna import MFPruner, MFSampler

    method, budget_units, seed = job
    budget = budget_units * EPOCHS
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    spent = [0]

    def objective(trial: optuna.Trial) -> float:
        x = np.array([trial.suggest_float(f"x{i}", 0.0, 1.0) for i in range(3)])
        acc = curve(x, seed)
        for epoch in range(1, EPOCHS + 1):
            spent[0] += 1
            trial.report(float(acc[epoch - 1]), epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return float(acc[-1])

    if method == METHODS[0]:
        sampler, pruner = MFSampler(seed=seed, budget=budget, n_candidates=K), MFPruner()
    elif method == METHODS[1]:
        sampler = MFSampler(proposer="sobol", candidate_seed=seed, seed=seed, budget=budget, n_candidates=K)
        pruner = MFPruner()
    else:
        sampler, pruner = optuna.samplers.TPESampler(seed=seed), MFPruner(budget=budget)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=pruner)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study.optimize(objective, n_trials=100 * K)  # a safety cap: the budget (or the race's end) stops the study
    if isinstance(sampler, MFSampler):
        rec = sampler.recommendation(study)
        params, done = rec.params, rec.done
    else:
        done = False
        complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
        if complete:
            params = study.best_trial.params
        else:
            tried = [t for t in study.trials if t.intermediate_values]
            best = max(tried, key=lambda t: (t.last_step, t.intermediate_values[t.last_step]))
            params = best.params
    x = np.array([params[f"x{i}"] for i in range(3)])
    return {
        "method": method,
        "budget": budget_units,
        "seed": seed,
        "regret": Q_STAR - quality(x),
        "epochs": spent[0],
        "trials": len(study.trials),
        "configurations": len({tuple(t.params.values()) for t in study.trials if t.params}),
        "race_over": done,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10, help="seeds (task noise and samplers), 0 .. n-1")
    ap.add_argument("--budgets", type=float, nargs="+", default=[8, 24, 64], help="epoch budgets, in full trainings")
    ap.add_argument("--n-jobs", type=int, default=2, help="worker processes")
    ap.add_argument("--out", default=str(RESULTS / "proposer.json"))
    args = ap.parse_args(argv)
    if args.seeds < 1 or any(b <= 0 for b in args.budgets):
        ap.error("--seeds must be >= 1 and every budget > 0")
    jobs = [(m, b, s) for b in args.budgets for m in METHODS for s in range(args.seeds)]
    rows = run_jobs(run_one, jobs, args.n_jobs, f"{len(jobs)} studies")
    table = []
    for b in args.budgets:
        for m in METHODS:
            r = [x for x in rows if x["method"] == m and x["budget"] == b]
            reg = np.array([x["regret"] for x in r])
            table.append({
                "budget": b, "method": m, "regret_mean": float(reg.mean()),
                "regret_se": float(reg.std(ddof=1) / math.sqrt(len(reg))) if len(reg) > 1 else None,
                "regret_median": float(np.median(reg)),
                "epochs_mean": float(np.mean([x["epochs"] for x in r])),
                "race_over": sum(bool(x["race_over"]) for x in r), "runs": len(r),
            })  # fmt: skip
    print(f"\nregret q* - q(answer) (q* = {Q_STAR:.4f}), mean ± s.e. over {args.seeds} seeds; budget in full "
          f"trainings of {EPOCHS} epochs (K = {K} configurations for MFSampler)")  # fmt: skip
    print_table(
        [("budget", ">6g"), ("method", "<28"), ("mean regret", ">11.4f"), ("± s.e.", ">7.4f"),
         ("median", ">7.4f"), ("epochs", ">7.0f"), ("race over", ">9")],
        [(t["budget"], t["method"], t["regret_mean"], t["regret_se"], t["regret_median"], t["epochs_mean"],
          f"{t['race_over']}/{t['runs']}") for t in table],
        rule=True,
    )  # fmt: skip
    write_json(args.out, {"meta": meta(args, q_star=Q_STAR, epochs=EPOCHS, K=K, noise=NOISE), "summary": table,
                          "runs": rows})  # fmt: skip
    plt = pyplot()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(6, 4))
        for m in METHODS:
            t = [x for x in table if x["method"] == m]
            ax.errorbar([x["epochs_mean"] / EPOCHS for x in t], [x["regret_mean"] for x in t],
                        yerr=[x["regret_se"] or 0.0 for x in t], marker="o", capsize=3, label=m)  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"epochs spent (mean, in full trainings of {EPOCHS}; budgets {args.budgets})")
        ax.set_ylabel("regret of the answer (mean ± s.e.)")
        ax.set_title("Hartmann-3 learning curves, ordinary objective")
        ax.legend()
        save_figure(fig, str(args.out).removesuffix(".json") + ".png")


if __name__ == "__main__":
    main()
