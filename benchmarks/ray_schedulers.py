"""IISEScheduler / AsyncIISEScheduler against Ray Tune's FIFO, ASHA and HyperBand on LCBench replays.

Each LCBench task (YAHPO surrogate, ``../shared/data``) gives ``K`` configurations with learning curves at
epochs 1, 3, 9, 27, 52 (:class:`mf_sched.curves.replay.ReplayBenchmark`, N(0, 0.01²) seed noise, ζ calibrated on
other configurations). A Ray trial replays one configuration epoch by epoch (the value of the last rung
reached, 10 ms of "training" per epoch, a checkpoint at every rung so that pausing schedulers resume
without re-running epochs). All schedulers see the same K trials on local Ray with 2 CPUs; measured per run:
simple regret of the best trial that reached 52 epochs (true final accuracy), epochs trained, wall time and
utilisation of the 2 workers (training time / (2 × wall)).

    python -m benchmarks.ray_schedulers --quick      # 2 tasks
    python -m benchmarks.ray_schedulers              # 6 tasks

Prints a table, writes ``benchmarks/results/ray_schedulers.json`` and ``.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

EPOCHS = [1, 3, 9, 27, 52]
NOISE = 0.01
STEP_S = 0.01


def trainable(config: dict) -> None:
    from ray import tune

    values = config["values"]
    start = 0
    ckpt = tune.get_checkpoint()
    if ckpt is not None:
        with ckpt.as_directory() as d:
            start = json.loads((Path(d) / "s.json").read_text())["epoch"]
    for epoch in range(start + 1, EPOCHS[-1] + 1):
        time.sleep(STEP_S)
        m = max(i for i, e in enumerate(EPOCHS) if e <= epoch)
        metrics = {"acc": values[m], "epoch": epoch, "busy": STEP_S}
        if epoch in EPOCHS:
            with tempfile.TemporaryDirectory() as d:
                (Path(d) / "s.json").write_text(json.dumps({"epoch": epoch}))
                tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(d))
        else:
            tune.report(metrics)


def schedulers(ladder, K: int) -> dict:
    from mf_sched.integrations.ray import AsyncIISEScheduler, IISEScheduler
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, HyperBandScheduler

    return {
        "FIFO": lambda: FIFOScheduler(),
        "ASHA": lambda: ASHAScheduler(time_attr="epoch", max_t=EPOCHS[-1], grace_period=1, reduction_factor=3),
        "HyperBand": lambda: HyperBandScheduler(time_attr="epoch", max_t=EPOCHS[-1], reduction_factor=3),
        "IISEScheduler": lambda: IISEScheduler(ladder, time_attr="epoch", sigma=NOISE, n_trials=K),
        "AsyncIISEScheduler": lambda: AsyncIISEScheduler(ladder, time_attr="epoch", sigma=NOISE, n_trials=K),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--tasks", type=int, default=None)
    ap.add_argument("--arms", type=int, default=24)
    ap.add_argument("--out", default="benchmarks/results/ray_schedulers.json")
    args = ap.parse_args()
    import ray
    from ray import tune

    from mf_sched.curves.datasets import LCBenchSurrogate
    from mf_sched.curves.replay import ReplayBenchmark

    n_tasks = args.tasks or (2 if args.quick else 6)
    try:
        sur = LCBenchSurrogate()
    except (FileNotFoundError, ImportError) as e:
        print(f"cannot load the LCBench surrogate: {e}", file=sys.stderr)
        return 1
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    here = str(Path(__file__).resolve().parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    rows = []
    t_all = time.perf_counter()
    try:
        for ti, task in enumerate(list(sur.tasks)[:n_tasks]):
            curves = sur.curves(task, n_configs=400, epochs=EPOCHS, seed=ti)
            bench = ReplayBenchmark.from_curves(
                curves, EPOCHS, n_arms=args.arms, calibration="holdout", extra_noise=NOISE, seed=ti
            )
            rng = np.random.default_rng(ti)
            runs = [bench.start_run(a, rng) for a in range(bench.K)]
            values = [[runs[a].advance(m).score for m in range(len(EPOCHS))] for a in range(bench.K)]
            true = bench.true_means
            for label, make in schedulers(bench.ladder, bench.K).items():
                with tempfile.TemporaryDirectory() as storage:
                    t0 = time.perf_counter()
                    tuner = tune.Tuner(
                        trainable,
                        param_space={
                            "arm": tune.grid_search(list(range(bench.K))),
                            "values": tune.sample_from(lambda s, v=values: v[s.config.arm]),
                        },  # fmt: skip
                        tune_config=tune.TuneConfig(metric="acc", mode="max", scheduler=make(), reuse_actors=True),
                        run_config=tune.RunConfig(name=label, storage_path=storage, verbose=0),
                    )
                    res = tuner.fit()
                    wall = time.perf_counter() - t0
                full = [r for r in res if r.metrics.get("epoch") == EPOCHS[-1]]
                best = max(full, key=lambda r: r.metrics["acc"]) if full else None
                epochs = sum(int(r.metrics.get("epoch", 0)) for r in res)
                regret = float(true.max() - true[best.config["arm"]]) if best else float("nan")
                util = epochs * STEP_S / (2 * wall)
                rows.append({"task": task, "scheduler": label, "regret": regret, "epochs": epochs, "wall_s": wall,
                             "utilisation": util, "n_full": len(full)})  # fmt: skip
                print(f"{task:>8s} {label:20s} regret {regret:.4f} epochs {epochs:5d} wall {wall:5.1f} s "
                      f"util {util:.2f} full {len(full)}", flush=True)  # fmt: skip
    finally:
        ray.shutdown()
    labels = list(dict.fromkeys(r["scheduler"] for r in rows))
    fifo = {r["task"]: r for r in rows if r["scheduler"] == "FIFO"}
    print(f"\nLCBench replays, {n_tasks} tasks × {args.arms} configurations, local Ray with 2 CPUs")
    print(f"{'scheduler':20s} {'regret mean':>11s} {'epochs / FIFO':>13s} {'wall / FIFO':>11s} {'utilisation':>11s}")
    summary = {}
    for lab in labels:
        rs = [r for r in rows if r["scheduler"] == lab]
        summary[lab] = {
            "regret_mean": float(np.nanmean([r["regret"] for r in rs])),
            "epochs_ratio": float(np.mean([r["epochs"] / fifo[r["task"]]["epochs"] for r in rs])),
            "wall_ratio": float(np.mean([r["wall_s"] / fifo[r["task"]]["wall_s"] for r in rs])),
            "utilisation": float(np.mean([r["utilisation"] for r in rs])),
        }
        s = summary[lab]
        print(f"{lab:20s} {s['regret_mean']:11.4f} {s['epochs_ratio']:13.2f} {s['wall_ratio']:11.2f} "
              f"{s['utilisation']:11.2f}")  # fmt: skip
    print(f"wall time {time.perf_counter() - t_all:.0f} s")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"summary": summary, "rows": rows, "args": vars(args)}, indent=1))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        for i, lab in enumerate(labels):
            ax.scatter(summary[lab]["epochs_ratio"], summary[lab]["regret_mean"], label=lab, color=f"C{i}", s=60)
        ax.set_xlabel("epochs / FIFO's")
        ax.set_ylabel("mean simple regret (accuracy)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out.with_suffix(".png"), dpi=120)
        print(f"wrote {out} and {out.with_suffix('.png')}")
    except ImportError:  # pragma: no cover
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
