"""The decision core of the Ray schedulers (mf_sched.integrations._ray_core, _ray_race, _ray_iise), driven without
Ray: fed with (trial id, time_attr, value) and a dict of statuses, its decisions checked against hand-computed
bounds. None of these tests needs the 'ray' extra."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mf_sched.integrations._common import resolve_rungs
from mf_sched.integrations._ray_core import (
    CONTINUE,
    ERROR,
    PAUSE,
    PAUSED,
    PENDING,
    RUNNING,
    STOP,
    TERMINATED,
    RungCore,
    RungSettings,
)
from mf_sched.integrations._ray_iise import IISECore
from mf_sched.integrations._ray_race import RaceCore

from mf_sched import FidelityLadder

EXACT = 1e-9  # σ: values are (nearly) exact, so that the bounds are the bias margins alone
LADDER = FidelityLadder(costs=[1, 3, 9], zeta=[0.2, 0.05, 0.0], resources=[1, 3, 9])


class Statuses:
    """The framework's trials as a dict of statuses; stopping a trial records it and marks it TERMINATED."""

    def __init__(self, **status: str) -> None:
        self.st = dict(status)
        self.stopped: list[str] = []

    def status(self, key: str) -> str | None:
        return self.st.get(key)

    def listing(self) -> list[tuple[str, str | None]]:
        return list(self.st.items())

    def stop(self, key: str) -> None:
        self.stopped.append(key)
        self.st[key] = TERMINATED


def settings(rule: str = "race", **kw) -> RungSettings:
    args = dict(rule=rule, delta=0.05, n_trials=None, fixed_arms=False, bias="zeta", eta=None, synchronous=None,
                pause=True, order="depth", schedule="anytime", tolerance=0.005, metric_family=None, bound="curve",
                reduction_factor=3, seed=0)  # fmt: skip
    args.update(kw)
    return RungSettings.checked(**args)


def race_core(**kw) -> RaceCore:
    """Racing over the rungs [1, 3, 9] with ζ⁺ = [0.3, 0.1, 0]: a trial's optimistic final value is its value
    plus ζ⁺ at its rung."""
    rungs = resolve_rungs(
        "test", ladder=None, calibration=None, resources=[1, 3, 9], sigma=EXACT, race_bias=[0.3, 0.1, 0.0],
        max_resource=None, min_resource=None, reduction_factor=3,
    )  # fmt: skip
    return RaceCore(rungs, settings(**kw), mode="max", who="Test", time_attr="epoch")


def iise_core(**kw) -> IISECore:
    rungs = resolve_rungs(
        "test", ladder=LADDER, calibration=None, resources=None, sigma=EXACT, race_bias=None, max_resource=None,
        min_resource=None, reduction_factor=3, zeta_needed_by="rule = 'iise'",
    )  # fmt: skip
    return IISECore(rungs, settings("iise", **kw), mode="max", who="Test", time_attr="epoch")


def added(core: RungCore, trials: Statuses) -> RungCore:
    for key in trials.st:
        core.add(key, {"name": key}, ended=False, max_resource=None)
    return core


def can(answer: bool, asked: list[bool] | None = None):
    def ask() -> bool:
        if asked is not None:
            asked.append(answer)
        return answer

    return ask


