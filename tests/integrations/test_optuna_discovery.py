"""Workers that start together on one study, before the search space is known (issue 35): every worker's first
trial is a *discovery* trial, sampled by its own proposer. Four workers with `MFSampler(seed=0)` used to draw the
same configuration and train it to the top four times; now no configuration is trained to the top twice."""

from __future__ import annotations

import collections
import math
import multiprocessing as mp
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

optuna = pytest.importorskip("optuna", reason="the 'optuna' extra is not installed")

from mf_sched.integrations.optuna import MFPruner, MFSampler  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.ERROR)

WORKERS, EPOCHS, STUDIES = 4, 9, 3


def objective(trial: optuna.Trial) -> float:
    """A worker loads its data (50 ms) before it suggests anything — so the workers that start together all start
    discovery trials — then trains curves so close that the race stops nothing: each configuration it is given is
    trained to the top, and one given twice is trained to the top twice."""
    time.sleep(0.05)
    x = trial.suggest_categorical("x", list(range(8)))
    y = trial.suggest_int("y", 0, 1)
    acc = 0.0
    for epoch in range(1, EPOCHS + 1):
        acc = (0.5 + 0.001 * x + 0.0005 * y) * (1 - 0.3 * math.exp(-epoch / 4))
        time.sleep(0.002)
        trial.report(acc, epoch)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return acc


def storage_of(kind: str, where: str) -> Any:
    if kind == "sqlite":
        return f"sqlite:///{where}"
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock

    return JournalStorage(JournalFileBackend(where, lock_obj=JournalFileOpenLock(where)))


def trained_to_the_top_twice(study: optuna.Study) -> dict[tuple[int, int], int]:
    """The configurations more than one trial trained to the top (all its epochs), with how many did."""
    top = collections.Counter(
        (t.params["x"], t.params["y"]) for t in study.trials if len(t.intermediate_values) == EPOCHS
    )
    return {c: n for c, n in top.items() if n > 1}


def discovered(study: optuna.Study) -> list[tuple[int, int]]:
    """The configurations of the discovery trials (started before the search space was known)."""
    return [(t.params["x"], t.params["y"]) for t in study.trials if "mf:discovery" in t.system_attrs and t.params]


def worker(kind: str, where: str, name: str, barrier: Any) -> None:
    """One worker: its own storage object and MFSampler(seed=0) — the same seed in every worker, as in a script
    started four times — released with the others by `barrier`."""
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.simplefilter("ignore")
    study = optuna.load_study(
        study_name=name, storage=storage_of(kind, where), sampler=MFSampler(seed=0), pruner=MFPruner()
    )
    barrier.wait()
    study.optimize(objective, n_trials=60)


def process_worker(kind: str, where: str, names: list[str], barrier: Any) -> None:
    for name in names:
        worker(kind, where, name, barrier)


@pytest.mark.parametrize("kind", ["journal", "sqlite"])
def test_threads_starting_together_never_train_a_configuration_to_the_top_twice(tmp_path: Path, kind: str) -> None:
    """Four threads, each a worker with its own MFSampler(seed=0) and storage object on one journal file or SQLite
    database, released together; three studies. Before: the discovery trials all drew the proposer's first
    configuration, (7, 1), and trained it to the top 2–4 times in every study."""
    for i in range(STUDIES):
        where = str(tmp_path / f"{kind}-{i}.db")
        name = optuna.create_study(storage=storage_of(kind, where), direction="maximize").study_name
        barrier = threading.Barrier(WORKERS)
        threads = [threading.Thread(target=worker, args=(kind, where, name, barrier)) for _ in range(WORKERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not any(t.is_alive() for t in threads)
        study = optuna.load_study(study_name=name, storage=storage_of(kind, where))
        found = discovered(study)
        assert len(found) >= 2, found  # the workers did start together
        assert len(set(found)) == len(found), (i, found)
        assert not trained_to_the_top_twice(study), (i, trained_to_the_top_twice(study), found)


def test_processes_starting_together_never_train_a_configuration_to_the_top_twice(tmp_path: Path) -> None:
    """Four worker processes with MFSampler(seed=0) on one journal file, released together; three studies."""
    where = str(tmp_path / "j.log")
    names = [optuna.create_study(storage=storage_of("journal", where), direction="maximize").study_name
             for _ in range(STUDIES)]  # fmt: skip
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(WORKERS)
    procs = [ctx.Process(target=process_worker, args=("journal", where, names, barrier)) for _ in range(WORKERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(240)
    assert [p.exitcode for p in procs] == [0] * WORKERS
    for name in names:
        study = optuna.load_study(study_name=name, storage=storage_of("journal", where))
        found = discovered(study)
        assert len(set(found)) == len(found), (name, found)
        assert not trained_to_the_top_twice(study), (name, trained_to_the_top_twice(study), found)
