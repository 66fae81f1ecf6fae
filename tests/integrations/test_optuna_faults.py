"""MFSampler() + MFPruner() under faults: 4 worker processes on one study, one of them SIGKILLed mid-trial.

On a real PostgreSQL server (the ``postgres_url`` fixture, tests/_postgres.py) with Optuna's heartbeat
(:func:`mf_sched.integrations.optuna.heartbeat_storage`), and on a journal file (no heartbeat) with MFSampler's
``stale_after``. The worker that is killed is the one evaluating the best configuration — the trial the race
waits for — so a lost evaluation would change the answer or hang the study. Checked: the killed trial is failed
(heartbeat) or passed over (``stale_after``), its configuration is evaluated again, the study stops by itself
with the answer of an undisturbed run, every value a worker reported is in the storage, and how many
configurations were evaluated more than once.
"""

from __future__ import annotations

import collections
import math
import multiprocessing as mp
import os
import random
import signal
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest

optuna = pytest.importorskip("optuna", reason="the 'optuna' extra is not installed")
pytestmark = [
    pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used with Study.optimize"),
    pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning"),
]

from mf_sched.integrations.optuna import MFPruner, MFRecommendation, MFSampler, heartbeat_storage  # noqa: E402
from optuna.trial import TrialState  # noqa: E402

# 0.30 … 0.86, 0.08 apart (σ = 0.01), in a mixed order (candidates are handed out in this order)
CONFIGS = [0.62, 0.30, 0.86, 0.46, 0.70, 0.38, 0.78, 0.54]
BEST = max(CONFIGS)
EPOCHS = 9  # rungs 1, 3, 9 (inferred from the first completed trial)
WORKERS = 4
SEED = 7
JOIN_S = 150  # a worker that has not stopped by then is stuck (the race never ended): the test fails


def curve(q: float, epoch: int) -> float:
    return q * (1 - 0.15 * math.exp(-(epoch - 1) / 3))


def objective(trial: optuna.Trial, log: Path) -> float:
    """An ordinary pruning objective; each epoch sleeps 10-50 ms (seeded by the configuration: the same durations
    in every run) and appends ``trial q epoch value`` to this process's log once ``report`` has returned."""
    q = trial.suggest_categorical("q", CONFIGS)
    rng = random.Random(round(q * 100))
    acc = math.nan
    with log.open("a") as f:
        for epoch in range(1, EPOCHS + 1):
            time.sleep(rng.uniform(0.01, 0.05))
            acc = curve(q, epoch)
            trial.report(acc, epoch)
            f.write(f"{trial.number} {q} {epoch} {acc!r}\n")
            f.flush()
            if trial.should_prune():
                raise optuna.TrialPruned()
    return acc


def make_storage(kind: str, where: str) -> optuna.storages.BaseStorage:
    if kind == "postgres":
        return heartbeat_storage(where, heartbeat_interval=1, grace_period=3, max_retry=2)
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock

    return JournalStorage(JournalFileBackend(where, lock_obj=JournalFileOpenLock(where)))


def worker(kind: str, where: str, name: str, log_dir: str, seed: int, stale_after: float | None) -> None:
    """One worker process: the zero-argument adapters (``stale_after`` on the journal), optimize until the race
    is over (no n_trials, no timeout: only MFSampler's study.stop() ends it)."""
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.simplefilter("ignore")
    kw = {} if stale_after is None else {"stale_after": stale_after}
    study = optuna.load_study(
        study_name=name, storage=make_storage(kind, where), sampler=MFSampler(seed=seed, **kw), pruner=MFPruner()
    )
    log = Path(log_dir) / f"{os.getpid()}.log"
    study.optimize(lambda t: objective(t, log))


@dataclass
class Outcome:
    study: optuna.Study
    exitcodes: dict[int, int | None]  # pid -> exit code
    victim: tuple[int, int] | None  # (pid, trial number) of the worker killed mid-trial
    logged: dict[tuple[int, int], float]  # (trial, epoch) -> value a worker reported
    wall_s: float
    trials: list[optuna.trial.FrozenTrial] = field(default_factory=list)

    def surplus(self) -> list[optuna.trial.FrozenTrial]:
        return [t for t in self.trials if t.system_attrs.get("mf:surplus")]

    def evaluations(self) -> collections.Counter:
        """Trials per configuration, not counting surplus trials (nothing was left to hand out: pruned at once)."""
        return collections.Counter(
            t.params["q"] for t in self.trials if "q" in t.params and not t.system_attrs.get("mf:surplus")
        )

    def duplicates(self) -> int:
        return sum(n - 1 for n in self.evaluations().values())


