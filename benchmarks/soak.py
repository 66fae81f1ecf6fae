"""Soak tests of the adapters under faults (issue 24): load held, faults injected, values lost, answers kept.

``python -m benchmarks.soak optuna``: ``--workers`` (8) worker processes run the zero-argument ``MFSampler()`` +
``MFPruner()`` on one study in a real PostgreSQL database (``--url``, or a server started here with ``pgserver``,
the ``dev`` extra) opened with :func:`mf_sched.integrations.optuna.heartbeat_storage`, over ``--configs`` (120)
configurations of 9 epochs (10-30 ms each). While the race runs, a supervisor SIGKILLs workers at random: mid-trial
(a worker whose log shows it inside its objective) and mid-decision (the worker is told, by SIGUSR1, to SIGKILL
itself inside MFSampler's next decision), and starts a new worker in the place of each dead one, so that the load
stays at ``--workers`` processes. The same study is run undisturbed first. Reported and checked: the answer is the
undisturbed one (and the best configuration), every value a worker reported (logged after ``trial.report``
returned) is in the storage, no trial is left RUNNING, every trial killed mid-trial was failed by the heartbeat and
retried, every trial killed mid-decision was failed (with no parameters).

``python -m benchmarks.soak ray``: Ray Tune with the zero-argument ``IISEScheduler()`` over ``--configs`` (24)
configurations of 9 epochs, each (configuration, epoch) crashing once with probability ``--crash-rate`` (0.08; a
``RuntimeError`` in the trainable), retried by Ray from the last checkpoint (``FailureConfig(max_failures=10)``).
Against an undisturbed run: the answer, values lost (every rung result the driver received must be in the
scheduler's engine, which the certificate rests on) and the certificate; the rows Ray's own result files lack after
a trial failure are counted apart.

Both print a table and write ``benchmarks/results/soak_<adapter>.json``; ``tests/integrations/test_soak.py`` runs a
bounded version of each (``make test-slow``). The figures are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import collections
import math
import multiprocessing as mp
import os
import random
import signal
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from benchmarks._common import RESULTS, meta, print_table, write_json

EPOCHS = 9
GRACE_S = 3  # the heartbeat's grace period (heartbeat every second)


def quality(x: int, configs: int) -> float:
    """Configuration x's final accuracy: 0.30 ... 0.90, all distinct, the best one in the middle of the order in
    which the candidates are handed out."""
    rank = (x * 37 + 11) % configs  # a permutation of 0 .. configs-1 (37 is prime to the sizes used)
    return 0.3 + 0.6 * rank / (configs - 1)


def curve(q: float, epoch: int) -> float:
    return q * (1.0 - 0.3 * math.exp(-(epoch - 1) / 3.0))


# ----------------------------------------------------------------------------------------------- Optuna
def _storage(url: str) -> Any:
    from mf_sched.integrations.optuna import heartbeat_storage

    return heartbeat_storage(url, heartbeat_interval=1, grace_period=GRACE_S, max_retry=3)


def optuna_worker(url: str, name: str, log_dir: str, seed: int, configs: int) -> None:  # pragma: no cover - child
    """One worker process: the zero-argument adapters until the race is over. On SIGUSR1 it SIGKILLs itself inside
    MFSampler's next decision (after writing ``D <trial>`` to its log); every value it reports is logged as
    ``<trial> <x> <epoch> <value>`` once ``trial.report`` has returned, between ``S <trial>`` and ``E <trial>``."""
    import mf_sched.integrations.optuna as mfo
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.simplefilter("ignore")
    die = {"now": False}
    signal.signal(signal.SIGUSR1, lambda *_: die.update(now=True))
    log = (Path(log_dir) / f"{os.getpid()}.log").open("a")  # exists once the handler is in place
    decide = mfo.MFSampler._race_decide

    def deciding(self: Any, study: Any, trial: Any) -> Any:
        if die["now"]:
            log.write(f"D {trial.number}\n")
            log.flush()
            os.kill(os.getpid(), signal.SIGKILL)  # killed in the middle of the decision
        return decide(self, study, trial)

    mfo.MFSampler._race_decide = deciding  # type: ignore[method-assign]

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_categorical("x", list(range(configs)))
        rng = random.Random(x)
        v = math.nan
        log.write(f"S {trial.number} {time.time()!r}\n")  # the trial's objective starts ...
        log.flush()
        try:
            for epoch in range(1, EPOCHS + 1):
                time.sleep(rng.uniform(0.01, 0.03))
                v = curve(quality(x, configs), epoch)
                trial.report(v, epoch)
                log.write(f"{trial.number} {x} {epoch} {v!r}\n")
                log.flush()
                if trial.should_prune():
                    raise optuna.TrialPruned()
        finally:
            log.write(f"E {trial.number} {time.time()!r}\n")  # ... and ends
            log.flush()
        return v

    study = optuna.load_study(
        study_name=name, storage=_storage(url), sampler=mfo.MFSampler(seed=seed), pruner=mfo.MFPruner()
    )
    study.optimize(objective)


def _last_line(path: Path) -> list[str]:
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 200))
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return []
    return lines[-1].split() if lines else []


def _duplicates(evaluated: dict[int, list], spans: dict[int, list[float]]) -> tuple[int, int, list]:
    """``(duplicates, re-runs, the duplicates' trials)`` over each configuration's trials. A duplicate is work the race
    never asked for: a configuration trained to the top more than once (an extra COMPLETE trial), or an objective
    that ran while another trial's objective ran the same configuration (two workers holding one configuration;
    ``spans``: when each trial's objective ran, from the workers' logs). A re-run is any other evaluation after the
    first: the anytime schedule runs a paused configuration again (an ordinary objective has no checkpoint), and a
    failed trial is retried."""
    dup = rerun = 0
    detail = []
    for ts in evaluated.values():
        done = sum(1 for t in ts if t.state.name == "COMPLETE")
        runs = sorted((spans[t.number], t.number) for t in ts if t.number in spans)
        overlap = sum(1 for (a, _), (b, _) in zip(runs, runs[1:]) if b[0] < a[1])
        extra = max(0, done - 1) + overlap
        dup += extra
        rerun += max(0, len(ts) - 1 - extra)
        if extra:
            detail.append(
                [(t.number, t.state.name, spans.get(t.number), bool(t.system_attrs.get("mf:paused"))) for t in ts]
            )
    return dup, rerun, detail


def _read_log(log_dir: Path) -> tuple[dict[tuple[int, int], float], list[int], dict[int, list[float]]]:
    """(trial, epoch) -> value reported, the trials whose worker died while deciding them, and when each trial's
    objective ran (trial -> [start, end]; end is infinite for a worker killed in the objective)."""
    values: dict[tuple[int, int], float] = {}
    decided: list[int] = []
    spans: dict[int, list[float]] = {}
    for f in log_dir.glob("*.log"):
        for line in f.read_text().splitlines():
            p = line.split()
            if len(p) == 4:  # a line being written when the worker died is incomplete: skipped
                values[(int(p[0]), int(p[2]))] = float(p[3])
            elif len(p) == 2 and p[0] == "D":
                decided.append(int(p[1]))
            elif len(p) == 3 and p[0] in ("S", "E"):
                span = spans.setdefault(int(p[1]), [math.inf, math.inf])
                span[0 if p[0] == "S" else 1] = float(p[2])
    return values, decided, spans


def soak_optuna(
    url: str,
    *,
    workers: int = 8,
    configs: int = 120,
    trial_kills: int = 10,
    decision_kills: int = 5,
    seed: int = 0,
    timeout_s: float = 900.0,
    label: str = "soak",
    progress: bool = True,
) -> dict[str, Any]:
    """One study on ``url`` (an empty database) as the module docstring says; returns its figures and checks."""
    import optuna
    from mf_sched.integrations.optuna import MFSampler
    from optuna.trial import TrialState

    rng = random.Random(seed)
    name = f"{label}-{seed}"
    storage = _storage(url)
    optuna.create_study(study_name=name, storage=storage, direction="maximize")
    log_dir = Path(tempfile.mkdtemp(prefix=f"{label}-"))
    ctx = mp.get_context("spawn")

    def start(i: int) -> Any:
        p = ctx.Process(target=optuna_worker, args=(url, name, str(log_dir), seed * 1000 + i, configs))
        p.start()
        return p

    procs = [start(i) for i in range(workers)]
    started = workers
    kills: list[dict[str, Any]] = []
    doomed: set[int] = set()
    plan = ["trial"] * trial_kills + ["decision"] * decision_kills
    rng.shuffle(plan)
    t0 = time.perf_counter()
    next_kill = t0 + rng.uniform(1.0, 2.0)
    last_note = t0
    alive_max = 0
    while any(p.is_alive() for p in procs):
        now = time.perf_counter()
        if now - t0 > timeout_s:
            for p in procs:
                p.kill()
            raise TimeoutError(f"the study did not end within {timeout_s:.0f} s")
        broken = [p.exitcode for p in procs if p.exitcode not in (None, 0, -signal.SIGKILL)]
        if broken:
            for p in procs:
                p.kill()
            raise RuntimeError(f"a worker failed (exit code {broken[0]}): see its output above")
        over = any(p.exitcode == 0 for p in procs)  # a worker ended by itself: the race is over
        live = [p for p in procs if p.is_alive()]
        alive_max = max(alive_max, len(live))
        targets = [p for p in live if p.pid not in doomed]  # each worker is killed (or told to die) once
        if plan and not over and now >= next_kill and targets:
            victim = rng.choice(targets)
            if plan[0] == "trial":
                last = _last_line(log_dir / f"{victim.pid}.log")
                if last and last[0] != "E" and last[0] != "D":  # inside its objective (checked again after death)
                    os.kill(victim.pid, signal.SIGKILL)  # a process this supervisor started
                    doomed.add(victim.pid)
                    kills.append({"kind": "trial", "pid": victim.pid})
                    plan.pop(0)
                    next_kill = now + rng.uniform(0.5, 2.0)
            elif (log_dir / f"{victim.pid}.log").exists():  # its SIGUSR1 handler is in place
                os.kill(victim.pid, signal.SIGUSR1)  # it SIGKILLs itself inside its next decision
                doomed.add(victim.pid)
                kills.append({"kind": "decision", "pid": victim.pid})
                plan.pop(0)
                next_kill = now + rng.uniform(0.5, 2.0)
        if not over:  # keep the load: a new worker in the place of each dead one
            for i, p in enumerate(procs):
                if p.exitcode == -signal.SIGKILL:
                    procs[i] = start(started)
                    started += 1
        if progress and now - last_note >= 10:
            last_note = now
            n = len(list(log_dir.glob("*.log")))
            print(
                f"  {label}: {now - t0:5.0f} s, {len(live)} workers alive, {n} started, {len(kills)} killed", flush=True
            )
        time.sleep(0.01)
    wall = time.perf_counter() - t0
    study = optuna.load_study(study_name=name, storage=storage)
    time.sleep(GRACE_S + 1.0)
    optuna.storages.fail_stale_trials(study)  # what the next worker would do first: the last dead trials end
    trials = study.get_trials(deepcopy=False)
    by_number = {t.number: t for t in trials}
    logged, died_deciding, spans = _read_log(log_dir)
    for k in kills:  # what each killed worker was doing when it died: the last line of its log
        last = _last_line(log_dir / f"{k['pid']}.log")
        if last[:1] == ["D"]:
            k["when"], k["trial"] = "mid-decision", int(last[1])
        elif last[:1] == ["S"] or len(last) == 4:
            k["when"], k["trial"] = "mid-trial", int(last[0] if len(last) == 4 else last[1])
        else:  # it ended its trial between our look and the signal, or never reached a decision
            k["when"], k["trial"] = "between trials", None
    lost = [k for k, v in logged.items() if by_number[k[0]].intermediate_values.get(k[1]) != v]
    rec = MFSampler().recommendation(study)
    states = collections.Counter(t.state.name for t in trials)
    surplus = sum(1 for t in trials if t.system_attrs.get("mf:surplus"))
    evaluated = collections.defaultdict(list)  # configuration -> its trials (surplus trials evaluate nothing)
    for t in trials:
        if "x" in t.params and not t.system_attrs.get("mf:surplus"):
            evaluated[t.params["x"]].append(t)
    duplicates, reruns, dup_detail = _duplicates(evaluated, spans)
    mid_trial = [k for k in kills if k["when"] == "mid-trial"]
    # the trials retried (Optuna's RetryFailedTrialCallback lists them in each retry's "retry_history"; a retry of a
    # retry keeps the first one's "failed_trial")
    retried = {n for t in trials for n in t.system_attrs.get("retry_history", ())}
    best = max(range(configs), key=lambda x: quality(x, configs))
    return {
        "label": label,
        "workers": workers,
        "workers_started": started,
        "workers_alive_max": alive_max,
        "configs": configs,
        "trials": len(trials),
        "states": dict(states),
        "surplus": surplus,
        "duplicate_evaluations": duplicates,
        "reruns": reruns,
        "duplicates_detail": dup_detail,
        "wall_s": wall,
        "trials_per_s": len(trials) / wall,
        "kills_mid_trial": len(mid_trial),
        "kills_mid_decision": len(died_deciding),
        "kills_between_trials": sum(1 for k in kills if k["when"] == "between trials"),
        "kills": kills,
        "values_logged": len(logged),
        "values_lost": len(lost),
        "lost": lost[:20],
        "left_running": [t.number for t in trials if t.state == TrialState.RUNNING],
        "killed_trials_failed": all(by_number[k["trial"]].state == TrialState.FAIL for k in mid_trial),
        "killed_trials_retried": all(k["trial"] in retried for k in mid_trial),
        "killed_not_retried": [
            (k["trial"], by_number[k["trial"]].state.name, dict(by_number[k["trial"]].system_attrs))
            for k in mid_trial
            if k["trial"] not in retried
        ],
        "decision_trials_failed": all(
            by_number[n].state == TrialState.FAIL and not by_number[n].params for n in died_deciding
        ),
        "answer": rec.params,
        "answer_reason": rec.reason,
        "best": {"x": best},
        "uncovered": list(rec.details.get("uncovered", [])),
        "done": rec.done,
    }


def start_postgres(root: Path) -> tuple[str, Any]:
    """A PostgreSQL server under ``root`` with ``pgserver`` (the ``dev`` extra): (SQLAlchemy URL, stop function)."""
    import pgserver

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = pgserver.get_server(root / "pgdata", cleanup_mode="delete")
    return server.get_uri(), server.cleanup


def new_database(url: str, name: str) -> str:
    import sqlalchemy

    engine = sqlalchemy.create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sqlalchemy.text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return sqlalchemy.engine.make_url(url).set(database=name).render_as_string(hide_password=False)


# ----------------------------------------------------------------------------------------------- Ray
def ray_trainable(config: dict) -> None:  # pragma: no cover - runs in Ray's workers
    """9 epochs with a checkpoint each; a (configuration, epoch) drawn with probability config["crash_rate"] crashes
    (a RuntimeError) the first time it is reached, and its retry goes on from the last checkpoint; logs
    ``<x> <epoch> <value>`` once tune.report has returned."""
    import json

    from ray import tune

    x, configs = config["x"], config["configs"]
    start = 0
    ckpt = tune.get_checkpoint()
    if ckpt is not None:
        with ckpt.as_directory() as d:
            start = json.loads((Path(d) / "s.json").read_text())["epoch"]
    log = (Path(config["log_dir"]) / f"values-{x}.log").open("a")
    for epoch in range(start + 1, EPOCHS + 1):
        time.sleep(0.01)
        crashed = Path(config["log_dir"]) / f"crashed-{x}-{epoch}"
        if random.Random(f"{x}-{epoch}-{config['seed']}").random() < config["crash_rate"] and not crashed.exists():
            crashed.write_text("")  # each drawn (configuration, epoch) crashes once; its retry goes on
            raise RuntimeError(f"simulated crash of configuration {x} at epoch {epoch}")
        v = curve(quality(x, configs), epoch)
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "s.json").write_text(json.dumps({"epoch": epoch}))
            tune.report({"acc": v}, checkpoint=tune.Checkpoint.from_directory(d))
        log.write(f"{x} {epoch} {v!r}\n")
        log.flush()


def soak_ray(
    *, configs: int = 24, crash_rate: float = 0.08, seed: int = 0, label: str = "soak", storage_path: str | None = None
) -> dict[str, Any]:
    """One Ray Tune experiment as the module docstring says (Ray must be initialised); its figures and checks."""
    from mf_sched.integrations.ray import IISEScheduler, SchedulerStateCallback
    from ray import tune

    root = Path(storage_path or tempfile.mkdtemp(prefix="soak-ray-"))
    log_dir = root / f"{label}-logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    sched = IISEScheduler()

    class Received(tune.Callback):
        """Every result the driver received, as ``(x, iteration) -> acc``, and each trial's configuration."""

        def __init__(self) -> None:
            self.values: dict[tuple[int, int], float] = {}
            self.x_of: dict[str, int] = {}

        def on_trial_result(self, iteration: int, trials: Any, trial: Any, result: dict, **info: Any) -> None:
            self.x_of[trial.trial_id] = int(trial.config["x"])
            self.values[(int(trial.config["x"]), int(result["training_iteration"]))] = float(result["acc"])

    received = Received()
    space = {
        "x": tune.grid_search(list(range(configs))),
        "configs": configs,
        "crash_rate": crash_rate,
        "seed": seed,
        "log_dir": str(log_dir),
    }
    t0 = time.perf_counter()
    results = tune.Tuner(
        ray_trainable, param_space=space,
        tune_config=tune.TuneConfig(metric="acc", mode="max", scheduler=sched),
        run_config=tune.RunConfig(
            name=label, storage_path=str(root), verbose=0, stop={"training_iteration": EPOCHS},
            failure_config=tune.FailureConfig(max_failures=10), callbacks=[SchedulerStateCallback(sched), received],
        ),
    ).fit()  # fmt: skip
    wall = time.perf_counter() - t0
    stored: dict[tuple[int, int], float] = {}
    for r in results:
        df = r.metrics_dataframe
        if df is not None and len(df):
            for it, v in zip(df["training_iteration"], df["acc"]):
                stored[(int(r.config["x"]), int(it))] = float(v)
    logged: dict[tuple[int, int], float] = {}
    for f in log_dir.glob("values-*.log"):
        for line in f.read_text().splitlines():
            p = line.split()
            if len(p) == 3:
                logged[(int(p[0]), int(p[1]))] = float(p[2])
    crashes = len(list(log_dir.glob("crashed-*")))
    # lost: a rung result the driver received (what the scheduler decides on) that is not in the scheduler's engine.
    # Apart: results Ray itself did not keep in the trial's result files (progress.csv: after a trial failure, rows
    # between its last persisted checkpoint and the crash go missing there, although the driver and the scheduler got
    # them), and values the trainable reported after the scheduler had paused or stopped its trial (Ray drops them:
    # the trainable runs on until its actor stops)
    ray_rows_missing = sorted(k for k, v in received.values.items() if stored.get(k) != v)
    lost: list[tuple[int, int]] = []
    eng = sched.engine
    rungs = [] if eng is None else [int(r) for r in eng.ladder.resources]
    for tid, x in received.x_of.items():
        for m, r in enumerate(rungs):
            v = received.values.get((x, r))
            if v is not None and (eng is None or tid not in eng or eng.value(tid, m) != v):
                lost.append((x, r))
    overrun = [k for k in logged if k not in received.values]
    cert = sched.certificate()
    best = max(range(configs), key=lambda x: quality(x, configs))
    answer = sched.best_config()
    return {
        "label": label,
        "configs": configs,
        "crash_rate": crash_rate,
        "trials": len(results),
        "crashes": crashes,
        "errored_trials": len(results.errors),
        "wall_s": wall,
        "values_logged": len(logged),
        "values_received": len(received.values),
        "values_lost": len(lost),
        "lost": lost[:20],
        "values_after_stop": len(overrun),
        "ray_result_rows_missing": len(ray_rows_missing),
        "ray_rows_missing": ray_rows_missing[:20],
        "answer": None if answer is None else {"x": answer["x"]},
        "best": {"x": best},
        "certificate": {"epsilon": cert.epsilon, "counts": dict(cert.counts), "uncovered": len(cert.uncovered)},
    }


