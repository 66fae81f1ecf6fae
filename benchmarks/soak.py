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

``python -m benchmarks.soak scale`` (issue 35): ``--workers`` (16) processes on one PostgreSQL study over a
continuous space (two floats) raced by ``MFSampler(n_candidates=--candidates, proposer=TPESampler(seed))`` +
``MFPruner()``, capped at ``--trials`` (5,000) trials, each epoch ``--epoch-ms`` (2-5 ms), ``--trial-kills`` (30) +
``--decision-kills`` (15) SIGKILLs ``--kill-gap-s`` (5-35 s) apart, the load held as above. Checked: values lost,
configurations trained to the top twice (apart from the retries of killed trials), trials left RUNNING, and the answer
against the best configuration the completed trials show (an undisturbed run of TPE in 16 processes would not
propose the same configurations); then ``mf-sched report`` and ``plot_race`` are timed on the study.

``python -m benchmarks.soak ray-node``: a two-node local Ray cluster (``ray.cluster_utils.Cluster``), the
zero-argument ``IISEScheduler()`` over ``--configs`` (16) configurations, undisturbed, then with the worker node
SIGKILLed mid-race (``Cluster.remove_node(allow_graceful=False)``) and a new node added 2 s later: the trials of the
dead node retried (from their checkpoints), values lost, the answer.

Each prints a table and writes ``benchmarks/results/soak_<adapter>.json``; ``tests/integrations/test_soak.py`` runs a
bounded version of each (``make test-slow``). ``scale`` and ``ray-node`` take ``--publish JSON``: the result copied to
``docs/measured/`` and its table put into docs/benchmarks.md (tests/test_measured_soak.py compares the two).
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

from benchmarks._common import RESULTS, meta, print_table, put_table_after, write_json

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


def quality_xy(x: float, y: float) -> float:
    """The continuous space's final accuracy: 0.3 ... 0.9, one smooth peak at (0.62, 0.27)."""
    return 0.3 + 0.6 * math.exp(-((x - 0.62) ** 2 + (y - 0.27) ** 2) / 0.08)


