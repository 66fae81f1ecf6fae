"""Multi-fidelity tuning with Optuna, zero configuration: ``MFSampler()`` + ``MFPruner()`` on a real model.

The model: a linear classifier (scikit-learn's SGDClassifier) trained epoch by epoch on the hand-written
digits data that ships with scikit-learn (1,797 images, 10 classes); the metric: validation accuracy. The
objective is an ordinary Optuna objective (``trial.report`` every epoch, ``trial.should_prune``); nothing
about fidelities is configured: the rungs (1, 3, 9, 27 epochs) come from the first trial that finishes, the
search space from the first trial's ``suggest_*`` calls, and ζ⁺ (how much the best configuration can still
improve after a rung) from the prior shipped for accuracies. MFPruner stops a trial as soon as it provably
cannot beat the best finished one (racing, with confidence 1 − δ); the study stops by itself when the race
is over.

The storage is a database with Optuna's heartbeat (:func:`mf_sched.integrations.optuna.heartbeat_storage`):
a trial whose worker dies is failed and retried instead of holding its configuration forever, so several
processes can share one study (``--storage postgresql://...``, run this script on several machines).

    python examples/optuna_quickstart.py                 # `make quickstart` runs this
    python examples/optuna_quickstart.py --storage sqlite:///my.db --n-jobs 2

Prints the recommended configuration with its certificate and the epochs spent against a full-fidelity
search of the same candidates; writes ``results/optuna_quickstart.json`` and a plot of the learning curves.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from pathlib import Path

import numpy as np
import optuna
from mf_sched.integrations.optuna import MFPruner, MFSampler, heartbeat_storage
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

MAX_EPOCHS = 27
SEARCH_SPACE = {
    "alpha": [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0],
    "loss": ["hinge", "log_loss", "modified_huber", "perceptron"],
    "eta0": [0.0001, 0.001, 0.01, 0.1, 1.0],
}


def load_data(seed: int = 0) -> tuple[np.ndarray, ...]:
    X, y = load_digits(return_X_y=True)
    X_tr, X_va, y_tr, y_va = train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)
    scaler = StandardScaler().fit(X_tr)
    return scaler.transform(X_tr), scaler.transform(X_va), y_tr, y_va


def make_objective(data: tuple[np.ndarray, ...]):
    """An ordinary pruning objective: train up to 27 epochs, report the validation accuracy after each."""
    X_tr, X_va, y_tr, y_va = data
    classes = np.unique(y_tr)

    def objective(trial: optuna.Trial) -> float:
        alpha = trial.suggest_categorical("alpha", SEARCH_SPACE["alpha"])
        loss = trial.suggest_categorical("loss", SEARCH_SPACE["loss"])
        eta0 = trial.suggest_categorical("eta0", SEARCH_SPACE["eta0"])
        clf = SGDClassifier(loss=loss, alpha=alpha, learning_rate="constant", eta0=eta0, random_state=trial.number)
        rng = np.random.default_rng(trial.number)
        acc = float("nan")
        for epoch in range(1, MAX_EPOCHS + 1):
            order = rng.permutation(len(y_tr))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                clf.partial_fit(X_tr[order], y_tr[order], classes=classes)
            acc = float(clf.score(X_va, y_va))
            trial.report(acc, epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return acc

    return objective


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--storage", default="sqlite:///results/optuna_quickstart.db", help="an Optuna database URL")
    ap.add_argument("--n-jobs", type=int, default=1, help="parallel trials in this process (threads)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-trials", type=int, default=500, help="a safety cap; the study stops by itself")
    ap.add_argument("--out", default="results/optuna_quickstart.json")
    args = ap.parse_args()
    Path("results").mkdir(exist_ok=True)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    data = load_data(args.seed)
    sampler = MFSampler(seed=args.seed)
    name = f"mf-sched-quickstart-{int(time.time())}"
    storage = heartbeat_storage(args.storage, heartbeat_interval=60)  # a dead worker's trial is retried
    study = optuna.create_study(
        study_name=name, storage=storage, direction="maximize", sampler=sampler, pruner=MFPruner()
    )
    objective = make_objective(data)
    t0 = time.perf_counter()
    study.optimize(objective, n_trials=args.max_trials, n_jobs=args.n_jobs, show_progress_bar=True)
    wall = time.perf_counter() - t0
    rec = sampler.recommendation(study)
    trials = study.get_trials(deepcopy=False)
    epochs = int(rec.resources_spent)
    full, K = int(rec.full_fidelity_resources), len(sampler.candidates)
    print(f"\nstudy {name!r} in {args.storage}: {len(trials)} trials, {wall:.1f} s")
    print(f"recommended: {rec.params}")
    eps = rec.details.get("epsilon")
    cert = (
        "identified (best with prob. >= 1 - δ)" if rec.certified else f"ε-optimal, ε = {eps:.3f}" if eps else rec.reason
    )
    print(f"certificate: δ = {rec.delta}, {cert}, race over: {rec.done}")
    zp = rec.details.get("zeta_plus")
    if zp is not None:
        print(f"ζ⁺ per rung {[round(z, 3) for z in zp]} ({rec.details.get('bias_source')})")
    complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    best = max(complete, key=lambda t: t.value) if complete else None  # == study.best_trial
    if best is not None:
        print(f"best_trial (27 epochs only): #{best.number} {best.params} acc {best.value:.4f}")
    else:
        print("best_trial: none yet (no configuration has reached 27 epochs; raise --max-trials)")
    print(
        f"epochs trained: {epochs} vs {full} for a full-fidelity search of the {K} candidates "
        + (f"({100 * (1 - epochs / full):.0f}% saved)" if rec.done else "(so far: the policy has not finished)")
    )
    out = {
        "recommended": rec.params,
        "certified": rec.certified,
        "epsilon": eps,
        "delta": rec.delta,
        "n_trials": len(trials),
        "epochs": epochs,
        "full_fidelity_epochs": full,
        "best_trial": None if best is None else {"number": best.number, "params": best.params, "value": best.value},
        "details": dict(rec.details),
        "wall_s": wall,
    }
    Path(args.out).write_text(json.dumps(out, indent=2, default=lambda o: np.asarray(o).tolist()))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        for t in trials:
            if t.intermediate_values:
                xs, ys = zip(*sorted(t.intermediate_values.items()))
                ax.plot(xs, ys, color="C0" if t.state.name == "COMPLETE" else "0.7", lw=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("epoch")
        ax.set_ylabel("validation accuracy")
        ax.set_title("MFSampler + MFPruner: blue = reached 27 epochs")
        fig.tight_layout()
        fig.savefig(Path(args.out).with_suffix(".png"), dpi=120)
        print(f"wrote {args.out} and {Path(args.out).with_suffix('.png')}")
    except ImportError:  # pragma: no cover
        print(f"wrote {args.out}")
    if best is not None and not math.isfinite(best.value):  # pragma: no cover
        raise SystemExit("no finite result")


if __name__ == "__main__":
    main()
