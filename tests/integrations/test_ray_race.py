"""The default Ray scheduler — IISEScheduler() racing best-first — on stub trials, and zero-argument end to end."""

from __future__ import annotations

import collections
import math
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the 'ray' extra is not installed")

from mf_sched.integrations.ray import AsyncIISEScheduler, IISEScheduler, SchedulerStateCallback  # noqa: E402
from ray import tune  # noqa: E402
from ray.tune.experiment import Trial  # noqa: E402
from ray.tune.schedulers import TrialScheduler  # noqa: E402

QUALITY = [0.9, 0.85, 0.5, 0.3, 0.88, 0.1, 0.6, 0.2]


def curve(q: float, epoch: int) -> float:
    return q * (1 - 0.15 * math.exp(-(epoch - 1) / 3))


class Controller:
    """Enough of Tune's controller for a scheduler: trials and stop_trial (PAUSED/PENDING -> TERMINATED)."""

    def __init__(self, trials: list[Trial]) -> None:
        self.trials = trials
        self.stopped: list[str] = []

    def get_trials(self) -> list[Trial]:
        return self.trials

    def stop_trial(self, trial: Trial) -> None:
        trial.set_status(Trial.TERMINATED)
        self.stopped.append(trial.trial_id)


def run(sched, *, workers: int = 2, max_t: int = 27, checkpoint: bool = True, qualities=QUALITY, nan=()):
    """Tune's loop with `workers` workers, one epoch per step; a resumed trial continues from its checkpoint
    (or restarts at epoch 1 without one). Returns (epochs trained per trial, order of (trial, epoch), trials)."""
    trials = [Trial("__fake", trial_id=f"t{i}", stub=True, config={"q": q},
                    stopping_criterion={"training_iteration": max_t}) for i, q in enumerate(qualities)]  # fmt: skip
    ctl = Controller(trials)
    sched.set_search_properties("acc", "max")
    for t in trials:
        sched.on_trial_add(ctl, t)
    at = {t.trial_id: 0 for t in trials}
    trained: collections.Counter = collections.Counter()
    order: list[tuple[str, int]] = []
    for _ in range(10_000):
        running = [t for t in trials if t.status == Trial.RUNNING]
        while len(running) < workers:
            nxt = sched.choose_trial_to_run(ctl)
            if nxt is None:
                break
            if nxt.status == Trial.PAUSED and not checkpoint:
                at[nxt.trial_id] = 0  # restarted from scratch
            nxt.set_status(Trial.RUNNING)
            running.append(nxt)
        if not running:
            assert not any(t.status == Trial.PAUSED for t in trials), "every live trial is paused: Ray would hang"
            break
        for t in running:
            tid = t.trial_id
            at[tid] += 1
            e = at[tid]
            trained[tid] += 1
            order.append((tid, e))
            acc = float("nan") if tid in nan else curve(t.config["q"], e)
            res = {"training_iteration": e, "acc": acc}
            if checkpoint:
                res["should_checkpoint"] = True
            act = sched.on_trial_result(ctl, t, res)
            if act == TrialScheduler.CONTINUE and e >= max_t:
                act = TrialScheduler.STOP  # Tune's stop criterion
            if act == TrialScheduler.STOP:
                t.set_status(Trial.TERMINATED)
                sched.on_trial_complete(ctl, t, res)
            elif act == TrialScheduler.PAUSE:
                t.set_status(Trial.PAUSED)
    return trained, order, trials