# ----------------------------------------------------------------------------------------------- command line
def _optuna_main(args: argparse.Namespace) -> dict[str, Any]:
    stop = None
    url = args.url
    if url is None:
        url, stop = start_postgres(Path(tempfile.mkdtemp(prefix="soak-pg-")))
    try:
        runs = []
        for label, tk, dk in (("undisturbed", 0, 0), ("faults", args.trial_kills, args.decision_kills)):
            db = new_database(url, f"soak_{label}_{os.getpid()}")
            print(f"{label}: {args.workers} workers, {args.configs} configurations, {tk} + {dk} kills", flush=True)
            runs.append(
                soak_optuna(
                    db,
                    workers=args.workers,
                    configs=args.configs,
                    trial_kills=tk,
                    decision_kills=dk,
                    seed=args.seed,
                    label=label,
                )  # fmt: skip
            )
    finally:
        if stop is not None:
            stop()
    print_table(
        [("run", "<12"), ("trials", ">7"), ("wall s", ">7.0f"), ("trials/s", ">8.1f"), ("workers", ">8"),
         ("killed trial", ">12"), ("killed decision", ">15"), ("logged", ">7"), ("lost", ">5"), ("answer", "<10")],
        [(r["label"], r["trials"], r["wall_s"], r["trials_per_s"], r["workers_started"], r["kills_mid_trial"],
          r["kills_mid_decision"], r["values_logged"], r["values_lost"], str(r["answer"])) for r in runs],
        rule=True,
    )  # fmt: skip
    return {"runs": runs, "answer_kept": runs[0]["answer"] == runs[1]["answer"] == runs[1]["best"]}


