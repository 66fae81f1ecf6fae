"""MFSampler() / MFPruner() with no arguments: the racing rule on ordinary and resumable Optuna objectives."""

from __future__ import annotations

import collections
import math
import multiprocessing as mp
import warnings
from pathlib import Path

import pytest

optuna = pytest.importorskip("optuna", reason="the 'optuna' extra is not installed")

from mf_sched.integrations.optuna import MFPruner, MFSampler, finish, train_to  # noqa: E402
from optuna.testing.pytest_samplers import BasicSamplerTestCase  # noqa: E402
from optuna.trial import TrialState  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)
QUALITY = {"a": 0.55, "b": 0.62, "c": 0.90, "d": 0.70, "e": 0.40, "f": 0.80}


def curve(q: float, epoch: int) -> float:
    """An accuracy that climbs towards q: within ~0.1 of it after 3 epochs (the shipped prior covers that)."""
    return q * (1 - 0.15 * math.exp(-(epoch - 1) / 3))


def ordinary(trial: optuna.Trial) -> float:
    """An objective written as Optuna's docs write pruning examples: nothing mf-sched-specific."""
    name = trial.suggest_categorical("config", sorted(QUALITY))
    acc = 0.0
    for epoch in range(1, 28):
        acc = curve(QUALITY[name], epoch)
        trial.report(acc, epoch)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return acc


def pruned_on(choices: list[float], epochs: int = 9, crash_every: int | None = None):
    """An ordinary pruning objective over ``curve``: ``q`` among ``choices``, one report per epoch; with
    ``crash_every=k``, trials whose number is 3 mod k raise RuntimeError before training."""

    def obj(trial: optuna.Trial) -> float:
        q = trial.suggest_categorical("q", choices)
        if crash_every is not None and trial.number % crash_every == 3:
            raise RuntimeError("crashed")
        acc = 0.0
        for epoch in range(1, epochs + 1):
            acc = curve(q, epoch)
            trial.report(acc, epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return acc

    return obj


def assert_cached_race_is_fresh(sampler: MFSampler, study: optuna.Study, cache, n_arms: int) -> None:
    """The race rebuilt through ``cache`` (parsed finished trials kept between calls) equals a fresh rebuild: the
    same engine state, busy arms, ended trials and failures."""
    import json

    from mf_sched.integrations._optuna_race import race_view

    trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
    lad, off = sampler.study_ladder(study, trials)
    kw = dict(ladder=lad, offset=off, sign=1.0, delta=0.05, sigma=None, race_bias=None, n_arms=n_arms,
              arm_of=sampler.arm_of)  # fmt: skip
    fresh = race_view(trials, **kw)
    cached = race_view(trials, cache=cache, **kw)
    assert json.dumps(fresh.engine.state_dict(), sort_keys=True) == json.dumps(
        cached.engine.state_dict(), sort_keys=True
    )
    assert (fresh.busy, fresh.ended, fresh.failures) == (cached.busy, cached.ended, cached.failures)


class TestZeroArgumentSampler(BasicSamplerTestCase):
    """Optuna's public sampler suite with MFSampler() — no ladder, no space, no ζ given."""

    @pytest.fixture(params=[pytest.param(lambda: MFSampler(), id="MFSampler()")])
    def sampler(self, request):  # type: ignore[override]
        return request.param


@pytest.mark.parametrize("storage", ["memory", "sqlite"])
def test_zero_argument_forms_run_an_ordinary_objective(tmp_path: Path, storage: str) -> None:
    url = None if storage == "memory" else f"sqlite:///{tmp_path / 'z.db'}"
    sampler = MFSampler()
    study = optuna.create_study(storage=url, direction="maximize", sampler=sampler, pruner=MFPruner())
    study.optimize(ordinary, n_trials=50)
    # the race is over once every configuration is stopped or trained to the top: the study stopped by itself
    assert len(study.trials) < 50
    rec = sampler.recommendation(study)
    assert rec.done and rec.params == {"config": "c"} and rec.rung == 3 and rec.details["epsilon"] is not None
    assert study.best_trial.params == {"config": "c"}
    assert all(t.last_step == 27 for t in study.trials if t.state == TrialState.COMPLETE)
    assert rec.resources_spent <= rec.full_fidelity_resources
    assert "curve bound 'unit'" in rec.details["bias_source"]
    # while configurations wait to start, a trial not among the best third at a rung is paused (mf:paused) and
    # its configuration runs again later only if it can still win; "e" (0.40) cannot catch up with "c" (0.90)
    # once "c" has completed
    first_c = min(t.number for t in study.trials if t.state == TrialState.COMPLETE and t.params["config"] == "c")
    for t in study.trials:
        if t.params["config"] == "e" and t.number > first_c:
            assert t.state == TrialState.PRUNED and t.last_step <= 9
        if t.system_attrs.get("mf:paused"):
            assert t.state == TrialState.PRUNED and t.last_step in (1, 3, 9)


def test_seeded_race_prunes_the_clearly_worse() -> None:
    sampler = MFSampler(seed=1)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    study.optimize(ordinary, n_trials=50)
    order = [t.params["config"] for t in study.trials]
    assert order.index("c") < order.index("e")
    states = {t.params["config"]: t.state for t in study.trials}
    assert states["e"] == TrialState.PRUNED and states["c"] == TrialState.COMPLETE
    assert sampler.recommendation(study).resources_spent < 6 * 27


def test_pruner_alone_is_asha_plus_the_racing_cut() -> None:
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=3), pruner=MFPruner())
    study.optimize(ordinary, n_trials=30)
    assert study.best_value == pytest.approx(curve(max(QUALITY.values()), 27))
    seen: dict[int, list[float]] = {1: [], 3: [], 9: []}
    for t in study.trials:  # trials run one after another: the values recorded at a rung are the earlier trials'
        for r in (1, 3, 9):
            if r in t.intermediate_values:
                seen[r].append(t.intermediate_values[r])
        if t.state == TrialState.PRUNED:
            r = t.last_step
            assert r in (1, 3, 9)
            vals = sorted(seen[r], reverse=True)
            keep = max(1, len(vals) // 3)
            paused = bool(t.system_attrs.get("mf:paused"))
            below = t.intermediate_values[r] < vals[keep - 1]
            # ASHA's rule pauses only below its cut; every other prune is the racing cut's stop (which also stops a
            # run below ASHA's cut when the bound says it cannot win: a stop outranks a pause)
            assert not paused or below
            if not paused:
                assert "stopped at rung" in t.user_attrs["race:reason"]


def test_pruner_alone_best_first_races_every_trial_against_the_best_completed_one() -> None:
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=3),
                                pruner=MFPruner(schedule="best-first", bound="zeta+"))  # fmt: skip
    study.optimize(ordinary, n_trials=30)
    best_q = max(QUALITY.values())
    assert study.best_value == pytest.approx(curve(best_q, 27))
    first_c = min(t.number for t in study.trials if t.params["config"] == "c")
    for t in study.trials:
        name = t.params["config"]
        if name in ("c", "d", "f"):  # within the prior's ζ⁺ (0.21 after a third of training) of the best
            assert t.state == TrialState.COMPLETE
        elif name in ("a", "e") and t.number > first_c:  # cannot catch up once "c" has completed
            assert t.state == TrialState.PRUNED and t.last_step <= 9
        # "b" is within the radius: its bound after 9 epochs (0.614 + 0.046 + 0.207) just exceeds 0.863