def asha_promotions_only(order: list[tuple[str, int]], rungs=(1, 3, 9), eta: int = 3) -> None:
    """Until every trial has started, a trial goes past a rung only while its value there is among the best
    max(1, n // eta) of the n values recorded at that rung (ASHA's rule, checked against the curve): when it
    reported there (it went on at once), or when it went on (promoted after a pause)."""
    q = {f"t{i}": x for i, x in enumerate(QUALITY)}
    at_rung: dict[int, list[float]] = {r: [] for r in rungs}
    started: set[str] = set()

    def among_best(tid: str, rung: int) -> bool:
        vals = sorted(at_rung[rung], reverse=True)
        return curve(q[tid], rung) >= vals[max(1, len(vals) // eta) - 1] - 1e-12

    top_when_reported: set[tuple[str, int]] = set()
    for tid, e in order:
        started.add(tid)
        if len(started) == len(QUALITY):
            return
        if e in at_rung:
            at_rung[e].append(curve(q[tid], e))
            if among_best(tid, e):
                top_when_reported.add((tid, e))
        prev = max((r for r in rungs if r < e), default=None)
        if prev is not None and e == prev + 1:  # the trial went on past rung `prev`
            assert (tid, prev) in top_when_reported or among_best(tid, prev), (tid, e, at_rung[prev])


@pytest.mark.parametrize("seed", [None, 1, 2])
def test_zero_argument_scheduler_is_asha_then_races_to_a_certificate(seed: int | None) -> None:
    sched = IISEScheduler() if seed is None else IISEScheduler(seed=seed)
    trained, order, trials = run(sched)
    assert sched.ladder.resources == (1.0, 3.0, 9.0, 27.0)  # from the trials' stopping criterion
    assert all(t.status == Trial.TERMINATED for t in trials)
    asha_promotions_only(order)
    assert {tid for tid, e in order if e == 1} == {t.trial_id for t in trials}  # every trial's first rung
    assert trained["t0"] == 27 and sched.best_config() == {"q": 0.9}
    assert all(n <= 27 for n in trained.values())  # resumed from checkpoints: no epoch twice
    # far below a good finished trial (q >= 0.85): once one finished, a trial with q <= 0.5 that had not yet
    # passed rung 9 is stopped by the race at a rung, never trained past 9 (before, nothing can stop it)
    first_good = next(i for i, (tid, e) in enumerate(order) if e == 27 and QUALITY[int(tid[1:])] >= 0.85)
    raced = [f"t{i}" for i, q in enumerate(QUALITY) if q <= 0.5
             if max((e for k, e in order[:first_good] if k == f"t{i}"), default=0) < 9]  # fmt: skip
    assert raced and all(trained[tid] <= 9 for tid in raced)
    assert sum(trained.values()) < 0.75 * 27 * len(QUALITY)
    cert = sched.certificate()
    assert cert.rule == "race" and "curve bound 'unit'" in cert.bias_source and cert.key == "t0"
    assert cert.epsilon is not None  # every trial stopped or finished: certified


def test_best_first_schedule_starts_every_trial_first() -> None:
    sched = IISEScheduler(schedule="best-first")
    trained, order, trials = run(sched)
    first_past = next(i for i, (_, e) in enumerate(order) if e > 1)
    assert {tid for tid, e in order[:first_past] if e == 1} == {t.trial_id for t in trials}
    assert sched.best_config() == {"q": 0.9} and all(n <= 27 for n in trained.values())


def test_choose_trial_to_run_has_no_side_effects() -> None:
    sched = IISEScheduler(max_t=27, metric="acc", mode="max")
    trials = [Trial("__fake", trial_id=f"t{i}", stub=True, config={}) for i in range(3)]
    ctl = Controller(trials)
    for t in trials:
        sched.on_trial_add(ctl, t)
        t.set_status(Trial.RUNNING)
    for t, acc in zip(trials, (0.9, 0.5, 0.7)):
        assert sched.on_trial_result(ctl, t, {"training_iteration": 1, "acc": acc, "should_checkpoint": True}) in (
            TrialScheduler.PAUSE,
            TrialScheduler.CONTINUE,
        )
        t.set_status(Trial.PAUSED)
    before = [t.status for t in trials]
    picks = {sched.choose_trial_to_run(ctl).trial_id for _ in range(5)}
    # ASHA promotes the best of the three paused at rung 0 (t0, 0.9); asking again changes nothing
    assert picks == {"t0"} and [t.status for t in trials] == before and not ctl.stopped


def test_without_checkpoints_trials_are_never_paused() -> None:
    sched = IISEScheduler()
    trained, order, trials = run(sched, checkpoint=False)
    assert all(n <= 27 for n in trained.values())  # never paused, so never restarted from scratch
    assert trained["t0"] == 27 and sched.best_config() == {"q": 0.9}
    assert sum(trained.values()) < 27 * len(QUALITY)


def test_async_scheduler_never_pauses() -> None:
    sched = AsyncIISEScheduler()
    decide, actions = sched.on_trial_result, []

    def recorded(*args):
        actions.append(decide(*args))
        return actions[-1]

    sched.on_trial_result = recorded  # type: ignore[method-assign]
    trained, _, trials = run(sched, workers=3)
    assert all(t.status == Trial.TERMINATED for t in trials) and sched.best_config() == {"q": 0.9}
    assert actions and TrialScheduler.PAUSE not in actions


def test_nan_trial_is_stopped_and_uncovered() -> None:
    sched = IISEScheduler()
    trained, _, trials = run(sched, nan={"t3"})
    assert trained["t3"] == 1  # stopped at its first rung
    cert = sched.certificate()
    assert "t3" in cert.uncovered and cert.epsilon is not None and cert.key == "t0"


def test_ladder_from_the_first_completed_trial_and_state_round_trip() -> None:
    sched = IISEScheduler(metric="acc", mode="max")
    trials = [Trial("__fake", trial_id=f"t{i}", stub=True, config={"q": q}) for i, q in enumerate((0.9, 0.3))]
    ctl = Controller(trials)
    for t in trials:
        sched.on_trial_add(ctl, t)
        t.set_status(Trial.RUNNING)
    for e in range(1, 28):  # no stopping criterion: nothing is known until a trial completes
        assert sched.on_trial_result(ctl, trials[0], {"training_iteration": e, "acc": curve(0.9, e)}) == "CONTINUE"
    assert sched.engine is None
    sched.on_trial_complete(ctl, trials[0], {"training_iteration": 27, "acc": curve(0.9, 27)})
    assert sched.ladder.resources == (1.0, 3.0, 9.0, 27.0) and sched.engine.reached("t0") == 3
    assert sched.on_trial_result(ctl, trials[1], {"training_iteration": 1, "acc": 0.1}) == TrialScheduler.CONTINUE
    assert sched.on_trial_result(ctl, trials[1], {"training_iteration": 3, "acc": 0.2}) == TrialScheduler.STOP
    other = IISEScheduler(metric="acc", mode="max")
    other.set_state(SchedulerStateCallback(sched).get_state())
    assert other.certificate() == sched.certificate() and other.ladder == sched.ladder


def test_losses_get_the_relative_prior() -> None:
    sched = IISEScheduler()
    trials = [Trial("__fake", trial_id=f"t{i}", stub=True, config={}, stopping_criterion={"training_iteration": 9})
              for i in range(2)]  # fmt: skip
    ctl = Controller(trials)
    sched.set_search_properties("loss", "min")
    for t in trials:
        sched.on_trial_add(ctl, t)
    sched.on_trial_result(ctl, trials[0], {"training_iteration": 1, "loss": 2.3})
    sched.on_trial_result(ctl, trials[0], {"training_iteration": 2, "loss": 1.9})
    assert "curve bound 'loss'" in sched.engine.bias_source and sched.engine.curve_bound.form == "relative"


# ------------------------------------------------------------------------------ end to end, zero arguments
def replay_trainable(config: dict) -> None:
    """One epoch per report, logged as "q epoch" to config["log"]; resumes from its checkpoint. Faults on the
    configuration whose q is config["crash"] (raises at the start of epoch 1, before logging it: once if
    config["flag"] names a file, which it then creates, else always) or config["nan"] (reports NaN);
    config["checkpoint"] = False reports no checkpoint."""
    import json
    import tempfile

    q = config["q"]
    start = 0
    ckpt = tune.get_checkpoint()
    if ckpt is not None:
        with ckpt.as_directory() as d:
            start = json.loads((Path(d) / "s.json").read_text())["epoch"]
    for epoch in range(start + 1, config["max_t"] + 1):
        if q == config.get("crash") and epoch == 1:
            flag = config.get("flag")
            if flag is None or not Path(flag).exists():
                if flag is not None:
                    Path(flag).write_text("crashed once")
                raise RuntimeError(f"simulated crash of q = {q}")
        Path(config["log"]).open("a").write(f"{q} {epoch}\n")
        acc = float("nan") if q == config.get("nan") else curve(q, epoch)
        if not config.get("checkpoint", True):
            tune.report({"acc": acc})
            continue
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "s.json").write_text(json.dumps({"epoch": epoch}))
            tune.report({"acc": acc}, checkpoint=tune.Checkpoint.from_directory(d))


def epochs_trained(log: Path) -> list[tuple[float, int]]:
    """The (q, epoch) pairs replay_trainable logged, in order."""
    words = log.read_text().split() if log.exists() else []
    return [(float(q), int(e)) for q, e in zip(words[::2], words[1::2])]


def poor_ones_stop_early(pairs: list[tuple[float, int]], cheap: int = 3) -> set[float]:
    """The poorest configurations (q <= 0.3) in the epochs the workers logged, each asserted never to pass epoch
    `cheap`: ASHA's promotions (Algorithm 2: among the best third of three or more values at a rung) never take
    them up, and once a good configuration finishes the race stops them. (A middling one, q = 0.5, may be trained
    to the top when the bound learned from the first finished trials still lets it win: that depends on which
    trials finish first, so on timing.)"""
    poor = {q for q, _ in pairs if q <= 0.3}
    for q in poor:
        assert max(e for p, e in pairs if p == q) <= cheap, (q, pairs)
    return poor


@pytest.mark.parametrize("api", ["tuner", "tune.run"])
def test_zero_argument_scheduler_end_to_end(ray_session, tmp_path: Path, api: str) -> None:
    log = tmp_path / "epochs.log"
    space = {"q": tune.grid_search(QUALITY[:6]), "log": str(log), "max_t": 9}
    sched = IISEScheduler()
    if api == "tuner":
        tuner = tune.Tuner(
            replay_trainable, param_space=space,
            tune_config=tune.TuneConfig(metric="acc", mode="max", scheduler=sched, reuse_actors=True),
            run_config=tune.RunConfig(name="z", storage_path=str(tmp_path), verbose=0,
                                      stop={"training_iteration": 9}),
        )  # fmt: skip
        best = tuner.fit().get_best_result().config["q"]
    else:
        analysis = tune.run(
            replay_trainable, config=space, metric="acc", mode="max", scheduler=sched, stop={"training_iteration": 9},
            storage_path=str(tmp_path), name="z", verbose=0, reuse_actors=True,
        )  # fmt: skip
        best = analysis.best_config["q"]
    assert best == 0.9 and sched.best_config()["q"] == 0.9
    pairs = epochs_trained(log)
    assert len(pairs) == len(set(pairs))  # no epoch run twice
    assert len(pairs) < 6 * 9
    assert poor_ones_stop_early(pairs) == {0.3, 0.1}  # started, and neither passed 3 of 9 epochs
    counts = sched.certificate().counts  # stopped; or stopped, then uncovered when the learned bound widened
    assert counts["stopped"] + counts["lost"] >= 1