def optuna_worker(
    url: str, name: str, log_dir: str, seed: int, configs: int, space: str = "grid", n_trials: int | None = None,
    epoch_s: tuple[float, float] = (0.01, 0.03),
) -> None:  # pragma: no cover - child  # fmt: skip
    """One worker process: the adapters until the race is over (or the study holds ``n_trials`` trials). On SIGUSR1
    it SIGKILLs itself inside MFSampler's next decision (after writing ``D <trial>`` to its log); every value it
    reports is logged as ``<trial> <x> <epoch> <value>`` once ``trial.report`` has returned, between ``S <trial>``
    and ``E <trial>``. ``space="grid"``: the zero-argument ``MFSampler()`` over ``configs`` categorical choices;
    ``space="continuous"``: two floats in [0, 1], ``MFSampler(n_candidates=configs, proposer=TPESampler(seed))``."""
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
        if space == "continuous":
            x, y = trial.suggest_float("x", 0.0, 1.0), trial.suggest_float("y", 0.0, 1.0)
            q = quality_xy(x, y)
        else:
            x = trial.suggest_categorical("x", list(range(configs)))
            q = quality(x, configs)
        rng = random.Random(x)
        v = math.nan
        log.write(f"S {trial.number} {time.time()!r}\n")  # the trial's objective starts ...
        log.flush()
        try:
            for epoch in range(1, EPOCHS + 1):
                time.sleep(rng.uniform(*epoch_s))
                v = curve(q, epoch)
                trial.report(v, epoch)
                log.write(f"{trial.number} {x} {epoch} {v!r}\n")
                log.flush()
                if trial.should_prune():
                    raise optuna.TrialPruned()
        finally:
            log.write(f"E {trial.number} {time.time()!r}\n")  # ... and ends
            log.flush()
        return v

    if space == "continuous":
        sampler = mfo.MFSampler(seed=seed, n_candidates=configs, proposer=optuna.samplers.TPESampler(seed=seed))
    else:
        sampler = mfo.MFSampler(seed=seed)
    study = optuna.load_study(study_name=name, storage=_storage(url), sampler=sampler, pruner=mfo.MFPruner())
    cap = [] if n_trials is None else [optuna.study.MaxTrialsCallback(n_trials, states=None)]
    study.optimize(objective, callbacks=cap)


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
    space: str = "grid",
    n_trials: int | None = None,
    epoch_s: tuple[float, float] = (0.01, 0.03),
    kill_gap_s: tuple[float, float] = (0.5, 2.0),
) -> dict[str, Any]:
    """One study on ``url`` (an empty database) as the module docstring says; returns its figures and checks.

    ``space="continuous"`` (the ``scale`` command): two floats raced as ``configs`` TPE-proposed candidates, the study
    capped at ``n_trials`` trials; each epoch sleeps ``uniform(*epoch_s)`` seconds and the kills come
    ``uniform(*kill_gap_s)`` seconds apart."""
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
        p = ctx.Process(
            target=optuna_worker, args=(url, name, str(log_dir), seed * 1000 + i, configs, space, n_trials, epoch_s)
        )
        p.start()
        return p

    procs = [start(i) for i in range(workers)]
    started = workers
    kills: list[dict[str, Any]] = []
    doomed: set[int] = set()
    plan = ["trial"] * trial_kills + ["decision"] * decision_kills
    rng.shuffle(plan)
    t0 = time.perf_counter()
    next_kill = t0 + rng.uniform(1.0, 2.0) * kill_gap_s[1] / 2.0
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
                    next_kill = now + rng.uniform(*kill_gap_s)
            elif (log_dir / f"{victim.pid}.log").exists():  # its SIGUSR1 handler is in place
                os.kill(victim.pid, signal.SIGUSR1)  # it SIGKILLs itself inside its next decision
                doomed.add(victim.pid)
                kills.append({"kind": "decision", "pid": victim.pid})
                plan.pop(0)
                next_kill = now + rng.uniform(*kill_gap_s)
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
            evaluated[tuple(sorted(t.params.items()))].append(t)
    duplicates, reruns, dup_detail = _duplicates(evaluated, spans)
    mid_trial = [k for k in kills if k["when"] == "mid-trial"]
    # the trials retried (Optuna's RetryFailedTrialCallback lists them in each retry's "retry_history"; a retry of a
    # retry keeps the first one's "failed_trial")
    retried = {n for t in trials for n in t.system_attrs.get("retry_history", ())}
    if space == "continuous":  # the best configuration the study's completed trials show, and how good it is
        done_trials = [t for t in trials if t.state == TrialState.COMPLETE and not t.system_attrs.get("mf:surplus")]
        top = max(done_trials, key=lambda t: t.value, default=None)
        best = None if top is None else dict(top.params)
        extra = {
            "n_trials": n_trials,
            "configurations": len(evaluated),
            "completed_configurations": len({tuple(sorted(t.params.items())) for t in done_trials}),
            "answer_quality": None if not rec.params else quality_xy(rec.params["x"], rec.params["y"]),
            "optimum_quality": quality_xy(0.62, 0.27),
            "answer_rung": rec.rung,
        }
    else:
        best, extra = {"x": max(range(configs), key=lambda x: quality(x, configs))}, {}
    return {
        "space": space,
        **extra,
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
        "best": best,
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
    with (Path(config["log_dir"]) / f"starts-{x}.log").open("a") as f:  # the node each (re)start ran on, from where
        import ray

        f.write(f"{ray.get_runtime_context().get_node_id()} {start}\n")
    for epoch in range(start + 1, EPOCHS + 1):
        time.sleep(config.get("epoch_s", 0.01))
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
    *,
    configs: int = 24,
    crash_rate: float = 0.08,
    seed: int = 0,
    label: str = "soak",
    storage_path: str | None = None,
    epoch_s: float = 0.01,
    during: Any = None,
) -> dict[str, Any]:
    """One Ray Tune experiment as the module docstring says (Ray must be initialised); its figures and checks.
    ``during(log_dir)``, if given, returns a Tune callback added to the experiment's (the node kill of ``ray-node``);
    its ``info`` dict is in the result as ``"during"``."""
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
        "epoch_s": epoch_s,
    }
    extra = [] if during is None else [during(log_dir)]
    t0 = time.perf_counter()
    results = tune.Tuner(
        ray_trainable, param_space=space,
        tune_config=tune.TuneConfig(metric="acc", mode="max", scheduler=sched),
        run_config=tune.RunConfig(
            name=label, storage_path=str(root), verbose=0, stop={"training_iteration": EPOCHS},
            failure_config=tune.FailureConfig(max_failures=10),
            callbacks=[SchedulerStateCallback(sched), received, *extra],
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
    starts = {int(f.stem.split("-")[1]): [ln.split() for ln in f.read_text().splitlines() if len(ln.split()) == 2]
              for f in log_dir.glob("starts-*.log")}  # fmt: skip
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
        "starts": {x: [(node, int(ep)) for node, ep in v] for x, v in sorted(starts.items())},
        "during": dict(extra[0].info) if extra else {},
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


MEASURED = Path(__file__).resolve().parents[1] / "docs" / "measured"
SCALE_MARK = "<!-- table: benchmarks.soak scale -->"
NODE_MARK = "<!-- table: benchmarks.soak ray-node -->"


def render_scale(res: dict[str, Any]) -> str:
    """The docs' table of a ``scale`` result (``docs/measured/soak_scale.json``; tests/test_measured.py compares)."""
    r = res["runs"][0]
    st = r["states"]
    states = ", ".join(f"{st.get(k, 0):,} {k.lower()}" for k in ("COMPLETE", "PRUNED", "FAIL"))
    rows = [
        ("load held", f"{r['workers']} workers ({r['workers_started']} started)"),
        ("trials", f"{r['trials']:,} ({states}; {r['surplus']:,} surplus) over {r['configurations']:,} configurations"),
        ("wall time", f"{r['wall_s'] / 60:.1f} min ({r['trials_per_s']:.2f} trials/s)"),
        ("faults injected", f"{r['kills_mid_trial']} SIGKILLs mid-trial, {r['kills_mid_decision']} mid-decision"),
        ("values reported / lost", f"{r['values_logged']:,} / {r['values_lost']}"),
        ("trained to the top twice", f"{r['duplicate_evaluations']} (retries of trials killed mid-trial: "
                                     f"{r['kills_mid_trial']})"),
        ("left RUNNING", f"{len(r['left_running'])}"),
        ("killed trials failed and retried", "yes" if r["killed_trials_failed"] and r["killed_trials_retried"]
         and r["decision_trials_failed"] else "**no**"),
        ("answer", f"quality {r['answer_quality']:.4f} of {r['optimum_quality']:.4f}; "
                   + ("the best completed configuration: **kept**" if res["answer_kept"] else "**not** the best")),
        ("`mf-sched report`", f"{r['report_s']:.1f} s, {r['report_page_bytes'] / 1e6:.1f} MB page"),
        ("`plot_race(study)`", f"{r['plot_race_s']:.1f} s (+ {r['load_study_s']:.1f} s to load the study), "
                               f"{r['plot_race_json_bytes'] / 1e6:.1f} MB figure JSON"),
    ]  # fmt: skip
    return "\n".join(["| measure | value |", "|---|---|", *(f"| {a} | {b} |" for a, b in rows)])


def render_node(res: dict[str, Any]) -> str:
    """The docs' table of a ``ray-node`` result (``docs/measured/soak_ray-node.json``)."""
    lines = ["| run | trials | errored | wall | rung results received / lost | retried after the kill "
             "(from a checkpoint) | answer | certificate |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in res["runs"]:
        hit = bool(r["during"])
        retried = f"{len(r['retried_after_kill'])} ({len(r['resumed_from_checkpoint'])})" if hit else "—"
        kept = "" if not hit else (": **kept**" if res["answer_kept"] else ": **changed**")
        c = r["certificate"]
        lines.append(
            f"| {r['label']} | {r['trials']} | {r['errored_trials']} | {r['wall_s']:.0f} s | "
            f"{r['values_received']} / {r['values_lost']} | {retried} | x = {r['answer']['x']}{kept} | "
            f"ε = {c['epsilon']:g}, {c['counts'].get('stopped', 0)} stopped, "
            f"{c['counts'].get('finished', 0)} finished, {c['uncovered']} uncovered |"
        )
    return "\n".join(lines)


def publish(result_file: Path, kind: str, doc: Path | None = None) -> None:
    """Copy a result file to ``docs/measured/`` and put its table into docs/benchmarks.md after the marker line."""
    import json

    res = json.loads(result_file.read_text(encoding="utf-8"))
    mark, render = (SCALE_MARK, render_scale) if kind == "scale" else (NODE_MARK, render_node)
    write_json(MEASURED / f"soak_{kind}.json", res)
    put_table_after(doc or MEASURED.parent / "benchmarks.md", mark, render(res))


def time_report(url: str, study_name: str, out_dir: Path) -> dict[str, Any]:
    """Seconds and size of ``mf-sched report`` (the command, in a new process: imports included) and of
    ``plot_race(study)`` (in this process) on the study ``study_name`` of ``url``."""
    import subprocess

    import optuna

    from mf_sched.visualization import plot_race

    page = out_dir / f"{study_name}-race.html"
    t = time.perf_counter()
    cmd = [sys.executable, "-m", "mf_sched.cli", "report", url, "--study", study_name, "-o", str(page)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    report_s = time.perf_counter() - t
    t = time.perf_counter()
    study = optuna.load_study(study_name=study_name, storage=url)
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    fig = plot_race(study)
    plot_s = time.perf_counter() - t
    return {
        "report_s": report_s,
        "report_page_bytes": page.stat().st_size,
        "load_study_s": load_s,
        "plot_race_s": plot_s,
        "plot_race_json_bytes": len(fig.to_json()),
    }


def _scale_main(args: argparse.Namespace) -> dict[str, Any]:
    """``scale``: ``--workers`` (16) processes, one PostgreSQL study capped at ``--trials`` (5,000) trials, two floats
    raced as ``--candidates`` TPE proposals, each epoch a few ms, SIGKILLs spread over the run; then the report
    and ``plot_race`` timed on that study."""
    stop = None
    url = args.url
    if url is None:
        url, stop = start_postgres(Path(tempfile.mkdtemp(prefix="soak-pg-")))
    try:
        db = new_database(url, f"soak_scale_{os.getpid()}")
        print(
            f"scale: {args.workers} workers, {args.trials} trials, {args.candidates} TPE candidates, "
            f"{args.trial_kills} + {args.decision_kills} kills",
            flush=True,
        )
        run = soak_optuna(
            db, workers=args.workers, configs=args.candidates, trial_kills=args.trial_kills,
            decision_kills=args.decision_kills, seed=args.seed, label="scale", space="continuous",
            n_trials=args.trials, epoch_s=(args.epoch_ms[0] / 1e3, args.epoch_ms[1] / 1e3),
            kill_gap_s=(args.kill_gap_s[0], args.kill_gap_s[1]), timeout_s=args.timeout_s,
        )  # fmt: skip
        timing = time_report(db, f"scale-{args.seed}", Path(tempfile.mkdtemp(prefix="soak-report-")))
    finally:
        if stop is not None:
            stop()
    run.update(timing)
    print_table(
        [("trials", ">7"), ("wall s", ">7.0f"), ("trials/s", ">8.2f"), ("workers", ">8"), ("killed trial", ">12"),
         ("killed decision", ">15"), ("logged", ">7"), ("lost", ">5"), ("dup", ">4"), ("running", ">8"),
         ("report s", ">9.1f"), ("page MB", ">8.2f"), ("plot s", ">7.1f")],
        [(run["trials"], run["wall_s"], run["trials_per_s"], run["workers_started"], run["kills_mid_trial"],
          run["kills_mid_decision"], run["values_logged"], run["values_lost"], run["duplicate_evaluations"],
          len(run["left_running"]), run["report_s"], run["report_page_bytes"] / 1e6, run["plot_race_s"])],
        rule=True,
    )  # fmt: skip
    print(f"answer {run['answer']} (quality {run['answer_quality']}), best completed {run['best']}")
    return {"runs": [run], "answer_kept": run["answer"] == run["best"]}


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


_CLUSTER: dict[str, Any] = {}  # the ray-node run's Cluster and node to kill: not in the callback (Tune pickles it)


def _node_killer(cluster: Any, node: Any, after: int, restart: bool) -> Any:
    """What ``soak_ray(during=...)`` takes for ``ray-node``: a Tune callback that, once ``after`` values are logged
    and a trial has started on ``node``, kills that node (its raylet and workers SIGKILLed:
    ``Cluster.remove_node(allow_graceful=False)``) and, with ``restart``, adds a new node (2 CPUs) 2 s later. It acts
    in ``on_step_begin``: the driver's main thread (Ray starts a node's processes from the main thread only)."""
    from ray import tune

    from benchmarks import soak  # this module by its name, also under `python -m` (Tune pickles __main__'s globals)

    soak._CLUSTER.update(cluster=cluster, node=node)
    node_id = node.node_id

    class NodeKiller(tune.Callback):
        def __init__(self, log_dir: Path) -> None:
            self.log_dir, self.info, self.killed_at = log_dir, {"killed": False}, None

        def on_step_begin(self, iteration: int, trials: Any, **info: Any) -> None:
            if self.killed_at is None:
                logged = sum(len(f.read_text().splitlines()) for f in self.log_dir.glob("values-*.log"))
                on_node = [f for f in self.log_dir.glob("starts-*.log") if node_id in f.read_text()]
                if logged < after or not on_node:
                    return
                t = time.perf_counter()
                from benchmarks.soak import _CLUSTER

                _CLUSTER["cluster"].remove_node(_CLUSTER["node"], allow_graceful=False)
                self.killed_at = time.perf_counter()
                self.info.update(killed=True, node=node_id, values_logged_at_kill=logged,
                                 trials_seen_on_node=sorted(int(f.stem.split("-")[1]) for f in on_node),
                                 kill_s=self.killed_at - t)  # fmt: skip
            elif restart and "new_node" not in self.info and time.perf_counter() - self.killed_at >= 2.0:
                from benchmarks.soak import _CLUSTER

                self.info["new_node"] = _CLUSTER["cluster"].add_node(num_cpus=2).node_id

        def on_trial_recover(self, iteration: int, trials: Any, trial: Any, **info: Any) -> None:
            """A trial failed and is scheduled again (Tune's FailureConfig): after the kill, one of the dead node's."""
            self.info.setdefault("retried", []).append(int(trial.config["x"]))

    return NodeKiller


def _ray_node_main(args: argparse.Namespace) -> dict[str, Any]:
    """``ray-node``: a two-node local cluster (``ray.cluster_utils.Cluster``: a head with 1 CPU, a worker node with
    2); the same experiment undisturbed, then with the worker node killed mid-race."""
    import ray
    from ray.cluster_utils import Cluster

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(__file__).resolve().parents[1]),
                                                           os.environ.get("PYTHONPATH", "")) if p)  # fmt: skip
    root = Path(args.storage or tempfile.mkdtemp(prefix="soak-ray-node-"))
    runs = []
    for label in ("undisturbed", "node-killed"):
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
        worker = cluster.add_node(num_cpus=2)
        try:
            ray.init(address=cluster.address, log_to_driver=False)
            cluster.wait_for_nodes()
            during = None
            if label == "node-killed":
                during = _node_killer(cluster, worker, args.kill_after, not args.no_restart)
            run = soak_ray(configs=args.configs, crash_rate=0.0, seed=args.seed, label=label, storage_path=str(root),
                           epoch_s=args.epoch_s, during=during)  # fmt: skip
            run["nodes"] = {"head": cluster.head_node.node_id, "worker": worker.node_id}
            runs.append(run)
        finally:
            ray.shutdown()
            cluster.shutdown()
    hit = runs[1]
    dead = hit["during"].get("node")
    # the trials Tune retried after the kill (they were running on the dead node), and those of them whose next start
    # (on another node) went on from a checkpoint (its first epoch > 1)
    retried = sorted(set(hit["during"].get("retried", [])))
    after_dead = {x: v[max(i for i, (n, _) in enumerate(v) if n == dead) + 1 :]
                  for x, v in hit["starts"].items() if any(n == dead for n, _ in v)}  # fmt: skip
    resumed = [x for x in retried if after_dead.get(x) and after_dead[x][0][1] > 0]
    hit["retried_after_kill"] = retried
    hit["resumed_from_checkpoint"] = sorted(resumed)
    print_table(
        [("run", "<12"), ("trials", ">7"), ("errored", ">8"), ("wall s", ">7.0f"), ("received", ">9"), ("lost", ">5"),
         ("retried", ">8"), ("resumed", ">8"), ("answer", "<10"), ("epsilon", ">8.3g")],
        [(r["label"], r["trials"], r["errored_trials"], r["wall_s"], r["values_received"], r["values_lost"],
          len(r.get("retried_after_kill", [])), len(r.get("resumed_from_checkpoint", [])), str(r["answer"]),
          r["certificate"]["epsilon"]) for r in runs],
        rule=True,
    )  # fmt: skip
    print(f"node kill: {hit['during']}")
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
    sc = sub.add_parser("scale", help="16 workers, 5,000 trials, a continuous space with TPE proposals, on PostgreSQL")
    sc.add_argument("--url", default=None, help="a PostgreSQL server (default: start one with pgserver)")
    sc.add_argument("--workers", type=int, default=16)
    sc.add_argument("--trials", type=int, default=5000)
    sc.add_argument("--candidates", type=int, default=5000, help="MFSampler's n_candidates (K)")
    sc.add_argument("--trial-kills", type=int, default=30)
    sc.add_argument("--decision-kills", type=int, default=15)
    sc.add_argument("--epoch-ms", type=float, nargs=2, default=(2.0, 5.0), help="each epoch's sleep: uniform(a, b)")
    sc.add_argument("--kill-gap-s", type=float, nargs=2, default=(5.0, 35.0), help="seconds between kills")
    sc.add_argument("--timeout-s", type=float, default=3600.0)
    r = sub.add_parser("ray", help="IISEScheduler with crashing trials")
    r.add_argument("--configs", type=int, default=24)
    r.add_argument("--crash-rate", type=float, default=0.08)
    r.add_argument("--cpus", type=int, default=2)
    rn = sub.add_parser("ray-node", help="IISEScheduler on a two-node local cluster, the worker node killed mid-race")
    rn.add_argument("--configs", type=int, default=16)
    rn.add_argument("--epoch-s", type=float, default=0.3, help="each epoch's sleep")
    rn.add_argument("--kill-after", type=int, default=20, help="values logged before the node is killed")
    rn.add_argument("--no-restart", action="store_true", help="no new node after the kill")
    rn.add_argument("--storage", default=None, help="the experiments' folder (default: a temporary one)")
    for p in (o, sc, r, rn):
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--out", type=Path, default=None)
    for p in (sc, rn):
        p.add_argument("--publish", type=Path, default=None, metavar="JSON",
                       help="run nothing: copy JSON to docs/measured/, its table into docs/benchmarks.md")  # fmt: skip
    args = ap.parse_args(argv)
    if getattr(args, "publish", None) is not None:
        publish(args.publish, args.adapter)
        return 0
    res = {"optuna": _optuna_main, "scale": _scale_main, "ray": _ray_main, "ray-node": _ray_node_main}[args.adapter](
        args
    )
    print(f"answer kept: {res['answer_kept']}")
    write_json(args.out or RESULTS / f"soak_{args.adapter}.json", {"meta": meta(args), **res})
    lost = sum(run["values_lost"] for run in res["runs"])
    return 0 if res["answer_kept"] and lost == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
