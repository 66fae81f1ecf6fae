"""Syne Tune's ASHA and BOHB on replayed learning curves, with Syne Tune's own simulator backend.

Runs in a separate environment (Syne Tune 0.16 needs ``pandas<3``; the project's environment has pandas 3; its
``blackbox_repository`` imports ``huggingface_hub``, which it does not declare)::

    python -m venv .venv-syne && .venv-syne/bin/pip install "syne-tune==0.16.0" "pandas<3" huggingface_hub
    .venv-syne/bin/python -m benchmarks.syne_tune_runner curves.npz results.json --workers 2 --epoch-seconds 1

Input: an ``.npz`` file (``curves``: ``K × T`` floats, NaN allowed; or a batch ``curves_0``, ``curves_1``, …, with
optionally ``maximize``, one bool per set, and ``seed``, one int per set, overriding ``--mode`` and ``--seeds``;
loaded with ``allow_pickle=False``) or a ``.json`` file (``{"curves": [[...], ...]}``). Each row is one
configuration; ``curves[k, e - 1]`` is its metric
after epoch ``e``. Every configuration is evaluated once, in row order (``points_to_evaluate``; no more trials
are started), on ``--workers`` simulated workers, each epoch taking ``--epoch-seconds`` of simulated time
(Syne Tune's ``UserBlackboxBackend`` over a ``BlackboxTabular`` of the curves, with ``SimulatorCallback``).

Output JSON, per curve set, scheduler and seed: epochs trained per row, the rows that reached epoch ``T``, ``best``
(the best of those at ``T``), total epochs, simulated makespan and the wall time of the run; and the anytime
trajectory: ``events`` (``[row, epoch]`` per result, in the order of simulated time: one epoch trained each) with
``answers`` (Syne Tune's own answer after each result: ``Tuner.best_config``'s rule, the trial with the best
metric reported at any epoch so far).

Syne Tune 0.16 has no synchronous Hyperband or DEHB any more (removed with its legacy baselines), and its ASHA only
stops trials (no pause/promotion). ``ASHA`` is Syne Tune's ``AsynchronousSuccessiveHalving`` with a random searcher
(one bracket); ``BOHB`` is the same scheduler with the ``kde`` searcher (Falkner et al., ICML 2018: a TPE-like
density ratio fitted on the trials' latest values). On a fixed set of configurations, every one of them given as
``points_to_evaluate`` and none suggested beyond them, the searcher never chooses a configuration: BOHB's KDE is
not used, and BOHB *is* ASHA's stopping rule on the same trials (the two differ at most through their random
seeds). That is what BOHB can be on a benchmark whose candidates are fixed in advance; its model would only matter
if it were free to sample new configurations.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def load_curve_sets(path: Path) -> list[np.ndarray]:
    """One K × T array, or many: an ``.npz`` whose arrays are named ``curves_0``, ``curves_1``, … (a batch, so that
    a benchmark pays Syne Tune's start-up once)."""
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as f:
            names = sorted((n for n in f.files if n.startswith("curves_")), key=lambda n: int(n.split("_")[1]))
        if names:
            out = []
            with np.load(path, allow_pickle=False) as f:
                for n in names:
                    c = np.asarray(f[n], dtype=float)
                    if c.ndim != 2 or np.isinf(c).any():
                        raise ValueError(f"{path}: {n} must be a finite (or NaN) K × T array")
                    out.append(c)
            return out
    return [load_curves(path)]


def load_set_options(path: Path, n_sets: int) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Per-set ``maximize`` (bools) and ``seed`` (ints) of an ``.npz`` batch, when it has them; validated."""
    if path.suffix != ".npz":
        return None, None
    with np.load(path, allow_pickle=False) as f:
        maximize = np.asarray(f["maximize"], dtype=bool) if "maximize" in f.files else None
        seed = np.asarray(f["seed"], dtype=np.int64) if "seed" in f.files else None
    for name, arr in (("maximize", maximize), ("seed", seed)):
        if arr is not None and arr.shape != (n_sets,):
            raise ValueError(f"{path}: {name} must hold one value per curve set ({n_sets}); got shape {arr.shape}")
    return maximize, seed


def load_curves(path: Path) -> np.ndarray:
    """The K × T curves from an ``.npz`` (array ``curves``) or ``.json`` (key ``curves``) file, validated."""
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as f:
            if "curves" not in f:
                raise ValueError(f"{path} has no array named 'curves'")
            curves = np.asarray(f["curves"], dtype=float)
    elif path.suffix == ".json":
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or "curves" not in data:
            raise ValueError(f"{path} must hold a JSON object with a 'curves' list of lists")
        rows = data["curves"]
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            raise ValueError(f"{path}: 'curves' must be a list of lists of numbers")
        curves = np.array([[math.nan if v is None else float(v) for v in r] for r in rows], dtype=float)
    else:
        raise ValueError(f"{path}: accepted formats are .npz and .json")
    if curves.ndim != 2 or curves.shape[0] < 1 or curves.shape[1] < 1:
        raise ValueError(f"curves must be a K × T array with K, T ≥ 1; got shape {curves.shape}")
    if np.isinf(curves).any():
        raise ValueError("curves must be finite or NaN")
    return curves


def run_one(
    curves: np.ndarray,
    scheduler_name: str,
    *,
    workers: int,
    epoch_seconds: float,
    mode: str,
    grace_period: int,
    reduction_factor: float,
    seed: int,
) -> dict[str, Any]:
    """One simulated Syne Tune experiment; returns its outcome."""
    import pandas as pd
    from syne_tune import StoppingCriterion, Tuner
    from syne_tune import config_space as sp
    from syne_tune.backend.simulator_backend.simulator_callback import SimulatorCallback
    from syne_tune.blackbox_repository import UserBlackboxBackend
    from syne_tune.blackbox_repository.blackbox_tabular import BlackboxTabular
    from syne_tune.experiments import load_experiment
    from syne_tune.optimizer.baselines import ASHA, BOHB

    K, T = curves.shape
    filled = np.where(np.isnan(curves), -np.inf if mode == "max" else np.inf, curves)  # diverged: worst value
    elapsed = epoch_seconds * np.arange(1, T + 1, dtype=float)
    evaluations = np.stack([filled, np.broadcast_to(elapsed, (K, T))], axis=-1)[:, None, :, :]
    config_space = {"row": sp.choice(list(range(K)))}
    blackbox = BlackboxTabular(
        hyperparameters=pd.DataFrame({"row": np.arange(K)}),
        configuration_space=config_space,
        fidelity_space={"epoch": sp.randint(1, T)},
        objectives_evaluations=evaluations,
        fidelity_values=np.arange(1, T + 1),
        objectives_names=["metric", "elapsed_time"],
    )
    backend = UserBlackboxBackend(blackbox=blackbox, elapsed_time_attr="elapsed_time", seed=0)  # its only seed
    kw = dict(
        config_space=config_space, metric="metric", time_attr="epoch", max_t=T, do_minimize=mode == "min",
        random_seed=seed, grace_period=grace_period, reduction_factor=reduction_factor,
        points_to_evaluate=[{"row": k} for k in range(K)],
    )  # fmt: skip
    base = {"ASHA": ASHA, "BOHB": BOHB}[scheduler_name]

    class OncePerRow(base):  # type: ignore[misc, valid-type]
        """Suggests each row once (points_to_evaluate), then nothing: no duplicate trials are started."""

        suggested = 0

        def suggest(self) -> Any:
            if self.suggested >= K:
                return None
            self.suggested += 1
            return super().suggest()

    scheduler = OncePerRow(**kw)
    t0 = time.perf_counter()
    tuner = Tuner(
        trial_backend=backend,
        scheduler=scheduler,
        stop_criterion=StoppingCriterion(max_num_trials_finished=K),
        n_workers=workers,
        sleep_time=0,
        callbacks=[SimulatorCallback()],
        results_update_interval=1e9,
        print_update_interval=1e9,
        save_tuner=False,
        tuner_name=f"replay-{scheduler_name.lower()}-{seed}",
    )
    tuner.run()
    wall = time.perf_counter() - t0
    df = load_experiment(tuner.name).results
    if df is None or df.empty:
        raise RuntimeError("Syne Tune reported no result")
    df = df.sort_values("st_tuner_time", kind="stable")  # the order in which the results came: epochs spent
    rows = df["config_row"].astype(int).to_numpy()
    trial_ids = df["trial_id"].astype(int).to_numpy()
    epochs_col = df["epoch"].astype(int).to_numpy()
    events, answers = answer_trajectory(rows, trial_ids, epochs_col, filled, mode)
    epochs = np.zeros(K, dtype=int)
    for row in range(K):
        epochs[row] = int(np.sum(rows == row))
    top = sorted({int(r) for r, e in zip(rows, epochs_col) if e == T})
    values = {r: float(curves[r, T - 1]) for r in top}
    finite = {r: v for r, v in values.items() if math.isfinite(v)}
    best = (max if mode == "max" else min)(sorted(finite), key=finite.get) if finite else None
    return {
        "scheduler": scheduler_name, "seed": seed, "epochs": epochs.tolist(), "total_epochs": int(epochs.sum()),
        "reached_top": top, "best": best, "trials_started": int(len(set(trial_ids.tolist()))),
        "makespan": float(df["st_tuner_time"].max()) if "st_tuner_time" in df else None, "wall_s": wall,
        "events": events, "answers": answers,
    }  # fmt: skip


def answer_trajectory(
    rows: np.ndarray, trial_ids: np.ndarray, epochs: np.ndarray, filled: np.ndarray, mode: str
) -> tuple[list[list[int]], list[int]]:
    """The results in the order they came (``[row, epoch]``, one epoch trained each) and Syne Tune's answer after
    each: the row of the trial with the best value reported so far at any epoch (``Tuner.best_config`` /
    ``ExperimentResult.best_config``: the best of every trial's best metric; a tie goes to the earlier trial)."""
    better = np.greater if mode == "max" else np.less
    best_value, best_trial, best_row = None, -1, -1
    events, answers = [], []
    for row, trial, epoch in zip(rows.tolist(), trial_ids.tolist(), epochs.tolist()):
        v = filled[row, epoch - 1]
        if best_value is None or better(v, best_value) or (v == best_value and trial < best_trial):
            best_value, best_trial, best_row = v, trial, row
        events.append([int(row), int(epoch)])
        answers.append(int(best_row))
    return events, answers


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("curves", type=Path, help=".npz (array 'curves') or .json ({'curves': [[...]]})")
    ap.add_argument("out", type=Path, help="results JSON")
    ap.add_argument("--schedulers", default="ASHA,BOHB", help="comma-separated: ASHA, BOHB")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--epoch-seconds", type=float, default=1.0)
    ap.add_argument("--mode", choices=("max", "min"), default="max")
    ap.add_argument("--grace-period", type=int, default=1)
    ap.add_argument("--reduction-factor", type=float, default=3.0)
    ap.add_argument("--seeds", type=int, default=1, help="seeds 0..n-1 per scheduler")
    args = ap.parse_args()
    if args.workers < 1 or args.epoch_seconds <= 0 or args.seeds < 1:
        raise SystemExit("--workers ≥ 1, --epoch-seconds > 0 and --seeds ≥ 1 are required")
    sets = load_curve_sets(args.curves)
    maximize, set_seeds = load_set_options(args.curves, len(sets))
    names = [s.strip() for s in args.schedulers.split(",") if s.strip()]
    for n in names:
        if n not in ("ASHA", "BOHB"):
            raise SystemExit(f"unknown scheduler {n!r}; accepted: ASHA, BOHB")
    logging.getLogger("syne_tune").setLevel(logging.WARNING)
    results = []
    with tempfile.TemporaryDirectory() as folder:
        os.environ["SYNETUNE_FOLDER"] = folder  # Syne Tune writes each experiment's files here
        for i, curves in enumerate(sets):
            mode = ("max" if maximize[i] else "min") if maximize is not None else args.mode
            seeds = [int(set_seeds[i])] if set_seeds is not None else range(args.seeds)
            for name in names:
                for seed in seeds:
                    r = run_one(
                        curves, name, workers=args.workers, epoch_seconds=args.epoch_seconds, mode=mode,
                        grace_period=args.grace_period, reduction_factor=args.reduction_factor, seed=seed,
                    )  # fmt: skip
                    r["set"] = i
                    r["mode"] = mode
                    results.append(r)
                    print(f"set {i} {name} seed {seed}: epochs {r['total_epochs']}, reached T {r['reached_top']}, "
                          f"best {r['best']}, {r['wall_s']:.2f} s", file=sys.stderr)  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"K": int(sets[0].shape[0]), "T": int(sets[0].shape[1]), "sets": len(sets), "workers": args.workers,
            "epoch_seconds": args.epoch_seconds, "mode": args.mode}  # fmt: skip
    args.out.write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