def test_the_decision_core_imports_no_ray() -> None:
    code = (
        "import sys, mf_sched.integrations._ray_race, mf_sched.integrations._ray_iise; "
        "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_racing_stops_a_trial_whose_optimistic_value_is_below_the_incumbent() -> None:
    trials = Statuses(a=RUNNING, b=PENDING, c=PENDING)
    core = added(race_core(), trials)
    for t, v in [(1, 0.6), (3, 0.8)]:  # no checkpoint: it cannot pause, so it goes on
        assert core.result("a", t, v, can_pause=can(False), trials=trials) == CONTINUE
    assert core.result("a", 9, 0.9, can_pause=can(False), trials=trials) == STOP  # the top rung: finished
    trials.st.update(a=TERMINATED, b=RUNNING)
    assert core.result("b", 1, 0.5, can_pause=can(True), trials=trials) == STOP  # 0.5 + 0.3 < 0.9
    trials.st.update(b=TERMINATED, c=RUNNING)
    assert core.result("c", 1, 0.7, can_pause=can(True), trials=trials) == CONTINUE  # 0.7 + 0.3 ≥ 0.9, best of 3
    assert core.result("c", 3, 0.75, can_pause=can(True), trials=trials) == STOP  # 0.75 + 0.1 < 0.9
    cert = core.certificate()
    assert cert.key == "a" and cert.counts["finished"] == 1 and cert.counts["stopped"] == 2 and cert.guaranteed
    assert core.best_config() == {"name": "a"}


def test_best_config_is_the_anytime_answer_before_any_trial_finishes() -> None:
    """best_config() answers as MFSampler's recommendation does, at any moment: before any trial reaches the top,
    the trial with the best latest value (it used to be None until a trial finished); then a finished trial unless a
    lower-rung one is already better where it stands."""
    trials = Statuses(a=RUNNING, b=RUNNING, c=PENDING)
    core = added(race_core(), trials)
    assert core.best_config() is None  # no result yet
    core.result("a", 1, 0.6, can_pause=can(False), trials=trials)
    core.result("b", 1, 0.7, can_pause=can(False), trials=trials)
    assert core.best_config() == {"name": "b"}
    core.result("a", 3, 0.75, can_pause=can(False), trials=trials)
    assert core.best_config() == {"name": "a"}  # its latest value is the best
    core.result("a", 9, 0.8, can_pause=can(False), trials=trials)
    assert core.best_config() == {"name": "a"} == {"name": core.certificate().key}


def test_a_trial_pauses_only_with_a_checkpoint_and_while_other_work_waits() -> None:
    trials = Statuses(a=RUNNING, b=RUNNING, d=RUNNING, c=PENDING)
    core = added(race_core(), trials)
    asked: list[bool] = []
    # one value at the rung, fewer than η = 3: ASHA (Algorithm 2) does not promote it yet, and c waits to start
    assert core.result("a", 1, 0.6, can_pause=can(True, asked), trials=trials) == PAUSE
    assert core.result("b", 1, 0.5, can_pause=can(False, asked), trials=trials) == CONTINUE  # no checkpoint
    assert core.result("d", 1, 0.7, can_pause=can(True, asked), trials=trials) == CONTINUE  # best of 3: promoted
    assert asked == [True, False, True]  # asked at every result that continues (not stopped, not at the top)
    trials.st["a"] = PAUSED
    assert core.choose(trials) == "c"  # the trial not started before the paused one
    trials.st["c"] = RUNNING
    assert core.choose(trials) == "a"
    assert core.metrics("a")["race/status"] == "paused"


def test_racing_without_pausing_never_asks_for_a_checkpoint() -> None:
    trials = Statuses(a=RUNNING, b=RUNNING, c=PENDING)
    core = added(race_core(pause=False), trials)
    asked: list[bool] = []
    for key, v in (("a", 0.6), ("b", 0.5)):
        assert core.result(key, 1, v, can_pause=can(True, asked), trials=trials) == CONTINUE
    assert asked == []


def test_synchronous_iise_decides_a_rung_when_the_last_trial_leaves() -> None:
    trials = Statuses(a=RUNNING, b=RUNNING, c=RUNNING)
    core = added(iise_core(), trials)
    assert core.result("a", 1, 0.9, can_pause=can(True), trials=trials) == PAUSE  # b and c have not arrived
    assert core.result("b", 1, 0.3, can_pause=can(True), trials=trials) == PAUSE
    trials.st.update(a=PAUSED, b=PAUSED)
    assert core.choose(trials) is None and trials.stopped == []  # the rung waits for c, which runs
    trials.st["c"] = ERROR
    core.drop("c", trials)  # c failed: the rung no longer waits for it and is decided
    assert trials.stopped == ["b"]  # 0.3 + 2ζ(0) = 0.7 < 0.9
    assert core.choose(trials) == "a"  # released
    assert core.engine.status("c") == "lost" and core.engine.status("b") == "stopped"


def test_synchronous_iise_resumes_a_trial_the_framework_paused_behind_its_back() -> None:
    """Ray paused b before it reached the rung; a and c wait there for it. It stalled (every trial paused, none
    released); now the scheduler runs b again, b arrives, the rung is decided (issue 35)."""
    trials = Statuses(a=RUNNING, b=RUNNING, c=RUNNING)
    core = added(iise_core(), trials)
    trials.st["b"] = PAUSED  # the framework's pause, not the scheduler's
    assert core.result("a", 1, 0.9, can_pause=can(True), trials=trials) == PAUSE
    trials.st["a"] = PAUSED
    assert core.result("c", 1, 0.3, can_pause=can(True), trials=trials) == PAUSE
    trials.st["c"] = PAUSED
    assert core.choose(trials) == "b"  # the only trial that can move: the one the rung waits for
    trials.st["b"] = RUNNING
    core.result("b", 1, 0.85, can_pause=can(True), trials=trials)  # the last arrives: the rung is decided
    assert trials.stopped == ["c"] and core.engine.status("c") == "stopped"


_STOP_ORDER = """
import sys
sys.path.insert(0, {tests!r})
from test_ray_core import PAUSED, RUNNING, Statuses, added, can, iise_core
names = [f"trial_{{i}}" for i in range(12)]
trials = Statuses(**{{k: RUNNING for k in names}})
core = added(iise_core(), trials)
for i, k in enumerate(names[:-1]):
    core.result(k, 1, 0.9 if i == 0 else 0.1, can_pause=can(True), trials=trials)
    trials.st[k] = PAUSED
core.result(names[-1], 1, 0.1, can_pause=can(True), trials=trials)  # the last arrives: the rung is decided
print(",".join(trials.stopped))
"""


def test_synchronous_iise_stops_a_rungs_losers_in_the_same_order_in_every_process() -> None:
    """The losers of a rung are stopped in registration order, whatever the hash seed (they were once stopped in a
    set's order, which changes between processes)."""
    code = _STOP_ORDER.format(tests=str(Path(__file__).resolve().parent))
    orders = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
        ).stdout.strip()
        for seed in (0, 1, 2, 3)
    }  # fmt: skip
    assert orders == {",".join(f"trial_{i}" for i in range(1, 11))}