def test_losses_use_the_relative_prior_and_zero_based_steps() -> None:
    def loss_objective(trial: optuna.Trial) -> float:
        name = trial.suggest_categorical("config", sorted(QUALITY))
        loss = 0.0
        for step in range(27):  # 0-based steps: resource = step + 1
            loss = 3.0 * (1.05 - curve(QUALITY[name], step + 1))
            trial.report(loss, step)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return loss

    sampler = MFSampler()
    study = optuna.create_study(direction="minimize", sampler=sampler, pruner=MFPruner())
    study.optimize(loss_objective, n_trials=50)
    rec = sampler.recommendation(study)
    assert rec.params == {"config": "c"} and rec.done
    assert "curve bound 'loss'" in rec.details["bias_source"] and "a non-negative loss" in rec.details["bias_source"]
    pruned = [t for t in study.trials if t.state == TrialState.PRUNED]
    assert pruned and all(max(t.intermediate_values) in (0, 2, 8) for t in pruned)  # at the rungs 1, 3, 9


def resumable(trial: optuna.Trial) -> float:
    """A resumable objective: trains *to* train_to(trial) epochs from the configuration's checkpoint."""
    name = trial.suggest_categorical("config", sorted(QUALITY))
    start = CHECKPOINTS.get(name, 0)
    acc = 0.0
    for epoch in range(start + 1, train_to(trial) + 1):
        acc = curve(QUALITY[name], epoch)
        TRAINED[name] += 1
        trial.report(acc, epoch)
    CHECKPOINTS[name] = train_to(trial)
    return finish(trial, acc)


CHECKPOINTS: dict[str, int] = {}
TRAINED: collections.Counter = collections.Counter()


