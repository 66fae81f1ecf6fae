"""A small study with the default IISEScheduler() on a two-node local Ray cluster (ray.cluster_utils.Cluster,
one CPU per node). Run by tests/integrations/test_ray_faults.py in a subprocess, so that it never meets the test
session's Ray: ``python tests/integrations/_ray_cluster_study.py WORKDIR OUT_JSON``. Writes the answer, the nodes the
trials ran on, the number of epochs trained twice, the certificate and the wall time to OUT_JSON."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def node_trainable(config: dict) -> None:
    """test_ray_race.replay_trainable, recording the node each trial runs on. The first two trials of the grid wait
    for each other when they first start (a barrier of files, at most 120 s), so that two run at once — on the two
    one-CPU nodes — whatever the machine's load (without it, short trials could all run on one node)."""
    import ray
    from test_ray_race import QUALITY, replay_trainable

    Path(config["nodes"]).open("a").write(f"{config['q']} {ray.get_runtime_context().get_node_id()}\n")
    if config["q"] in QUALITY[:2]:
        mark = Path(config["nodes"]).with_name(f"started-{config['q']}")
        if not mark.exists():  # its first start (a resumed trial does not wait)
            mark.touch()
            deadline = time.monotonic() + 120
            while len(list(mark.parent.glob("started-*"))) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
    replay_trainable(config)


def main(workdir: str, out: str) -> None:
    # the nodes' workers import the trainables by module (this folder); set before the nodes start
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    # run as a script, so this folder is already sys.path[0] for `from test_ray_race import ...`
    import ray
    from mf_sched.integrations.ray import IISEScheduler, SchedulerStateCallback, load_certificate
    from ray import tune
    from ray.cluster_utils import Cluster
    from test_ray_race import QUALITY, epochs_trained

    t0 = time.perf_counter()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    cluster.add_node(num_cpus=1)
    try:
        ray.init(address=cluster.address, log_to_driver=False)
        cluster.wait_for_nodes()
        n_nodes = sum(1 for n in ray.nodes() if n["Alive"])
        work = Path(workdir)
        space = {"q": tune.grid_search(QUALITY[:6]), "log": str(work / "epochs.log"), "nodes": str(work / "nodes"),
                 "max_t": 9}  # fmt: skip
        sched = IISEScheduler()
        results = tune.Tuner(
            node_trainable, param_space=space,
            tune_config=tune.TuneConfig(metric="acc", mode="max", scheduler=sched, reuse_actors=True),
            run_config=tune.RunConfig(name="cluster", storage_path=str(work), verbose=0,
                                      stop={"training_iteration": 9}, callbacks=[SchedulerStateCallback(sched)]),
        ).fit()  # fmt: skip
        pairs = epochs_trained(work / "epochs.log")
        trial_nodes = {line.split()[1] for line in (work / "nodes").read_text().splitlines()}
        cert = load_certificate(work / "cluster")
        doc = {
            "nodes": n_nodes,
            "trial_nodes": sorted(trial_nodes),
            "best_q": results.get_best_result().config["q"],
            "scheduler_best_q": sched.best_config()["q"],
            "errors": len(results.errors),
            "epochs": len(pairs),
            "duplicate_epochs": len(pairs) - len(set(pairs)),
            "certificate": None if cert is None else cert.to_dict(),
            "wall_s": time.perf_counter() - t0,
        }
    finally:
        ray.shutdown()
        cluster.shutdown()
    doc["wall_with_shutdown_s"] = time.perf_counter() - t0
    Path(out).write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
