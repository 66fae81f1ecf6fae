"""benchmarks.tune_sim: the simulated Ray Tune loop against hand-derived schedules and against real Ray 2.60."""

from __future__ import annotations

import doctest
import inspect
from collections import Counter
from typing import Any

import numpy as np
import pytest

pytest.importorskip("ray", reason="the 'ray' extra is not installed")

from mf_sched.integrations.ray import AsyncIISEScheduler, IISEScheduler, RungScheduler  # noqa: E402
from ray.tune.experiment import Trial  # noqa: E402
from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, HyperBandScheduler, TrialScheduler  # noqa: E402

import benchmarks.tune_sim as tune_sim  # noqa: E402
from benchmarks.tune_sim import Latencies, simulate  # noqa: E402
from mf_sched import FidelityLadder  # noqa: E402
from mf_sched.racing.engine import RungEliminator  # noqa: E402

LADDER = FidelityLadder(costs=[1, 3, 9], zeta=[0.2, 0.05, 0.0], resources=[1, 3, 9])
# the schedulers' rewrite makes racing the default rule: IISE's own elimination rule is then rule="iise"
HAS_RULE = "rule" in inspect.signature(RungScheduler.__init__).parameters
IISE = {"rule": "iise"} if HAS_RULE else {}


def flat(values: list[float], T: int) -> np.ndarray:
    """Curves constant over epochs: trial k reports values[k] after every epoch."""
    return np.repeat(np.asarray(values, dtype=float)[:, None], T, axis=1)


def starts(res: tune_sim.SimResult) -> list[int]:
    return [e[2] for e in res.events if e[1] in ("start", "reuse")]


# ----------------------------------------------------------------------------------- hand-derived schedules
def test_fifo_trains_every_epoch_and_accounts_time() -> None:
    # trials 0 and 1 run epochs 1..4 in [0, 4]; trial 2 starts when a CPU frees: [4, 8]
    res = simulate(FIFOScheduler(), flat([0.3, 0.9, 0.5], 4), workers=2, epoch_seconds=1.0)
    assert res.epochs.tolist() == [4, 4, 4] and res.total_epochs == 12
    assert res.makespan == 8.0 and res.busy_seconds == 12.0 and res.utilisation == 12 / 16
    assert res.reached_top == [0, 1, 2] and res.best() == 1
    assert starts(res) == [0, 1, 2] and not res.hang and not res.truncated
    assert all(t.status == Trial.TERMINATED for t in res.trials)
    assert res.choose_calls == res.steps  # one choose_trial_to_run per step, no idle step
    assert simulate(FIFOScheduler(), flat([0.3, 0.9, 0.5], 4), mode="min").best() == 0


def test_asha_one_worker_hand_derived() -> None:
    # rungs at 1 and 3 (max_t = 9 stops); cutoff = 66.7th percentile (linear) of the values recorded at the rung.
    # trial 0: nothing recorded -> on. trial 1: 0.8 ≥ 0.5 -> on. trial 2: cutoff(0.5, 0.8) = 0.7 > 0.3 -> STOP at 1.
    # trial 3: cutoff(0.3, 0.5, 0.8) = 0.6 ≤ 0.9 -> on; at 3, cutoff(0.5, 0.8) = 0.7 ≤ 0.9 -> on.
    sched = ASHAScheduler(max_t=9, grace_period=1, reduction_factor=3)
    res = simulate(sched, flat([0.5, 0.8, 0.3, 0.9], 9), workers=1)
    assert res.epochs.tolist() == [9, 9, 1, 9]
    assert res.reached_top == [0, 1, 3] and res.best() == 3
    decisions = [(e[2], e[3], e[4]) for e in res.events if e[1] == "result" and e[4] != "CONTINUE"]
    assert decisions == [(0, 9, "STOP"), (1, 9, "STOP"), (2, 1, "STOP"), (3, 9, "STOP")]