def test_resumable_objective_promotes_best_first_and_never_retrains() -> None:
    CHECKPOINTS.clear()
    TRAINED.clear()
    sampler = MFSampler(max_resource=27)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    study.optimize(resumable, n_trials=100)
    fids = [t.system_attrs["mf:fidelity"] for t in study.trials]
    # the first trial runs before the sampler knows the objective resumes (it goes to the top); then the anytime
    # schedule: a new configuration's first rung, or ASHA's promotion of the best at a rung
    assert fids[0] == 3 and fids[1] == 0
    names = [t.params["config"] for t in study.trials]
    started = {names[0]}
    for t in study.trials[1:]:
        n, f = t.params["config"], t.system_attrs["mf:fidelity"]
        if len(started) < len(QUALITY):  # ASHA's work: start a configuration, or promote one among the best
            assert (f == 0) == (n not in started)
        started.add(n)
    assert all(n <= 27 for n in TRAINED.values())  # no epoch is trained twice
    rec = sampler.recommendation(study)
    assert rec.done and rec.params == {"config": "c"}
    assert study.best_trial.params == {"config": "c"}
    low = [t for t in study.trials if t.system_attrs["mf:fidelity"] < 3]
    assert all(t.state == TrialState.PRUNED for t in low)  # best_trial is never a low-fidelity evaluation
    assert sum(TRAINED.values()) == pytest.approx(rec.resources_spent)
    assert rec.resources_spent < 0.8 * rec.full_fidelity_resources


def test_answer_before_the_race_ends_uses_every_rung() -> None:
    CHECKPOINTS.clear()
    TRAINED.clear()
    sampler = MFSampler(max_resource=27)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    study.optimize(resumable, n_trials=7)  # the first (top) trial, then rung 0 of the five others
    rec = sampler.recommendation(study)
    assert not rec.done and rec.reason == "in-progress"
    assert rec.params is not None and rec.rung is not None and "estimate" in rec.details


def test_sampler_without_pruner_warns_and_still_works() -> None:
    sampler = MFSampler()
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=optuna.pruners.NopPruner())
    with pytest.warns(
        UserWarning, match="without MFPruner: on an ordinary objective .no train_to... nothing is stopped"
    ):
        study.optimize(ordinary, n_trials=50)
    summary = [(t.number, t.params, t.state.name, dict(t.system_attrs)) for t in study.trials]
    assert len(study.trials) == len(QUALITY), summary
    assert sampler.recommendation(study).params == {"config": "c"}


def test_a_configuration_that_always_fails_is_dropped_not_retried_forever() -> None:
    sampler = MFSampler(max_failures=2)

    def flaky(trial: optuna.Trial) -> float:
        if trial.suggest_categorical("config", sorted(QUALITY)) == "d":
            raise RuntimeError("out of memory")
        return ordinary(trial)

    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    study.optimize(flaky, n_trials=200, catch=(RuntimeError,))
    failed = [t for t in study.trials if t.state == TrialState.FAIL]
    assert len(failed) == 2 and len(study.trials) < 200  # tried max_failures times, then the study stopped
    rec = sampler.recommendation(study)
    assert rec.params == {"config": "c"} and rec.details["uncovered"] == [3]  # "d" is arm 3, reported


def test_nan_results_count_as_failures() -> None:
    sampler = MFSampler(max_failures=2)

    def nan_for_e(trial: optuna.Trial) -> float:
        if trial.suggest_categorical("config", sorted(QUALITY)) == "e":
            trial.report(float("nan"), 1)
            return float("nan")
        return ordinary(trial)

    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study.optimize(nan_for_e, n_trials=200)
    assert sum(t.params["config"] == "e" for t in study.trials) == 2
    assert sampler.recommendation(study).params == {"config": "c"}


def test_keep_sampling_goes_on_with_the_fallback() -> None:
    sampler = MFSampler(keep_sampling=True, seed=0)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    study.optimize(ordinary, n_trials=10)
    assert len(study.trials) == 10
    assert sampler.recommendation(study).params == {"config": "c"}


def test_threads_share_the_race() -> None:
    space = {"q": [round(0.3 + 0.05 * i, 2) for i in range(12)]}
    obj = pruned_on(space["q"])
    sampler = MFSampler()
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    study.optimize(obj, n_trials=40, n_jobs=2)
    configs = collections.Counter(t.params["q"] for t in study.trials if not t.system_attrs.get("mf:surplus"))
    assert set(configs) == set(space["q"]) and max(configs.values()) <= 2  # at most a simultaneous duplicate
    assert sampler.recommendation(study).params == {"q": 0.85}


def _process(url: str, n: int) -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.load_study(study_name="race", storage=url, sampler=MFSampler(), pruner=MFPruner())
    study.optimize(ordinary, n_trials=n)