def _ray_main(args: argparse.Namespace) -> dict[str, Any]:
    import ray

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(__file__).resolve().parents[1]),
                                                           os.environ.get("PYTHONPATH", "")) if p)  # fmt: skip
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    try:
        runs = [
            soak_ray(configs=args.configs, crash_rate=0.0, seed=args.seed, label="undisturbed"),
            soak_ray(configs=args.configs, crash_rate=args.crash_rate, seed=args.seed, label="faults"),
        ]
    finally:
        ray.shutdown()
    print_table(
        [("run", "<12"), ("trials", ">7"), ("crashes", ">8"), ("errored", ">8"), ("wall s", ">7.0f"),
         ("received", ">9"), ("lost", ">5"), ("Ray rows missing", ">16"), ("answer", "<10"), ("epsilon", ">8.3g")],
        [(r["label"], r["trials"], r["crashes"], r["errored_trials"], r["wall_s"], r["values_received"],
          r["values_lost"], r["ray_result_rows_missing"], str(r["answer"]), r["certificate"]["epsilon"])
         for r in runs],
        rule=True,
    )  # fmt: skip
    return {"runs": runs, "answer_kept": runs[0]["answer"] == runs[1]["answer"] == runs[1]["best"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], prog="python -m benchmarks.soak")
    sub = ap.add_subparsers(dest="adapter", required=True)
    o = sub.add_parser("optuna", help="MFSampler + MFPruner on PostgreSQL, workers SIGKILLed")
    o.add_argument("--url", default=None, help="a PostgreSQL server (default: start one with pgserver)")
    o.add_argument("--workers", type=int, default=8)
    o.add_argument("--configs", type=int, default=120)
    o.add_argument("--trial-kills", type=int, default=10)
    o.add_argument("--decision-kills", type=int, default=5)
    r = sub.add_parser("ray", help="IISEScheduler with crashing trials")
    r.add_argument("--configs", type=int, default=24)
    r.add_argument("--crash-rate", type=float, default=0.08)
    r.add_argument("--cpus", type=int, default=2)
    for p in (o, r):
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    res = _optuna_main(args) if args.adapter == "optuna" else _ray_main(args)
    print(f"answer kept: {res['answer_kept']}")
    write_json(args.out or RESULTS / f"soak_{args.adapter}.json", {"meta": meta(args), **res})
    lost = sum(run["values_lost"] for run in res["runs"])
    return 0 if res["answer_kept"] and lost == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