def test_asha_two_workers_hand_derived() -> None:
    # t=1: trial 0 records 0.5 at rung 1; trial 1 (0.4 < 0.5) stops; trial 2 starts at once.
    # t=2: trial 2 at rung 1: cutoff(0.5, 0.4) = 0.467 ≤ 0.9 -> on. t=9: trial 0 ends; trial 3 starts.
    # t=10: trial 3 at rung 1: cutoff(0.4, 0.5, 0.9) = 0.633 > 0.2 -> STOP; trial 2 ends (9 epochs from t=1).
    res = simulate(ASHAScheduler(max_t=9, grace_period=1, reduction_factor=3), flat([0.5, 0.4, 0.9, 0.2], 9))
    assert res.epochs.tolist() == [9, 1, 9, 1]
    assert res.makespan == 10.0 and res.reached_top == [0, 2] and res.best() == 2
    assert starts(res) == [0, 1, 2, 3]


HB_VALUES = [0.2, 0.95, 0.4, 0.1, 0.7, 0.3, 0.9, 0.5]


def test_hyperband_hand_derived() -> None:
    # max_t = 9, eta = 3: brackets filled in order of on_trial_add: s=0 (n=3, r=9): trials 0-2; s=1 (n=5, r=3):
    # trials 3-7, the best ceil(5/3) = 2 at epoch 3 (trials 6 and 4) go on to 9. Timeline on 2 workers:
    # [0, 9] trials 0, 1 (then PAUSED: trial 2 has not reached 9); [9, 18] trial 2 (its arrival finishes the
    # bracket: 0 and 1 are stopped), [9, 12] trial 3, [12, 15] 4, [15, 18] 5, [18, 21] 6 and 7 (7 arrives last:
    # halving, 3, 5 and 7 stopped); [21, 27] trials 4 and 6 resume from their epoch-3 checkpoints.
    res = simulate(HyperBandScheduler(max_t=9, reduction_factor=3), flat(HB_VALUES, 9), workers=2)
    assert res.epochs.tolist() == [9, 9, 9, 3, 9, 3, 9, 3] and res.total_epochs == 54
    assert res.reached_top == [0, 1, 2, 4, 6] and res.best() == 1
    assert res.makespan == 27.0 and not res.hang
    assert starts(res) == [0, 1, 2, 3, 4, 5, 6, 7, 4, 6]  # resumed trials queue behind the pending ones
    assert [t.pauses for t in res.trials] == [1, 1, 0, 1, 2, 1, 1, 0]


def test_hyperband_without_checkpoint_restarts_paused_trials() -> None:
    # as above, but trials 4 and 6 restart at epoch 1 (training_iteration reset): 9 more epochs each, [21, 30]
    res = simulate(HyperBandScheduler(max_t=9, reduction_factor=3), flat(HB_VALUES, 9), checkpoint=False)
    assert res.epochs.tolist() == [9, 9, 9, 3, 12, 3, 12, 3] and res.total_epochs == 60
    assert res.makespan == 30.0 and res.reached_top == [0, 1, 2, 4, 6]
    assert [t.scratch_restarts for t in res.trials] == [0, 0, 0, 0, 1, 0, 1, 0]