def test_two_processes_share_one_race(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'race.db'}"
    optuna.create_study(study_name="race", storage=url, direction="maximize")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_process, args=(url, 10)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(180)
        assert p.exitcode == 0
    study = optuna.load_study(study_name="race", storage=url)
    real = [t for t in study.trials if not t.system_attrs.get("mf:surplus")]
    configs = collections.Counter(t.params["config"] for t in real)
    # one trial per configuration, plus a re-run for each trial the schedule paused (ASHA) or the rule stopped and
    # gave back, plus at most two duplicates of two processes deciding at once
    again = sum(bool(t.system_attrs.get("mf:paused") or t.system_attrs.get("mf:pruned_rung") is not None)
                for t in real)  # fmt: skip
    assert set(configs) == set(QUALITY) and sum(configs.values()) <= len(QUALITY) + again + 2
    assert all(t.state != TrialState.RUNNING for t in study.trials)
    assert MFSampler().recommendation(study).params == {"config": "c"}


@pytest.mark.parametrize("module", ["mf_sched.integrations.optuna", "mf_sched.integrations._common"])
def test_adapter_docstring_examples(module: str) -> None:
    import doctest
    import importlib

    res = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.attempted > 0 and res.failed == 0


def test_cached_rebuild_equals_a_fresh_one() -> None:
    """MFSampler keeps the parsed finished trials between decisions; the engine must be the one a fresh rebuild
    from the storage gives (issue: overhead that stays flat)."""
    from mf_sched.integrations._optuna_race import TrialCache

    CHECKPOINTS.clear()
    TRAINED.clear()
    sampler = MFSampler(max_resource=27)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    cache = TrialCache()
    for _ in range(4):
        study.optimize(resumable, n_trials=5)
        assert_cached_race_is_fresh(sampler, study, cache, n_arms=len(QUALITY))
    assert cache.parsed  # finished trials were kept


def test_cached_rebuild_equals_a_fresh_one_when_trials_finish_out_of_order() -> None:
    from mf_sched.integrations._optuna_race import TrialCache

    space = {"q": [round(0.3 + 0.02 * i, 2) for i in range(30)]}
    obj = pruned_on(space["q"], crash_every=7)
    sampler = MFSampler()
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    cache = TrialCache()
    for _ in range(5):
        study.optimize(obj, n_trials=6, n_jobs=2, catch=(RuntimeError,))
        assert_cached_race_is_fresh(sampler, study, cache, n_arms=30)
    assert cache.prefix > 0


def test_a_stale_running_trial_does_not_hold_the_race_forever() -> None:
    """A worker killed mid-trial leaves its trial RUNNING (no heartbeat on this storage): after stale_after its
    configuration is evaluated again, with a warning, and the race ends."""
    import time

    sampler = MFSampler(stale_after=0.5)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    study.optimize(ordinary, n_trials=1)  # the space and the maximum resource are known
    dead = study.ask()  # a worker that takes a configuration and dies after two reports
    name = dead.suggest_categorical("config", sorted(QUALITY))
    dead.report(curve(QUALITY[name], 1), 1)
    dead.report(curve(QUALITY[name], 2), 2)
    time.sleep(0.6)
    with pytest.warns(UserWarning, match=f"trial {dead.number} has been RUNNING for longer than 0 s"):
        study.optimize(ordinary, n_trials=50)
    assert study._storage.get_trial(dead._trial_id).state == TrialState.RUNNING  # nothing else ended it
    rec = sampler.recommendation(study)
    assert rec.params == {"config": "c"} and rec.done
    again = [t for t in study.trials if t.params.get("config") == name and t.number != dead.number]
    assert again, "the stale trial's configuration was evaluated again"


def test_forgetting_finish_in_a_resumable_objective_warns() -> None:
    def no_finish(trial: optuna.Trial) -> float:
        name = trial.suggest_categorical("config", sorted(QUALITY))
        acc = 0.0
        for epoch in range(1, train_to(trial) + 1):
            acc = curve(QUALITY[name], epoch)
            trial.report(acc, epoch)
        return acc  # should be `return finish(trial, acc)`

    study = optuna.create_study(direction="maximize", sampler=MFSampler(max_resource=27), pruner=MFPruner())
    with pytest.warns(UserWarning, match="return finish"):
        study.optimize(no_finish, n_trials=4)


def test_pruner_decides_when_steps_skip_the_rungs() -> None:
    """An objective that reports every other epoch (2, 4, 6, …) is still raced at the rungs 1, 3, 9, 27: the
    value read at a rung is the last one reported at or before it."""

    def sparse(trial: optuna.Trial) -> float:
        name = trial.suggest_categorical("config", sorted(QUALITY))
        acc = 0.0
        for epoch in range(2, 29, 2):
            acc = curve(QUALITY[name], epoch)
            trial.report(acc, epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return acc

    sampler = MFSampler(seed=1)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner(max_resource=28))
    study.optimize(sparse, n_trials=50)
    pruned = [t for t in study.trials if t.state == TrialState.PRUNED]
    assert pruned and all(t.last_step in (4, 10) for t in pruned)  # just past rungs 3 and 9
    assert sampler.recommendation(study).params == {"config": "c"}