def test_synchronous_iise_refuses_to_pause_a_trial_without_a_checkpoint() -> None:
    trials = Statuses(a=RUNNING, b=RUNNING)
    core = added(iise_core(), trials)
    with pytest.raises(RuntimeError, match="without a checkpoint"):
        core.result("a", 1, 0.9, can_pause=can(False), trials=trials)


def test_asynchronous_iise_stops_against_the_values_so_far_and_never_pauses() -> None:
    trials = Statuses(a=RUNNING, b=RUNNING)
    core = added(iise_core(synchronous=False), trials)
    assert core.result("a", 1, 0.9, can_pause=can(True), trials=trials) == CONTINUE
    assert core.result("b", 1, 0.3, can_pause=can(True), trials=trials) == STOP  # 0.3 + 2ζ(0) < 0.9
    assert core.describe("acc").startswith("Test (asynchronous IISE, 0 paused)")


QUALITY = {"t0": 0.9, "t1": 0.85, "t2": 0.5, "t3": 0.3, "t4": 0.88, "t5": 0.1, "t6": 0.7}


def run(core: RungCore, trials: Statuses, epochs: dict[str, int], steps: int, workers: int = 2) -> list:
    """What Tune does with two workers: fill them with `choose`, report one epoch of each running trial, and on
    STOP end the trial (`complete`, `drop`, `after_finish`). The log of every choice and decision."""
    log: list = []
    for _ in range(steps):
        while sum(s == RUNNING for s in trials.st.values()) < workers:
            key = core.choose(trials)
            if key is None:
                break
            trials.st[key] = RUNNING
            log.append(("run", key))
        for key in [k for k, s in trials.st.items() if s == RUNNING]:
            epochs[key] += 1
            e, v = epochs[key], QUALITY[key] * (1 - 0.2 / epochs[key])
            d = core.result(key, e, v, can_pause=can(True), trials=trials)
            log.append((key, e, d))
            if d == STOP:
                trials.st[key] = TERMINATED
                core.complete(key, e, v)
                core.drop(key, trials)
                core.after_finish(trials)
            elif d == PAUSE:
                trials.st[key] = PAUSED
    return log