class PauseOnce(FIFOScheduler):
    """Pauses every trial once at epoch ``at``; FIFO's choice resumes it."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at, self.done, self.iterations = at, set(), []

    def on_trial_result(self, tune_controller: Any, trial: Trial, result: dict) -> str:
        self.iterations.append((result["epoch"], result["training_iteration"]))
        if result["epoch"] == self.at and trial.trial_id not in self.done:
            self.done.add(trial.trial_id)
            return TrialScheduler.PAUSE
        return TrialScheduler.CONTINUE


@pytest.mark.parametrize(
    "checkpoint, reported, restarts",
    [  # paused after epoch 5: resumes after 5, after 2 (its latest checkpoint), or from scratch
        (True, [1, 2, 3, 4, 5, 6], 0),
        ({2}, [1, 2, 3, 4, 5, 3, 4, 5, 6], 0),
        (False, [1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 6], 1),
    ],
)
def test_resume_from_the_latest_checkpoint(checkpoint: Any, reported: list[int], restarts: int) -> None:
    sched = PauseOnce(at=5)
    res = simulate(sched, np.linspace(0.1, 0.6, 6)[None, :], workers=1, checkpoint=checkpoint)
    rec = res.trials[0]
    assert [e for e, _ in sched.iterations] == reported
    assert all(e == i for e, i in sched.iterations)  # training_iteration restored with the epoch, or reset
    assert rec.epochs_trained == len(reported) and rec.pauses == 1 and rec.scratch_restarts == restarts
    assert rec.reached_top and rec.status == Trial.TERMINATED


class Recorder(FIFOScheduler):
    """FIFO that records the controller's callbacks; with ``meddle``, it pauses trial 0 and, at trial 1's first
    result, stops trials 0 (PAUSED) and 2 (PENDING)."""

    def __init__(self, meddle: bool = True) -> None:
        super().__init__()
        self.meddle = meddle
        self.calls: list[tuple[str, str, Any]] = []

    def on_trial_result(self, tune_controller: Any, trial: Trial, result: dict) -> str:
        self.calls.append(("result", trial.trial_id, result["epoch"]))
        if not self.meddle:
            return TrialScheduler.CONTINUE
        if trial.trial_id == "sim_00000":
            return TrialScheduler.PAUSE
        if trial.trial_id == "sim_00001" and result["epoch"] == 1:
            trials = tune_controller.get_trials()
            assert [t.status for t in trials] == [Trial.PAUSED, Trial.RUNNING, Trial.PENDING]
            tune_controller.stop_trial(trials[0])
            tune_controller.stop_trial(trials[2])
        return TrialScheduler.CONTINUE

    def on_trial_complete(self, tune_controller: Any, trial: Trial, result: dict) -> None:
        self.calls.append(("complete", trial.trial_id, (result["epoch"], result["done"])))

    def on_trial_remove(self, tune_controller: Any, trial: Trial) -> None:
        self.calls.append(("remove", trial.trial_id, trial.status))


def test_stop_trial_removes_paused_and_pending_trials_and_completes_running_ones() -> None:
    sched = Recorder()
    res = simulate(sched, flat([0.1, 0.2, 0.3], 3), workers=1)
    assert sched.calls == [
        ("result", "sim_00000", 1),
        ("result", "sim_00001", 1),
        ("remove", "sim_00000", Trial.PAUSED),
        ("remove", "sim_00002", Trial.PENDING),
        ("result", "sim_00001", 2),
        ("result", "sim_00001", 3),
        ("complete", "sim_00001", (3, True)),  # the function returned: Ray's duplicate `done` result
    ]
    assert res.epochs.tolist() == [1, 3, 0] and all(t.status == Trial.TERMINATED for t in res.trials)


def test_a_stopping_criterion_stops_without_asking_the_scheduler() -> None:
    sched = Recorder(meddle=False)
    res = simulate(sched, flat([0.1, 0.2, 0.3], 5), workers=3, time_attr="epoch", max_t=3)
    results = [c for c in sched.calls if c[0] == "result" and c[1] == "sim_00001"]
    assert [c[2] for c in results] == [1, 2]  # epoch 3 meets the criterion: on_trial_complete only
    assert ("complete", "sim_00001", (3, True)) in sched.calls
    assert res.epochs.tolist() == [3, 3, 3] and res.reached_top == []


class PauseAll(FIFOScheduler):
    """Pauses every trial at epoch 2 and never resumes one: Ray 2.60 then waits forever."""

    def on_trial_result(self, tune_controller: Any, trial: Trial, result: dict) -> str:
        return TrialScheduler.PAUSE if result["training_iteration"] == 2 else TrialScheduler.CONTINUE

    def choose_trial_to_run(self, tune_controller: Any) -> Trial | None:
        return next((t for t in tune_controller.get_trials() if t.status == Trial.PENDING), None)


def test_the_all_paused_hang_is_reported() -> None:
    res = simulate(PauseAll(), flat([0.1, 0.2, 0.3], 4), workers=2)
    assert res.hang and not res.truncated
    assert res.paused_at_end == [0, 1, 2] and res.epochs.tolist() == [2, 2, 2] and res.reached_top == []
    assert [e[2] for e in res.events if e[1] == "hang"] == [0, 1, 2]


def test_trials_are_added_lazily_beyond_max_pending_trials() -> None:
    res = simulate(FIFOScheduler(), flat([0.1] * 5, 2), workers=2, max_pending_trials=2)
    kinds = [(e[1], e[2]) for e in res.events if e[1] in ("add", "start")]
    assert kinds[:4] == [("add", 0), ("add", 1), ("start", 0), ("add", 2)]
    assert res.epochs.tolist() == [2] * 5
    full = simulate(FIFOScheduler(), flat([0.1] * 5, 2), workers=2)
    assert [e[1] for e in full.events[:5]] == ["add"] * 5  # Ray's default (200): all trials first


def test_iise_schedulers_follow_the_elimination_rule() -> None:
    values = [0.9, 0.85, 0.45, 0.3]
    res = simulate(IISEScheduler(LADDER, sigma=1e-4, n_trials=4, **IISE), flat(values, 9), workers=2)
    offline = RungEliminator(LADDER, sigma=1e-4, n_arms=4)
    for k, v in enumerate(values):
        offline.report(str(k), 0, v)
    out = {int(k) for k in offline.decide_rung(0)}
    assert out == {2, 3}  # 0.9 − v ≥ 2ζ(0) = 0.4 (+ radii)
    assert res.epochs.tolist() == [9, 9, 1, 1] and res.best() == 0 and not res.hang
    assert sum(t.pauses for t in res.trials) >= 1  # synchronous: trials wait at the rung
    # asynchronous, one worker: each trial is decided at rung 0 against the trials that reported there before it (they
    # start in the scheduler's seeded order): 0.45 only loses to 0.9, 0.3 to 0.9 and to 0.85 (by ≥ 2ζ(0) + radii)
    late = 0
    for seed in range(4):
        res = simulate(AsyncIISEScheduler(LADDER, sigma=1e-4, seed=seed, **IISE), flat(values, 9), workers=1)
        order = starts(res)
        after = {k: set(order[: order.index(k)]) for k in range(4)}
        expected = [9, 9, 1 if 0 in after[2] else 9, 1 if after[3] & {0, 1} else 9]
        assert res.epochs.tolist() == expected and sum(t.pauses for t in res.trials) == 0 and res.best() == 0
        late += expected.count(1)
    assert late >= 2  # the seeds put poor trials after good ones


def test_iise_refuses_a_pause_without_checkpoint_like_tuner_fit() -> None:
    # at the first pause, before a resume would restart the trial from scratch
    with pytest.raises(RuntimeError, match="reported rung 0 .* without a checkpoint"):
        simulate(IISEScheduler(LADDER, sigma=1e-4, **IISE), flat([0.9, 0.85, 0.45, 0.3], 9), checkpoint=False)


# Measured on Ray 2.60 (2 CPUs, Tuner.fit, function trainable reporting a checkpoint every epoch, 0.2 s epochs):
# the order trials started (or were resumed) and completed under HyperBand(time_attr="epoch", max_t=9, eta=3).
MEASURED = np.array([[(i * 7 % 9) / 10 + e / 100 for e in range(1, 10)] for i in range(9)])


@pytest.mark.parametrize(
    "reuse, started, completed",
    [
        (False, [0, 1, 2, 3, 4, 5, 6, 7, 8, 5, 6], [0, 1, 2, 4, 3, 7, 8, 5, 6]),
        (True, [0, 1, 3, 4, 8, 5, 6, 7, 2, 5, 6], [8, 4, 3, 7, 0, 1, 2, 5, 6]),
    ],
)
def test_hyperband_order_matches_real_ray(reuse: bool, started: list[int], completed: list[int]) -> None:
    sched = HyperBandScheduler(time_attr="epoch", max_t=9, reduction_factor=3)
    res = simulate(sched, MEASURED, epoch_seconds=0.2, reuse_actors=reuse)
    assert starts(res) == started
    assert [e[2] for e in res.events if e[1] in ("complete", "remove")] == completed


def test_deterministic_and_seeded() -> None:
    curves = np.random.default_rng(3).uniform(size=(12, 9))

    def run(seed: int, **kw: Any) -> tune_sim.SimResult:
        return simulate(ASHAScheduler(max_t=9, reduction_factor=3, brackets=3), curves, seed=seed, **kw)

    state = np.random.get_state()  # noqa: NPY002
    a, b = run(0), run(0)
    assert a.events == b.events and a.epochs.tolist() == b.epochs.tolist()
    assert np.random.get_state()[1].tolist() == state[1].tolist()  # noqa: NPY002  # global state restored
    assert len({tuple(run(s).epochs) for s in range(6)}) > 1  # brackets are drawn from the seed
    order = [3, 1, 0, 2] + list(range(4, 12))
    res = simulate(FIFOScheduler(), curves, trial_order=order, workers=1)
    assert [t.position for t in res.trials][:4] == [2, 1, 3, 0]  # records are indexed by row of curves
    assert starts(res)[:4] == order[:4]
    slow = simulate(FIFOScheduler(), curves, epoch_seconds=np.arange(1, 13), workers=1)
    assert slow.makespan == 9 * np.arange(1, 13).sum()
    lat = simulate(FIFOScheduler(), curves[:1], workers=1, latencies=Latencies(start=2.0, report=0.5))
    assert lat.makespan == 2.0 + 9 * 1.5


def test_nan_curves_and_bad_arguments() -> None:
    curves = flat([0.5, np.nan, 0.7], 3)
    res = simulate(ASHAScheduler(max_t=3, reduction_factor=3), curves, workers=1)
    assert np.isnan(res.trials[1].last_value) and res.best() == 2
    with pytest.raises(ValueError, match="curves must be a K × T array"):
        simulate(FIFOScheduler(), [1.0, 2.0])
    with pytest.raises(ValueError, match="workers = 0 must be an integer ≥ 1"):
        simulate(FIFOScheduler(), curves, workers=0)
    with pytest.raises(ValueError, match="mode = 'up' is unknown"):
        simulate(FIFOScheduler(), curves, mode="up")
    with pytest.raises(ValueError, match="epoch_seconds has shape"):
        simulate(FIFOScheduler(), curves, epoch_seconds=[1.0, 2.0])
    with pytest.raises(ValueError, match="checkpoint epochs must lie in 1..3"):
        simulate(FIFOScheduler(), curves, checkpoint={0, 2})
    with pytest.raises(ValueError, match="trial_order must be a permutation"):
        simulate(FIFOScheduler(), curves, trial_order=[0, 0, 1])
    with pytest.raises(ValueError, match="time_attr = 'time' is unknown"):
        simulate(FIFOScheduler(), curves, time_attr="time")
    with pytest.raises(ValueError, match="Latencies.save = -1"):
        Latencies(save=-1)
    with pytest.raises(ValueError, match="reads metric 'loss'"):
        simulate(ASHAScheduler(metric="loss", mode="min"), curves)


def test_truncation() -> None:
    res = simulate(FIFOScheduler(), flat([0.1, 0.2], 5), max_steps=4)
    assert res.truncated and not res.hang and res.steps == 4


def test_docstring_examples() -> None:
    out = doctest.testmod(tune_sim, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert out.attempted >= 2 and out.failed == 0


# ------------------------------------------------------------------------------- agreement with real Ray
K, T = 9, 9
_rng = np.random.default_rng(11)
_q, _a = _rng.uniform(0.5, 0.9, K), _rng.uniform(0.1, 0.6, K)
AGREE_CURVES = _q[:, None] * (1 - _a[:, None] / np.arange(1, T + 1))
AGREE_SECONDS = _rng.uniform(0.08, 0.25, K)  # per trial: fewer exact ties than equal epochs

MAKERS = {
    "FIFO": FIFOScheduler,
    "ASHA": lambda: ASHAScheduler(time_attr="epoch", max_t=T, grace_period=1, reduction_factor=3),
    "HyperBand": lambda: HyperBandScheduler(time_attr="epoch", max_t=T, reduction_factor=3),
    "IISEScheduler": lambda: IISEScheduler(LADDER, time_attr="epoch", sigma=0.01, n_trials=K, **IISE),
    "AsyncIISEScheduler": lambda: AsyncIISEScheduler(LADDER, time_attr="epoch", sigma=0.01, n_trials=K, **IISE),
}
if HAS_RULE:  # the racing default: best-first promotion by pausing (order-dependent, like an asynchronous rule)
    MAKERS["IISEScheduler(race)"] = lambda: IISEScheduler(time_attr="epoch", max_t=T, sigma=0.01)
SYNCHRONOUS = {"FIFO", "HyperBand", "IISEScheduler"}


def outcome(res: tune_sim.SimResult) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return tuple(res.epochs.tolist()), tuple(res.reached_top)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, checkpoint, reuse",
    [(n, True, True) for n in MAKERS] + [("HyperBand", True, False), ("HyperBand", False, True)],
)
def test_agreement_with_real_ray(ray_session, name: str, checkpoint: bool, reuse: bool) -> None:
    """Per-trial epochs and the trials that reached T: exact for the synchronous schedulers (their decisions
    do not depend on the order of results); for the asynchronous ones, Ray's outcome is one the simulation
    produces when its timing is perturbed like Ray's (random actor start-up, ±30 % epoch durations)."""
    kw: dict[str, Any] = dict(epoch_seconds=AGREE_SECONDS, checkpoint=checkpoint, reuse_actors=reuse)
    real = tune_sim.run_tuner(MAKERS[name](), AGREE_CURVES, **kw)
    nominal = simulate(MAKERS[name](), AGREE_CURVES, **kw)
    perturbed = Counter(
        outcome(simulate(MAKERS[name](), AGREE_CURVES, latencies=tune_sim.RAY_LOCAL, jitter=0.3, seed=s, **kw))
        for s in range(40)
    )
    print(f"\n{name} checkpoint={checkpoint} reuse={reuse}: real {outcome(real)}, simulated {outcome(nominal)}, "
          f"perturbed outcomes {len(perturbed)}: {dict(perturbed)}")  # fmt: skip
    assert not real.hang and not nominal.hang
    if name in SYNCHRONOUS:
        assert outcome(real) == outcome(nominal)
        assert set(perturbed) == {outcome(nominal)}
    else:
        assert outcome(real) in perturbed.keys() | {outcome(nominal)}
    if checkpoint is False:
        assert sum(t.scratch_restarts for t in real.trials) == sum(t.scratch_restarts for t in nominal.trials) > 0


