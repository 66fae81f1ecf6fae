"""Multi-fidelity tuning with Optuna: MFSampler + MFPruner on a real model, stored in SQLite.

The model: a linear classifier (scikit-learn's SGDClassifier) trained epoch by epoch on the hand-written
digits data that ships with scikit-learn (1,797 images, 10 classes); the metric: validation accuracy.
The fidelities are 1, 3, 9 and 27 epochs. MFSampler (policy ``iise-rungs``) decides which configuration
to train and for how many epochs; cheap, biased looks (few epochs) discard configurations that provably
cannot win (ζ-aware, with confidence 1 − δ); MFPruner stops a run early when it falls behind by more than
ζ at a rung. Only 27-epoch runs become COMPLETE, so ``study.best_trial`` is a full-fidelity result.

    python examples/optuna_quickstart.py                 # `make demo` runs this
    python examples/optuna_quickstart.py --storage sqlite:///my.db --delta 0.1

Prints the recommended configuration with its certificate, the epochs spent against a full-fidelity
search of the same candidates, and a check of the ζ used against the ζ̂ estimated from the study's own
learning curves; writes ``results/optuna_quickstart.json`` and a plot of the learning curves.
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
from mf_sched.integrations.optuna import MFPruner, MFSampler, budget, curves_from_study, finish
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from mf_sched import FidelityLadder
from mf_sched.calibration import calibrate

EPOCHS = [1, 3, 9, 27]
# ζ(m): how far validation accuracy after 1, 3, 9 epochs can be from accuracy after 27 (checked at the end
# against the study's own curves); costs λ(m) = epochs.
LADDER = FidelityLadder(costs=EPOCHS, zeta=[0.12, 0.07, 0.05, 0.0], resources=EPOCHS)
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


def make_objective(data: tuple[np.ndarray, ...], ckpt_dir: Path | None):
    """The objective. With ``ckpt_dir`` a trial continues the model of the same configuration saved at the
    previous rung (Optuna cannot resume a trial, but the objective can resume the *model*): a configuration
    that climbs from 3 to 9 epochs trains 6 more epochs, not 9, and its rung values come from one run — the
    resumable setting of :mod:`mf_sched.rungs`. Checkpoints are plain ``.npz`` arrays (no pickle)."""
    X_tr, X_va, y_tr, y_va = data
    classes = np.unique(y_tr)

    def objective(trial: optuna.Trial) -> float:
        alpha = trial.suggest_categorical("alpha", SEARCH_SPACE["alpha"])
        loss = trial.suggest_categorical("loss", SEARCH_SPACE["loss"])
        eta0 = trial.suggest_categorical("eta0", SEARCH_SPACE["eta0"])
        clf = SGDClassifier(loss=loss, alpha=alpha, learning_rate="constant", eta0=eta0, random_state=trial.number)
        target = budget(trial)  # the resource MFSampler chose for this trial
        key = f"{alpha:g}-{loss}-{eta0:g}"
        start = 0
        if ckpt_dir is not None:
            saved = [int(f.stem.rsplit("-e", 1)[1]) for f in ckpt_dir.glob(f"{key}-e*.npz")]
            done = [e for e in saved if e < target]
            if done:
                start = max(done)
                with np.load(ckpt_dir / f"{key}-e{start}.npz", allow_pickle=False) as z:
                    coef, intercept = z["coef"], z["intercept"]
                if coef.shape != (len(classes), X_tr.shape[1]) or intercept.shape != (len(classes),):
                    raise ValueError(f"checkpoint {key}-e{start}.npz has unexpected shapes {coef.shape}")
                clf.partial_fit(X_tr[:1], y_tr[:1], classes=classes)  # allocate, then load the weights
                clf.coef_, clf.intercept_ = coef.copy(), intercept.copy()
        rng = np.random.default_rng(trial.number)
        acc = float("nan")
        trial.set_user_attr("epochs_trained", target - start)
        for epoch in range(start + 1, target + 1):
            order = rng.permutation(len(y_tr))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                clf.partial_fit(X_tr[order], y_tr[order], classes=classes)
            acc = float(clf.score(X_va, y_va))
            trial.report(acc, epoch)
            if trial.should_prune():
                trial.set_user_attr("epochs_trained", epoch - start)
                raise optuna.TrialPruned()
        if ckpt_dir is not None:
            np.savez(ckpt_dir / f"{key}-e{target}.npz", coef=clf.coef_, intercept=clf.intercept_)
        return finish(trial, acc)  # below 27 epochs: recorded for the policy, trial ends PRUNED

    return objective


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--storage", default="sqlite:///results/optuna_quickstart.db")
    ap.add_argument("--delta", type=float, default=0.05)
    ap.add_argument("--sigma", type=float, default=0.02, help="seed-to-seed σ of validation accuracy")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--policy", default="iise-rungs", help="the MFSampler policy (see the module docstring)")
    ap.add_argument("--max-trials", type=int, default=700)
    ap.add_argument("--no-resume", action="store_true", help="retrain every trial from scratch")
    ap.add_argument("--out", default="results/optuna_quickstart.json")
    args = ap.parse_args()
    Path("results").mkdir(exist_ok=True)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    data = load_data(args.seed)
    sampler = MFSampler(
        LADDER, search_space=SEARCH_SPACE, policy=args.policy, delta=args.delta, sigma=args.sigma, seed=args.seed
    )
    pruner = MFPruner(LADDER, delta=args.delta, sigma=args.sigma)
    name = f"mf-sched-quickstart-{int(time.time())}"
    study = optuna.create_study(
        study_name=name, storage=args.storage, direction="maximize", sampler=sampler, pruner=pruner
    )
    ckpt = None if args.no_resume else Path("results") / f"{name}-checkpoints"
    if ckpt is not None:
        ckpt.mkdir(parents=True, exist_ok=True)
    objective = make_objective(data, ckpt)
    t0 = time.perf_counter()
    try:
        from tqdm import tqdm

        bar = tqdm(total=None, desc="trials", unit="trial")
    except ImportError:  # pragma: no cover
        bar = None
    n = 0
    while n < args.max_trials and not sampler.recommendation(study).done:
        study.optimize(objective, n_trials=10)
        n += 10
        if bar is not None:
            bar.update(10)
    if bar is not None:
        bar.close()
    wall = time.perf_counter() - t0
    rec = sampler.recommendation(study)
    trials = study.get_trials(deepcopy=False)
    epochs = sum(int(t.user_attrs.get("epochs_trained", 0)) for t in trials)
    full, K = int(rec.full_fidelity_resources), len(sampler.candidates)
    print(f"\nstudy {name!r} in {args.storage}: {len(trials)} trials, {wall:.1f} s")
    print(f"recommended: {rec.params}")
    eps = rec.details.get("epsilon")
    cert = (
        "identified (best with prob. >= 1 - δ)" if rec.certified else f"ε-optimal, ε = {eps:.3f}" if eps else rec.reason
    )
    print(f"certificate: δ = {rec.delta}, {cert}, policy done: {rec.done}")
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
    # trust, but verify: ζ̂ from this study's own learning curves (trials that reached 27 epochs)
    curves = curves_from_study(study, metric_name="val_accuracy", merge_trials=ckpt is not None)
    check = None
    try:
        cal = calibrate(curves, EPOCHS, quantile=0.95, holdout=None)
        check = {"zeta_used": list(LADDER.zeta), "zeta_hat": cal.zeta.tolist(), "n_curves": cal.n_configs}
        zhat = [round(float(z), 3) for z in cal.zeta]
        low = [m for m, (z, zh) in enumerate(zip(LADDER.zeta, zhat)) if z < zh]
        verdict = f"ζ used is below ζ̂ at rungs {low}: widen it there" if low else "ζ used covers ζ̂"
        print(
            f"ζ used {list(LADDER.zeta)}; ζ̂ (0.95-quantile bound) from {int(np.max(cal.n_configs))} "
            f"configurations' curves: {zhat} ({verdict})"
        )
    except ValueError as e:
        print(f"ζ check skipped: {e}")
    out = {
        "recommended": rec.params,
        "certified": rec.certified,
        "epsilon": eps,
        "delta": rec.delta,
        "n_trials": len(trials),
        "epochs": epochs,
        "full_fidelity_epochs": full,
        "best_trial": None if best is None else {"number": best.number, "params": best.params, "value": best.value},
        "zeta_check": check,
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