@pytest.mark.parametrize("make", [race_core, iise_core], ids=["race", "iise"])
def test_the_saved_state_holds_everything_the_core_decides_with(make) -> None:
    """Six steps on one core; then every trial re-added (as Tune does on restore) to that core and to a fresh core
    given its saved state; the rest of the experiment on both: the same choices, the same decisions, the same stops
    and the same final state. (The running trials stay running: Tune would restart them PENDING, and the fresh core
    would start them in Tune's order, where the first one starts them after its trials never started.)"""
    trials = Statuses(**dict.fromkeys(QUALITY, PENDING))
    core, epochs = added(make(), trials), dict.fromkeys(QUALITY, 0)
    run(core, trials, epochs, 6)
    restored = make()
    restored.set_state(copy.deepcopy(core.get_state()))
    twin, twin_epochs, before = Statuses(**trials.st), dict(epochs), len(trials.stopped)
    for c, t in ((core, trials), (restored, twin)):
        for key, status in t.st.items():
            c.add(key, {"name": key}, ended=status in (TERMINATED, ERROR), max_resource=None)
    log = run(core, trials, epochs, 60)
    assert log == run(restored, twin, twin_epochs, 60)
    assert {PAUSE, STOP} <= {entry[2] for entry in log if len(entry) == 3}
    assert trials.stopped[before:] == twin.stopped
    assert all(s == TERMINATED for s in trials.st.values())  # the experiment ended
    assert core.get_state() == restored.get_state() and core.certificate() == restored.certificate()


@pytest.mark.parametrize(
    ("bad", "name"), [({"order": "bogus"}, "order"), ({"delta": 1.5}, "delta"), ({"n_trials": 0}, "n_trials")]
)
def test_every_setting_is_checked_when_the_scheduler_is_built(bad, name) -> None:
    """Not only once the engine exists (with an inferred ladder: at the first finished trial, hours later)."""
    with pytest.raises(ValueError, match=name):
        settings(**bad)


@pytest.mark.parametrize("make", [race_core, iise_core], ids=["race", "iise"])
def test_trials_start_in_a_seeded_random_order_that_survives_a_restore(make) -> None:
    """Trials not started start in a random order drawn with `seed` (not the framework's order of addition): the
    same for the same seed, another for another seed; after a restore (the saved state, every trial re-added as Tune
    does, then two new trials) the restored core starts the rest in the order the original goes on in."""
    names = [f"t{i}" for i in range(8)]

    def start_order(core: RungCore, trials: Statuses, n: int) -> list[str]:
        out = []
        for _ in range(n):
            key = core.choose(trials)
            assert key is not None and trials.st[key] == PENDING
            trials.st[key] = RUNNING
            out.append(key)
        return out

    orders = {}
    for seed in (0, 0, 1):
        trials = Statuses(**dict.fromkeys(names, PENDING))
        orders.setdefault(seed, []).append(start_order(added(make(seed=seed), trials), trials, 8))
    assert orders[0][0] == orders[0][1] and sorted(orders[0][0]) == names
    assert orders[0][0] != names and orders[1][0] != orders[0][0]

    trials = Statuses(**dict.fromkeys(names, PENDING))
    core = added(make(), trials)
    first = start_order(core, trials, 3)
    restored = make()
    restored.set_state(copy.deepcopy(core.get_state()))
    twin = Statuses(**trials.st)
    for c, t in ((core, trials), (restored, twin)):
        for key in ("n0", "n1"):
            t.st[key] = PENDING
        for key in t.st:
            c.add(key, {"name": key}, ended=False, max_resource=None)
    rest = start_order(core, trials, 7)
    assert rest == start_order(restored, twin, 7) and sorted(first + rest) == sorted([*names, "n0", "n1"])


def test_trials_held_back_as_paused_start_before_those_already_queued() -> None:
    """The Ray adapter holds trials not started as PAUSED and releases them through choose (Tune then queues them as
    PENDING): among trials not started, a held one is chosen, in the seeded order, before one already queued; a trial
    paused at a rung is not one of them."""
    trials = Statuses(a=PAUSED, b=PAUSED, c=PENDING, d=RUNNING)
    core = added(race_core(), trials)
    assert core.choose(trials) in ("a", "b") and core.waiting_to_start("a", trials)
    assert not core.waiting_to_start("d", trials)
    held = sorted("ab", key=lambda k: core._start_key[k])
    assert core.choose(trials) == held[0]
    trials.st[held[0]] = PENDING  # Tune queued it
    assert core.choose(trials) == held[1]
    trials.st[held[1]] = RUNNING
    assert core.choose(trials) == min(("c", held[0]), key=lambda k: core._start_key[k])