# ------------------------------------------------------------------------------- Syne Tune runner (own venv)
def test_syne_tune_runner_reads_and_validates_curves(tmp_path) -> None:
    import json

    from benchmarks.syne_tune_runner import load_curves

    curves = flat([0.5, 0.8, 0.3, 0.9], 9)
    np.savez(tmp_path / "c.npz", curves=curves)
    (tmp_path / "c.json").write_text(json.dumps({"curves": [[0.1, None], [0.2, 0.3]]}))
    assert np.array_equal(load_curves(tmp_path / "c.npz"), curves)
    assert np.isnan(load_curves(tmp_path / "c.json")[0, 1])
    np.savez(tmp_path / "bad.npz", values=curves)
    with pytest.raises(ValueError, match="no array named 'curves'"):
        load_curves(tmp_path / "bad.npz")
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="must hold a JSON object"):
        load_curves(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="accepted formats"):
        load_curves(tmp_path / "c.csv")


def test_syne_tune_asha_on_the_hand_derived_case(tmp_path, monkeypatch) -> None:
    pytest.importorskip("syne_tune", reason="Syne Tune lives in its own environment (.venv-syne)")
    from benchmarks.syne_tune_runner import run_one

    monkeypatch.setenv("SYNETUNE_FOLDER", str(tmp_path))
    out = run_one(flat([0.5, 0.8, 0.3, 0.9], 9), "ASHA", workers=1, epoch_seconds=1.0, mode="max",
                  grace_period=1, reduction_factor=3, seed=0)  # fmt: skip
    assert out["epochs"] == [9, 9, 1, 9] and out["reached_top"] == [0, 1, 3] and out["best"] == 3
