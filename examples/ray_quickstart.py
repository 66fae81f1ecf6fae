"""Multi-fidelity tuning with Ray Tune: IISEScheduler on the same model as the Optuna quickstart.

A linear classifier (scikit-learn's SGDClassifier) trained epoch by epoch on scikit-learn's digits; each
trial is one configuration; at epochs 1, 3, 9 the trials pause, the scheduler stops those that provably
cannot be the best (ζ-aware, confidence 1 − δ) and the rest resume from their checkpoints up to 27 epochs.
Local Ray with 2 CPUs.

    python examples/ray_quickstart.py            # needs: pip install "mf-sched[ray,gp]"

Prints the best configuration, the scheduler's certificate and the epochs trained against training every
configuration for 27 epochs.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import ray
from ray import tune

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mf_sched.integrations.ray import IISEScheduler, SchedulerStateCallback  # noqa: E402
from optuna_quickstart import EPOCHS, LADDER, load_data  # noqa: E402

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
    for epoch in range(start + 1, EPOCHS[-1] + 1):
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
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(Path(__file__).resolve().parent), os.environ.get("PYTHONPATH", "")) if p
    )
    configs = [dict(zip(SEARCH_SPACE, v)) for v in itertools.product(*SEARCH_SPACE.values())]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        sched = IISEScheduler(LADDER, time_attr="epoch", sigma=0.02, n_trials=len(configs))
        tuner = tune.Tuner(
            trainable,
            param_space={k: tune.grid_search(v) for k, v in SEARCH_SPACE.items()},
            tune_config=tune.TuneConfig(metric="acc", mode="max", scheduler=sched, reuse_actors=True),
            run_config=tune.RunConfig(
                name="mf-sched-ray-quickstart",
                storage_path=str(Path("results").resolve()),
                verbose=0,
                callbacks=[SchedulerStateCallback(sched)],
            ),
        )
        results = tuner.fit()
    finally:
        ray.shutdown()
    cert = sched.certificate()
    epochs = sum(int(r.metrics.get("epoch", 0)) for r in results)
    full = len(configs) * EPOCHS[-1]
    print(f"best configuration: {sched.best_config()}  (acc {cert.value:.4f} at {EPOCHS[-1]} epochs)")
    print(f"certificate: δ = {cert.delta}, identified = {cert.identified}, ε = {cert.epsilon}")
    print(
        f"epochs trained: {epochs} vs {full} for training all {len(configs)} configurations "
        f"({100 * (1 - epochs / full):.0f}% saved)"
    )
    print(sched.debug_string())


if __name__ == "__main__":
    main()