def read_logs(log_dir: Path) -> dict[int, list[tuple[int, float, int, float]]]:
    out: dict[int, list[tuple[int, float, int, float]]] = {}
    for f in log_dir.glob("*.log"):
        rows = []
        for line in f.read_text().splitlines():
            parts = line.split()
            if len(parts) == 4:  # a line being written is skipped
                rows.append((int(parts[0]), float(parts[1]), int(parts[2]), float(parts[3])))
        out[int(f.stem)] = rows
    return out


def run_study(kind: str, where: str, tmp: Path, *, kill: bool, stale_after: float | None = None) -> Outcome:
    """WORKERS spawned processes on one study; with ``kill``, SIGKILL the worker evaluating the best
    configuration once it has reported 2-6 of its 9 epochs."""
    name = f"faults-{kind}-{'kill' if kill else 'clean'}"
    log_dir = tmp / name
    log_dir.mkdir()
    storage = make_storage(kind, where)
    optuna.create_study(study_name=name, storage=storage, direction="maximize")
    ctx = mp.get_context("spawn")
    args = (kind, where, name, str(log_dir))
    procs = [ctx.Process(target=worker, args=(*args, SEED + i, stale_after)) for i in range(WORKERS)]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    victim = None
    try:
        deadline = time.monotonic() + JOIN_S
        while kill and victim is None and time.monotonic() < deadline:
            for p in procs:
                rows = read_logs(log_dir).get(p.pid, [])
                if rows and rows[-1][1] == BEST and 2 <= rows[-1][2] <= 6:
                    os.kill(p.pid, signal.SIGKILL)  # a process this test started, in the middle of its trial
                    victim = (p.pid, rows[-1][0])
                    break
            time.sleep(0.005)
        assert not kill or victim is not None, "no worker was seen evaluating the best configuration"
        for p in procs:
            p.join(max(1.0, deadline - time.monotonic()))
        stuck = [p.pid for p in procs if p.is_alive()]
        assert not stuck, f"workers {stuck} did not stop within {JOIN_S} s: the race never ended"
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
    wall = time.perf_counter() - t0
    study = optuna.load_study(study_name=name, storage=storage)
    logged = {(tr, ep): v for rows in read_logs(log_dir).values() for tr, _, ep, v in rows}
    codes = {p.pid: p.exitcode for p in procs}
    return Outcome(study, codes, victim, logged, wall, study.get_trials(deepcopy=False))


def answer(out: Outcome, stale_after: float | None = None) -> MFRecommendation:
    """The recommendation, read as the workers read it (a journal's dead trial is passed over after stale_after)."""
    if stale_after is None:
        return MFSampler().recommendation(out.study)
    with pytest.warns(UserWarning, match="has been RUNNING for longer than"):
        return MFSampler(stale_after=stale_after).recommendation(out.study)


def check_common(out: Outcome, stale_after: float | None = None) -> None:
    """What holds for every run, killed or not."""
    rec = answer(out, stale_after)
    assert rec.done and rec.params == {"q": BEST}, rec
    assert out.study.best_trial.params == {"q": BEST} and out.study.best_trial.last_step == EPOCHS
    by_number = {t.number: t for t in out.trials}
    lost = [(tr, ep) for (tr, ep), v in out.logged.items() if by_number[tr].intermediate_values.get(ep) != v]
    assert not lost, f"values reported by workers but missing from the storage: {lost[:10]}"
    for t in out.trials:  # a finished trial keeps every value it reported
        if t.state in (TrialState.COMPLETE, TrialState.PRUNED):
            assert t.intermediate_values and max(t.intermediate_values) == t.last_step
            assert all((t.number, ep) in out.logged for ep in t.intermediate_values)
    assert set(out.evaluations()) == set(CONFIGS)  # every configuration was evaluated
    # workers waiting on others back off: 273 surplus trials filled the journal in 6 s before the back-off
    assert len(out.surplus()) <= 15 * WORKERS, summary("too many surplus trials", out)


def summary(label: str, out: Outcome) -> str:
    states = collections.Counter(t.state.name for t in out.trials)
    return (
        f"{label}: {out.wall_s:.1f} s, {len(out.trials)} trials {dict(states)}, {len(out.surplus())} surplus, "
        f"{out.duplicates()} duplicate evaluations {dict(out.evaluations())}, {len(out.logged)} values logged"
    )


