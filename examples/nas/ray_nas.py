"""Neural-architecture search on PyTorch with Ray Tune: IISEScheduler vs ASHA vs training everything.

The model family, data and candidates of ``examples/nas/optuna_nas.py`` (``nas_common``): each Ray trial is
one candidate architecture trained epoch by epoch on local Ray, reporting its validation accuracy after
every epoch and a checkpoint (``torch.save`` of model + optimizer + epoch) at the rungs, 1, 3 and 9 epochs:

* ``IISEScheduler`` pauses every trial at a rung until all have reported there, stops those that provably
  cannot be the best (ζ-aware, confidence 1 − δ) and resumes the others from their checkpoints
  (``tune.get_checkpoint()``), so no epoch is trained twice;
* ``ASHAScheduler`` (Li et al. 2020, MLSys) at its documented defaults, except that its rungs are aligned
  to the same epochs (``grace_period`` = first rung, ``reduction_factor`` = rung ratio, ``max_t`` = last);
* ``FIFOScheduler`` trains every candidate to the last rung (the full-fidelity search).

Every scheduler's answer is its best candidate at the last rung by validation accuracy; it is scored by its
test accuracy on the held-out split (evaluated here from the answer's checkpoint, never shown to Ray). Run
from the repository root (workers import ``examples.nas.nas_common`` from the driver's directory):

    python -m examples.nas.ray_nas                          # 16 candidates, 2 CPUs: a few minutes
    python -m examples.nas.ray_nas --schedulers iise asha --candidates 32 --cpus 4
    python -m examples.nas.ray_nas --restore results/ray-nas/nas-iise-<stamp>   # resume an interrupted run

Restoring: the experiment folder holds Tune's own state; ``Tuner.restore(path, trainable,
resume_unfinished=True)`` resumes the unfinished trials from their checkpoints (``--restore`` does that and
reads the data options and rungs from the restored trials' configurations). Ray does not save a
scheduler's state, so the IISE run adds ``SchedulerStateCallback(scheduler)`` to ``RunConfig(callbacks=...)``:
it stores the scheduler's exact state with every experiment checkpoint and puts it back on restore (the
callback and the scheduler are restored together), so trials already stopped stay stopped and the rungs
keep their values. Writes ``results/ray-nas/ray_nas.json`` and a plot of every trial's learning curve.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ray
from mf_sched.integrations.ray import IISEScheduler, SchedulerStateCallback
from ray import tune
from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, TrialScheduler

from examples.nas import nas_common as nc

METRIC, MODE, TIME_ATTR = "val_acc", "max", "epoch"


# --------------------------------------------------------------------------- the adapter-specific code
def make_scheduler(
    kind: str, epochs: Sequence[int], *, delta: float, sigma: float | None, n: int
) -> tuple[TrialScheduler, list[Any]]:
    """The scheduler ``kind`` (``"iise"``, ``"asha"`` or ``"fifo"``) and the Tune callbacks it needs. IISEScheduler
    races with the shipped ζ⁺ prior (its default); the candidates are a grid fixed before training."""
    if kind == "iise":
        sched = IISEScheduler(resources=list(epochs), time_attr=TIME_ATTR, delta=delta, sigma=sigma, n_trials=n,
                              fixed_arms=True)  # fmt: skip
        return sched, [SchedulerStateCallback(sched)]
    if kind == "asha":
        rf = nc.reduction_factor(epochs)
        return ASHAScheduler(time_attr=TIME_ATTR, max_t=epochs[-1], grace_period=epochs[0], reduction_factor=rf), []
    if kind == "fifo":
        return FIFOScheduler(), []
    raise ValueError(f"scheduler {kind!r} is unknown; accepted: 'iise', 'asha', 'fifo'")


# --------------------------------------------------------------------------- the trainable
@functools.lru_cache(maxsize=2)
def _data(spec: str) -> nc.Splits:
    """The splits for a JSON data spec, loaded once per worker process."""
    s = json.loads(spec)
    device = nc.configure_torch(s.pop("device"), 1)
    return nc.load_data(**s).to(device)


def trainable(config: dict[str, Any]) -> None:
    """One candidate, epoch by epoch up to the last rung; resumes from ``tune.get_checkpoint()``."""
    settings = config["settings"]
    data = _data(settings["data"])
    params = nc.check_params(config["params"])
    key = nc.config_key(params)
    rungs = [int(e) for e in settings["epochs"]]
    with tempfile.TemporaryDirectory() as work:
        store = nc.CheckpointStore(work)
        ckpt = tune.get_checkpoint()
        if ckpt is not None:  # paused at a rung (or restored): continue from the checkpoint, validated on load
            with ckpt.as_directory() as d:
                for e in nc.CheckpointStore(d).epochs(key):
                    shutil.copy(Path(d) / store.path(key, e).name, store.path(key, e))

        def on_epoch(epoch: int, val: float) -> bool:
            metrics = {METRIC: val, TIME_ATTR: epoch}
            if epoch in rungs:
                with tempfile.TemporaryDirectory() as d:
                    shutil.copy(store.path(key, epoch), d)
                    tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(d))
            else:
                tune.report(metrics)
            return False

        nc.train_to(params, rungs[-1], data, store, seed=int(settings["seed"]), save_at=rungs, on_epoch=on_epoch)


# --------------------------------------------------------------------------- one run and its summary
def _answer(results: tune.ResultGrid, top: int) -> tune.Result | None:
    done = [r for r in results if r.metrics and r.metrics.get(TIME_ATTR) == top and r.error is None]
    # ties (equal validation accuracy) go to the lowest candidate index, whatever order Ray lists results in
    return max(done, key=lambda r: (r.metrics[METRIC], -int(r.config["candidate"]))) if done else None


def summarise(name: str, results: tune.ResultGrid, data: nc.Splits, top: int, wall: float) -> dict[str, Any]:
    """Epochs, the answer (best validated candidate at the last rung) and its held-out test accuracy."""
    best = _answer(results, top)
    test = None
    if best is not None and best.checkpoint is not None:
        params = nc.check_params(best.config["params"])
        with best.checkpoint.as_directory() as d:
            test = nc.held_out_accuracy(
                params, top, data, nc.CheckpointStore(d), seed=int(best.config["settings"]["seed"])
            )
    curves = []  # each trial's curve, from its last checkpoint (a trial ends at a rung, which is checkpointed)
    for r in results:
        if r.checkpoint is None or not r.metrics:
            continue
        key = nc.config_key(r.config["params"])
        with r.checkpoint.as_directory() as d:
            store = nc.CheckpointStore(d)
            curve = store.curve(key, store.epochs(key)[-1])
        curves.append(
            {
                "candidate": r.config["candidate"],
                "epoch": list(range(1, len(curve) + 1)),
                METRIC: curve,
                "training_iteration": int(r.metrics["training_iteration"]),
            }
        )
    return {
        "scheduler": name,
        "epochs": int(sum(int(r.metrics.get(TIME_ATTR, 0)) for r in results if r.metrics)),
        "trials": len(results),
        "errors": len(results.errors),
        "answer": None if best is None else int(best.config["candidate"]),
        "arch": None if best is None else nc.arch_string(best.config["params"]),
        "val_acc": None if best is None else float(best.metrics[METRIC]),
        "test_acc": test,
        "wall_s": round(wall, 1),
        "path": results.experiment_path,
        "curves": curves,
    }


def run(
    kind: str,
    cands: list[dict[str, Any]],
    settings: dict[str, Any],
    storage: Path,
    stamp: str,
    args: argparse.Namespace,
) -> tuple[tune.ResultGrid, TrialScheduler, float]:
    sched, callbacks = make_scheduler(kind, args.epochs, delta=args.delta, sigma=args.sigma, n=len(cands))
    tuner = tune.Tuner(
        with_resources(args),
        param_space={
            "candidate": tune.grid_search(list(range(len(cands)))),
            "params": tune.sample_from(lambda config: cands[config["candidate"]]),
            "settings": settings,
        },
        tune_config=tune.TuneConfig(metric=METRIC, mode=MODE, scheduler=sched, reuse_actors=True),
        run_config=tune.RunConfig(
            name=f"nas-{kind}-{stamp}", storage_path=str(storage), verbose=0, callbacks=callbacks
        ),
    )
    t0 = time.perf_counter()
    results = tuner.fit()
    return results, sched, time.perf_counter() - t0


def with_resources(args: argparse.Namespace) -> Any:
    """The trainable, asking Ray for ``--gpus-per-trial`` GPUs per trial when ``--device`` is CUDA."""
    if args.device.startswith("cuda"):
        return tune.with_resources(trainable, {"cpu": 1, "gpu": args.gpus_per_trial})
    return trainable


def plot(summaries: list[dict[str, Any]], path: Path) -> bool:
    """Every trial's learning curve per scheduler, its answer in colour; False without matplotlib."""
    plt = nc.pyplot()
    if plt is None:
        return False
    fig, axes = plt.subplots(1, len(summaries), figsize=(4.2 * len(summaries), 3.6), sharey=True, squeeze=False)
    for ax, s in zip(axes[0], summaries):
        for c in s["curves"]:
            is_answer = c["candidate"] == s["answer"]
            ax.plot(c["epoch"], c[METRIC], color="C3" if is_answer else "0.6", lw=1.6 if is_answer else 0.8)
        test = "-" if s["test_acc"] is None else f"{s['test_acc']:.3f}"
        ax.set_title(f"{s['scheduler']}: {s['epochs']} epochs, test {test}", fontsize=9)
        ax.set_xlabel("epoch")
    axes[0][0].set_ylabel("validation accuracy")
    nc.save_figure(fig, path)
    return True


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--schedulers", nargs="+", default=["iise", "asha", "fifo"], choices=["iise", "asha", "fifo"])
    ap.add_argument("--candidates", type=int, default=16, help="architectures searched (a power of 2)")
    ap.add_argument("--epochs", type=int, nargs="+", default=list(nc.EPOCHS))
    ap.add_argument("--sigma", type=float, default=nc.SIGMA, help="seed-to-seed σ of validation accuracy")
    ap.add_argument("--delta", type=float, default=0.05)
    ap.add_argument("--cpus", type=int, default=2, help="CPUs for local Ray (one trial per CPU)")
    ap.add_argument("--device", default="cpu", help="cpu | cuda (then each trial asks Ray for --gpus-per-trial)")
    ap.add_argument("--gpus-per-trial", type=float, default=0.5)
    nc.add_data_arguments(ap)
    ap.add_argument("--results", default="results/ray-nas")
    ap.add_argument("--restore", default=None, help="an experiment folder to resume with Tuner.restore")
    args = ap.parse_args(argv)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    results_dir = Path(args.results).resolve()
    results_dir.mkdir(parents=True, exist_ok=True)
    data_spec = nc.data_options(args)
    data = nc.load_data(**data_spec)  # the driver's copy, for the held-out test accuracy of each answer
    settings = {
        "data": json.dumps({**data_spec, "device": args.device}, sort_keys=True),
        "epochs": list(args.epochs),
        "seed": args.seed,
    }
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    top = int(args.epochs[-1])
    summaries = []
    try:
        if args.restore:
            t0 = time.perf_counter()
            restored = tune.Tuner.restore(
                str(Path(args.restore).resolve()), trainable=with_resources(args), resume_unfinished=True
            )
            results = restored.fit()
            wall = time.perf_counter() - t0
            first = next(iter(results)).config["settings"]  # the restored run's own data and rungs
            spec = json.loads(first["data"])
            spec.pop("device")
            data, top = nc.load_data(**spec), int(first["epochs"][-1])
            summaries.append(summarise("restored", results, data, top, wall))
        else:
            cands = nc.candidates(args.candidates, seed=args.seed)
            stamp = time.strftime("%Y%m%d-%H%M%S")
            print(f"{data.describe()}; {len(cands)} candidates; rungs {list(args.epochs)} epochs; {args.cpus} CPUs")
            for kind in args.schedulers:
                results, sched, wall = run(kind, cands, settings, results_dir, stamp, args)
                s = summarise(kind, results, data, top, wall)
                if isinstance(sched, IISEScheduler):
                    cert = sched.certificate()
                    s["certificate"] = {"delta": cert.delta, "identified": cert.identified, "epsilon": cert.epsilon}
                    best = sched.best_config()
                    s["scheduler_best"] = None if best is None else int(best["candidate"])
                    s["scheduler_best_value"] = cert.value
                summaries.append(s)
                print(f"{kind}: {s['epochs']} epochs, answer {s['answer']} (test {s['test_acc']}), {wall:.0f} s")
    finally:
        if started:
            ray.shutdown()
    full = (args.candidates if not args.restore else len(summaries[0]["curves"])) * top  # the restored run's K
    print(f"\n{'scheduler':<10} {'epochs':>7} {'saved':>6} {'val acc':>8} {'test acc':>9} {'wall s':>7}  answer")
    for s in summaries:
        val = "-" if s["val_acc"] is None else f"{s['val_acc']:.4f}"
        tst = "-" if s["test_acc"] is None else f"{s['test_acc']:.4f}"
        saved = f"{100 * (1 - s['epochs'] / full):.0f}%"
        print(f"{s['scheduler']:<10} {s['epochs']:>7} {saved:>6} {val:>8} {tst:>9} {s['wall_s']:>7.0f}  {s['arch']}")
        if "certificate" in s:
            c = s["certificate"]
            print(f"{'':<10} IISE certificate: δ = {c['delta']}, identified = {c['identified']}, ε = {c['epsilon']}")
    out = {"settings": vars(args), "data": data.describe(), "full_fidelity_epochs": full, "schedulers": summaries}
    path = results_dir / "ray_nas.json"
    path.write_text(json.dumps(out, indent=2, default=str))
    png = path.with_suffix(".png")
    wrote = plot(summaries, png)
    print(f"wrote {path}" + (f" and {png}" if wrote else ""))
    return out


if __name__ == "__main__":
    # run the package module's main: Ray's workers import the trainable (and its data cache) from
    # `examples.nas.ray_nas` by name, which `python -m` would otherwise leave as `__main__`
    from examples.nas import ray_nas

    ray_nas.main()
