"""Multi-fidelity tuning with Ray Tune, zero configuration: ``IISEScheduler()`` on the Optuna quickstart's model.

A linear classifier (scikit-learn's SGDClassifier) trained epoch by epoch on scikit-learn's digits; each
trial is one configuration. The scheduler races: the rungs come from the stopping criterion (27 epochs:
rungs 1, 3, 9, 27), ζ⁺ from the prior shipped for accuracies; a trial is stopped as soon as it provably
cannot beat the best finished one (confidence 1 − δ), and a trial that reports a checkpoint pauses at a rung
while a more promising one waits, resuming later from its checkpoint (no epoch is trained twice).
Local Ray with 2 CPUs.

    python -m examples.ray_quickstart            # from the repository root; needs: pip install "mf-sched[ray,gp]"

Prints the best configuration, the scheduler's certificate and the epochs trained against training every
configuration for 27 epochs.
"""

from __future__ import annotations

import itertools
import json
import os
import tempfile
import warnings
from pathlib import Path

import numpy as np
import ray
from mf_sched.integrations.ray import IISEScheduler, SchedulerStateCallback
from ray import tune

from examples.optuna_quickstart import MAX_EPOCHS, load_data

# a smaller grid than the Optuna quickstart: each Ray trial start costs about a second on 2 CPUs
SEARCH_SPACE = {
    "alpha": [1e-5, 1e-3, 1e-1, 1.0],
    "loss": ["log_loss", "modified_huber", "perceptron"],
    "eta0": [0.001, 0.1, 1.0],
}


def trainable(config: dict) -> None:
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import SGDClassifier

    X_tr, X_va, y_tr, y_va = load_data(0)
    classes = np.unique(y_tr)
    clf = SGDClassifier(
        loss=config["loss"], alpha=config["alpha"], learning_rate="constant", eta0=config["eta0"], random_state=0
    )
    start = 0
    ckpt = tune.get_checkpoint()
    if ckpt is not None:  # resume where the pause left off: no epoch is trained twice
        with ckpt.as_directory() as d:
            state = json.loads((Path(d) / "state.json").read_text())
        start = state["epoch"]
        clf.partial_fit(X_tr[:10], y_tr[:10], classes=classes)
        clf.coef_ = np.array(state["coef"])
        clf.intercept_ = np.array(state["intercept"])
    rng = np.random.default_rng(start)
    for epoch in range(start + 1, MAX_EPOCHS + 1):
        order = rng.permutation(len(y_tr))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf.partial_fit(X_tr[order], y_tr[order], classes=classes)
        state = {"epoch": epoch, "coef": clf.coef_.tolist(), "intercept": clf.intercept_.tolist()}
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "state.json").write_text(json.dumps(state))
            tune.report(
                {"acc": float(clf.score(X_va, y_va)), "epoch": epoch}, checkpoint=tune.Checkpoint.from_directory(d)
            )


def main() -> None:
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    configs = [dict(zip(SEARCH_SPACE, v)) for v in itertools.product(*SEARCH_SPACE.values())]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        sched = IISEScheduler(time_attr="epoch")  # zero configuration: racing with the shipped ζ⁺ prior
        tuner = tune.Tuner(
            trainable,
            param_space={k: tune.grid_search(v) for k, v in SEARCH_SPACE.items()},
            tune_config=tune.TuneConfig(metric="acc", mode="max", scheduler=sched, reuse_actors=True),
            run_config=tune.RunConfig(
                name="mf-sched-ray-quickstart",
                storage_path=str(Path("results").resolve()),
                verbose=0,
                callbacks=[SchedulerStateCallback(sched)],
                stop={"epoch": MAX_EPOCHS},
            ),
        )
        results = tuner.fit()
    finally:
        ray.shutdown()
    cert = sched.certificate()
    epochs = sum(int(r.metrics.get("epoch", 0)) for r in results)
    full = len(configs) * MAX_EPOCHS
    print(f"best configuration: {sched.best_config()}  (acc {cert.value:.4f} at {MAX_EPOCHS} epochs)")
    print(f"certificate: δ = {cert.delta}, identified = {cert.identified}, ε = {cert.epsilon}")
    print(
        f"epochs trained: {epochs} vs {full} for training all {len(configs)} configurations "
        f"({100 * (1 - epochs / full):.0f}% saved)"
    )
    print(sched.debug_string())


if __name__ == "__main__":
    main()