def check_killed(out: Outcome, clean: Outcome, stale_after: float | None = None) -> optuna.trial.FrozenTrial:
    """The killed worker died by SIGKILL, the others stopped by themselves, the answer is the undisturbed one."""
    assert out.victim is not None
    pid, number = out.victim
    assert out.exitcodes == {p: -signal.SIGKILL if p == pid else 0 for p in out.exitcodes}, out.exitcodes
    assert answer(out, stale_after).params == answer(clean).params
    killed = next(t for t in out.trials if t.number == number)
    assert killed.params == {"q": BEST} and killed.intermediate_values  # what it reported before dying is kept
    assert killed.last_step is not None and killed.last_step < EPOCHS
    return killed


# ------------------------------------------------------------------------------------------------ one process
def quick(trial: optuna.Trial) -> float:
    q = trial.suggest_categorical("q", CONFIGS)
    acc = math.nan
    for epoch in range(1, EPOCHS + 1):
        acc = curve(q, epoch)
        trial.report(acc, epoch)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return acc


def dead_trial(study: optuna.Study) -> optuna.trial.Trial:
    """A trial whose worker dies after two epochs and one heartbeat (what a SIGKILLed worker leaves)."""
    dead = study.ask()
    q = dead.suggest_categorical("q", CONFIGS)
    for epoch in (1, 2):
        dead.report(curve(q, epoch), epoch)
    study._storage.record_heartbeat(dead._trial_id)
    return dead


@pytest.mark.parametrize("db", ["sqlite", "postgres"])
def test_heartbeat_fails_a_dead_trial_and_its_configuration_is_retried(db: str, tmp_path: Path, request) -> None:
    url = f"sqlite:///{tmp_path / 'hb.db'}" if db == "sqlite" else request.getfixturevalue("postgres_url")
    sampler = MFSampler(seed=0)
    study = optuna.create_study(
        storage=heartbeat_storage(url, heartbeat_interval=1, grace_period=1, max_retry=1),
        direction="maximize", sampler=sampler, pruner=MFPruner(),
    )  # fmt: skip
    study.optimize(quick, n_trials=1)  # the search space and the maximum resource are known
    dead = dead_trial(study)
    time.sleep(2.5)  # past the grace period: the next trial's worker fails it
    study.optimize(quick, n_trials=50)
    trials = study.get_trials(deepcopy=False)
    old = trials[dead.number]
    assert old.state == TrialState.FAIL and sorted(old.intermediate_values) == [1, 2]  # its values are kept
    retry = [t for t in trials if t.system_attrs.get("failed_trial") == dead.number]
    assert len(retry) == 1 and retry[0].params == old.params and retry[0].state != TrialState.FAIL
    assert retry[0].system_attrs["mf:arm"] == old.system_attrs["mf:arm"]
    rec = sampler.recommendation(study)
    assert rec.done and rec.params == {"q": BEST} and len(trials) < 50  # the study stopped by itself
    evaluated = collections.Counter(t.params["q"] for t in trials if not t.system_attrs.get("mf:surplus"))
    # the killed trial's configuration: its trial and the retry; every other evaluation beyond one per configuration
    # runs a configuration the anytime schedule paused (mf:paused) again: nothing is evaluated twice for the fault
    paused = collections.Counter(t.params["q"] for t in trials if t.system_attrs.get("mf:paused"))
    assert evaluated[old.params["q"]] == 2 + paused[old.params["q"]]
    assert all(evaluated[q] <= 1 + paused[q] for q in evaluated if q != old.params["q"])


def test_a_queued_retry_holds_its_configuration(tmp_path: Path) -> None:
    """Between the heartbeat failing a trial and a worker taking its retry (WAITING), the configuration must not
    be handed to another trial as well (4 workers on PostgreSQL evaluated it three times before)."""
    sampler = MFSampler(seed=0)
    storage = heartbeat_storage(f"sqlite:///{tmp_path / 'q.db'}", heartbeat_interval=1, grace_period=1)
    study = optuna.create_study(storage=storage, direction="maximize", sampler=sampler, pruner=MFPruner())
    study.optimize(quick, n_trials=1)
    dead = dead_trial(study)
    arm = study._storage.get_trial(dead._trial_id).system_attrs["mf:arm"]
    time.sleep(2.2)
    optuna.storages.fail_stale_trials(study)  # what the next worker does first: FAIL + enqueue the retry
    waiting = study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
    assert len(waiting) == 1 and waiting[0].system_attrs["mf:arm"] == arm
    asked = [study.ask() for _ in range(3)]  # ask() takes the retry first
    decided = {t.number: t.system_attrs.get("mf:arm") for t in study.get_trials(deepcopy=False)}
    arms = [decided[t.number] for t in asked]
    assert arms[0] is None or arms[0] == arm
    assert study.get_trials(deepcopy=False)[-3].system_attrs.get("failed_trial") == dead.number
    assert arm not in arms[1:]


def test_heartbeat_storage_arguments() -> None:
    for kwargs, match in (
        ({"heartbeat_interval": 0}, "heartbeat_interval = 0 is out of range"),
        ({"heartbeat_interval": 1.5}, "heartbeat_interval = 1.5 is out of range"),
        ({"grace_period": -1}, "grace_period = -1 is out of range"),
        ({"max_retry": -1}, "max_retry = -1 is out of range"),
    ):
        with pytest.raises(ValueError, match=match):
            heartbeat_storage("sqlite:///:memory:", **kwargs)
    with pytest.raises(ValueError, match="is not a database URL"):
        heartbeat_storage("study.db")
    s = heartbeat_storage("sqlite:///:memory:", heartbeat_interval=5, max_retry=None)
    assert s.get_heartbeat_interval() == 5 and s.grace_period == 10


# ------------------------------------------------------------------------------------------------ PostgreSQL
@pytest.mark.slow
def test_postgres_four_workers_one_killed_mid_trial(postgres_server: str, tmp_path: Path) -> None:
    from _postgres import new_database

    clean = run_study("postgres", new_database(postgres_server), tmp_path, kill=False)
    check_common(clean)
    assert set(clean.exitcodes.values()) == {0}
    hit = run_study("postgres", new_database(postgres_server), tmp_path, kill=True)
    check_common(hit)
    killed = check_killed(hit, clean)
    assert killed.state == TrialState.FAIL  # the heartbeat stopped, a worker failed it
    retries = [t for t in hit.trials if t.system_attrs.get("failed_trial") == killed.number]
    assert len(retries) == 1 and retries[0].params == killed.params and retries[0].state == TrialState.COMPLETE
    assert retries[0].system_attrs.get("mf:fidelity") == killed.system_attrs.get("mf:fidelity")
    # duplicates: the retry, plus first trials drawn at once by workers that did not yet know the search space
    assert hit.duplicates() <= clean.duplicates() + 1 + (WORKERS - 1)
    print(summary("postgres, undisturbed", clean))
    print(summary("postgres, one worker killed", hit))


# ------------------------------------------------------------------------------------------------ journal
@pytest.mark.slow
def test_journal_four_workers_one_killed_mid_trial_stale_after(tmp_path: Path) -> None:
    """No heartbeat: the killed trial stays RUNNING for ever; MFSampler(stale_after=…) frees its configuration."""
    stale = 6.0  # longer than any trial here (27 epochs × ≤ 50 ms), so only the dead one is passed over
    clean = run_study("journal", str(tmp_path / "clean.log"), tmp_path, kill=False, stale_after=stale)
    check_common(clean)
    hit = run_study("journal", str(tmp_path / "hit.log"), tmp_path, kill=True, stale_after=stale)
    check_common(hit, stale)
    killed = check_killed(hit, clean, stale)
    assert killed.state == TrialState.RUNNING  # nothing can end it without a heartbeat
    again = [t for t in hit.trials if t.params.get("q") == BEST and t.number > killed.number]
    assert any(t.state == TrialState.COMPLETE for t in again), "the killed configuration was not evaluated again"
    assert hit.duplicates() <= clean.duplicates() + 1 + (WORKERS - 1)
    print(summary("journal, undisturbed", clean))
    print(summary("journal, one worker killed", hit))


def test_surplus_trials_back_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every configuration held by a running trial: surplus trials, and from the second in a row a growing pause
    (50 ms doubling, at most 2 s); a trial that gets a configuration resets it."""
    from mf_sched.integrations import _optuna_claims

    sampler = MFSampler(seed=0, search_space={"q": [0.3, 0.6]}, resources=[1, 3, 9])
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    pauses: list[float] = []

    def surplus(t: optuna.trial.Trial) -> bool:
        return bool(study._storage.get_trial_system_attrs(t._trial_id).get("mf:surplus"))

    monkeypatch.setattr(_optuna_claims.time, "sleep", pauses.append)
    held = [study.ask() for _ in range(2)]  # both configurations are running
    assert not any(surplus(t) for t in held) and pauses == []
    extra = [study.ask() for _ in range(8)]
    assert all(surplus(t) for t in extra)
    assert pauses == [0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0]
    for t in extra:
        study.tell(t, state=TrialState.PRUNED)
    study.tell(held[0], state=TrialState.FAIL)  # its configuration is free again: handed out, no pause
    again = study.ask()
    assert not surplus(again) and len(pauses) == 7
    more = [study.ask() for _ in range(2)]  # the streak starts over: no pause, then the first 50 ms
    assert all(surplus(t) for t in more) and pauses[7:] == [0.05]
