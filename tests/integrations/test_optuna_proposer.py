"""MFSampler's proposer: on a space that is not a small grid the race's K arms are configurations that a model-based
proposer (TPESampler by default, any Optuna sampler) gives one at a time, and every trial that resumes or re-runs
an arm gets exactly its parameters (issue 23, "Candidates")."""

from __future__ import annotations

import collections
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

optuna = pytest.importorskip("optuna", reason="the 'optuna' extra is not installed")

from mf_sched.integrations._optuna_space import ProposedArms  # noqa: E402
from mf_sched.integrations.optuna import MFPruner, MFSampler, candidate_set, finish, train_to  # noqa: E402
from optuna.distributions import FloatDistribution, IntDistribution  # noqa: E402
from optuna.samplers import BaseSampler, RandomSampler, TPESampler  # noqa: E402
from optuna.trial import TrialState  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)
SPACE = {"lr": FloatDistribution(1e-4, 1e-1, log=True), "n": IntDistribution(1, 8)}


class Recording(BaseSampler):
    """A proposer that wraps ``base`` and records every value it gave, per trial number."""

    def __init__(self, base: BaseSampler) -> None:
        self.base = base
        self.values: dict[int, dict[str, Any]] = collections.defaultdict(dict)
        self.relative: set[int] = set()  # trials that got values from sample_relative (a joint proposal)
        self.reseeds = 0

    def infer_relative_search_space(self, study, trial):
        return self.base.infer_relative_search_space(study, trial)

    def sample_relative(self, study, trial, search_space):
        out = self.base.sample_relative(study, trial, search_space)
        if out:
            self.values[trial.number].update(out)
            self.relative.add(trial.number)
        return out

    def sample_independent(self, study, trial, param_name, param_distribution):
        v = self.base.sample_independent(study, trial, param_name, param_distribution)
        self.values[trial.number][param_name] = v
        return v

    def before_trial(self, study, trial):
        self.base.before_trial(study, trial)

    def after_trial(self, study, trial, state, values):
        self.base.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self.reseeds += 1
        self.base.reseed_rng()


def quality(lr: float, n: int) -> float:
    """An accuracy-like final value in [0.63, 0.9]: best at lr = 10^-2.5 and n = 5."""
    return 0.9 - 0.12 * (math.log10(lr) + 2.5) ** 2 - 0.01 * abs(n - 5)


def curve(q: float, epoch: int) -> float:
    return q * (1 - 0.15 * math.exp(-(epoch - 1) / 3))


def ordinary(trial: optuna.Trial) -> float:
    lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
    n = trial.suggest_int("n", 1, 8)
    acc = 0.0
    for epoch in range(1, 28):
        acc = curve(quality(lr, n), epoch)
        trial.report(acc, epoch)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return acc


def make_resumable(checkpoints: dict, trained: collections.Counter, who: str = ""):
    """A resumable objective: trains *to* train_to(trial) from the configuration's checkpoint (keyed by its
    parameters); records in user attrs where it resumed from and which worker ran it."""

    def obj(trial: optuna.Trial) -> float:
        lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
        n = trial.suggest_int("n", 1, 8)
        key = (lr, n)
        start = checkpoints.get(key, 0)
        trial.set_user_attr("start", start)
        trial.set_user_attr("who", who)
        target = train_to(trial)
        acc = curve(quality(lr, n), max(start, 1))
        for epoch in range(start + 1, target + 1):
            acc = curve(quality(lr, n), epoch)
            trained[key] += 1
            trial.report(acc, epoch)
        checkpoints[key] = max(start, target)
        return finish(trial, acc)

    return obj


def real_trials(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    """The trials that evaluated something (not the surplus ones pruned at once)."""
    return [t for t in study.trials if not t.system_attrs.get("mf:surplus")]


def check_arms_come_from_the_proposer(sampler: MFSampler, study: optuna.Study, rec: Recording, K: int) -> dict:
    """Every arm's first trial was sampled by the proposer (its values are the trial's parameters); every later
    trial of the arm got exactly those parameters without asking the proposer. Returns trials per arm."""
    arms = sampler.arms(study)
    assert arms is not None and len(arms) == K and all(a is not None for a in arms)
    by_arm: dict[int, list] = collections.defaultdict(list)
    for t in real_trials(study):
        k = sampler.arm_of(t)
        assert k is not None, (t.number, t.params, t.system_attrs)
        by_arm[k].append(t)
    assert sorted(by_arm) == list(range(K))
    for k, ts in by_arm.items():
        first, later = ts[0], ts[1:]
        assert rec.values[first.number] == first.params == arms[k]  # the proposer's configuration
        for t in later:
            assert t.params == arms[k] and t.number not in rec.values  # resumed / re-run: the arm's, not asked
    assert sorted(rec.values) == sorted(ts[0].number for ts in by_arm.values())  # asked exactly K times
    return by_arm


def test_an_ordinary_objective_races_k_proposed_configurations() -> None:
    K = 12
    rec = Recording(RandomSampler(seed=0))
    sampler = MFSampler(proposer=rec, n_candidates=K, seed=0)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    study.optimize(ordinary, n_trials=300)
    assert len(study.trials) < 300  # the study ended by itself once the K configurations were raced
    assert sampler.proposes and sampler.candidates is None
    by_arm = check_arms_come_from_the_proposer(sampler, study, rec, K)
    assert any(len(ts) > 1 for ts in by_arm.values())  # paused configurations were run again, with their values
    assert study.trials[0].system_attrs.get("mf:discovery") == 0  # the first trial (space unknown) is arm 0
    r = sampler.recommendation(study)
    assert r.done and r.params == sampler.arms(study)[r.arm] and r.full_fidelity_resources == K * 27
    assert study.best_trial.params == r.params  # the best configuration trained to the top
    assert r.params == max(sampler.arms(study), key=lambda a: quality(**a))


def test_a_resumable_objective_resumes_each_proposed_configuration_from_its_checkpoint() -> None:
    K = 10
    checkpoints: dict = {}
    trained: collections.Counter = collections.Counter()
    rec = Recording(TPESampler(seed=3, n_startup_trials=4))
    sampler = MFSampler(proposer=rec, n_candidates=K, max_resource=27, seed=3)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    study.optimize(make_resumable(checkpoints, trained), n_trials=300)
    assert len(study.trials) < 300
    by_arm = check_arms_come_from_the_proposer(sampler, study, rec, K)
    # once 4 trials have finished (its start-up; trials run one at a time) TPE proposes every configuration jointly
    # (multivariate: sample_relative)
    assert sorted(rec.relative) == sorted(ts[0].number for ts in by_arm.values() if ts[0].number >= 4)
    for ts in by_arm.values():  # each trial of an arm resumes where the arm's previous trial stopped
        fids = [t.system_attrs["mf:fidelity"] for t in ts]
        assert fids == sorted(set(fids))
        for prev, t in zip(ts, ts[1:]):
            assert t.user_attrs["start"] == train_to_of(sampler, study, prev)
    assert all(v <= 27 for v in trained.values())  # no epoch trained twice
    assert any(len(ts) > 2 for ts in by_arm.values())
    r = sampler.recommendation(study)
    assert r.done and r.params == sampler.arms(study)[r.arm]
    assert sum(trained.values()) == pytest.approx(r.resources_spent)
    assert r.resources_spent < r.full_fidelity_resources
    low = [t for t in study.trials if t.system_attrs["mf:fidelity"] < 3]
    assert low and all(t.state == TrialState.PRUNED for t in low)


def train_to_of(sampler: MFSampler, study: optuna.Study, t: optuna.trial.FrozenTrial) -> int:
    lad, _ = sampler.study_ladder(study, study.trials)
    return int(lad.resources[t.system_attrs["mf:fidelity"]])


@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_two_samplers_on_one_storage_rebuild_the_same_arms(tmp_path: Path, kind: str) -> None:
    """Two MFSampler instances (two workers, each with its own proposer seed) take turns on one study in a SQLite
    database or a journal file: both rebuild the same arms from the storage, and a configuration one started the
    other resumes with exactly its parameters."""
    if kind == "sqlite":
        url: Any = f"sqlite:///{tmp_path / 'p.db'}"
    else:
        from optuna.storages import JournalStorage
        from optuna.storages.journal import JournalFileBackend

        url = JournalStorage(JournalFileBackend(str(tmp_path / "p.log")))
    K = 6
    checkpoints: dict = {}
    trained: collections.Counter = collections.Counter()
    samplers = [MFSampler(proposer=TPESampler(seed=s, n_startup_trials=3), n_candidates=K, max_resource=9, seed=s)
                for s in (1, 2)]  # fmt: skip
    optuna.create_study(study_name="p", storage=url, direction="maximize")
    studies = [optuna.load_study(study_name="p", storage=url, sampler=s, pruner=MFPruner()) for s in samplers]
    objectives = [make_resumable(checkpoints, trained, who) for who in ("w0", "w1")]
    for i in range(200):
        w = i % 2
        studies[w].optimize(objectives[w], n_trials=1)
        if samplers[w].recommendation(studies[w]).done:
            break
    assert samplers[0].recommendation(studies[0]).done and samplers[1].recommendation(studies[1]).done
    arms0, arms1 = samplers[0].arms(studies[0]), samplers[1].arms(studies[1])
    assert arms0 == arms1 and len(arms0) == K and all(a is not None for a in arms0)
    crossed = 0
    study = optuna.load_study(study_name="p", storage=url)
    by_arm: dict[int, list] = collections.defaultdict(list)
    for t in real_trials(study):
        k = samplers[0].arm_of(t)
        assert k is not None and t.params == arms0[k]
        by_arm[k].append(t)
    for ts in by_arm.values():
        crossed += len({t.user_attrs["who"] for t in ts}) > 1
    assert crossed >= 2  # configurations started by one worker were resumed by the other
    assert samplers[0].recommendation(studies[0]).params == samplers[1].recommendation(studies[1]).params
    assert all(v <= 9 for v in trained.values())


def test_a_trial_that_failed_before_suggesting_everything_is_completed_by_the_retry() -> None:
    """Arm k's configuration is, per parameter, the value of the first trial of arm k that suggested it: a trial
    that crashed after suggesting ``lr`` only is run again with that ``lr`` and a proposed ``n``."""
    rec = Recording(RandomSampler(seed=5))
    sampler = MFSampler(proposer=rec, n_candidates=6, seed=5)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())

    def crashing(trial: optuna.Trial) -> float:
        if trial.number == 3:
            trial.suggest_float("lr", 1e-4, 1e-1, log=True)
            raise RuntimeError("out of memory")
        return ordinary(trial)

    study.optimize(crashing, n_trials=100, catch=(RuntimeError,))
    failed = study.trials[3]
    assert failed.state == TrialState.FAIL and set(failed.params) == {"lr"}
    k = sampler.arm_of(failed)
    retry = next(t for t in study.trials[4:] if sampler.arm_of(t) == k)
    assert retry.params["lr"] == failed.params["lr"] and rec.values[retry.number] == {"n": retry.params["n"]}
    assert sampler.arms(study)[k] == retry.params
    assert sampler.recommendation(study).done


def test_tpe_concentrates_the_configurations_it_proposes() -> None:
    """On a 2-d space whose best region is small (the value falls with the distance to (0.75, 0.25)), the
    configurations TPESampler proposes after its 10 random start-up ones are much closer to the optimum than random
    ones. Statistic: the mean distance to the optimum of the 30 proposals after the start-up, averaged over three
    studies (seeds 0, 1, 2: 90 proposals). Threshold: the 0.1% quantile of the same statistic for 90 uniform points
    (0.416, by simulation), so a proposer no better than random passes with probability ≤ 0.001. False-failure rate,
    measured: over 200 seeds of one study the mean distance was 0.19-0.45 (mean 0.26, s.d. 0.04); resampling three of
    those 200 seeds a million times, 6 averages exceeded 0.416: the rate is about 1e-5. (One study alone against its
    own 0.1% quantile, 0.360, would fail 1.5% of the time: 3 of the 200 seeds were above it.)"""
    target = np.array([0.75, 0.25])

    def obj(trial: optuna.Trial) -> float:
        x, y = trial.suggest_float("x", 0, 1), trial.suggest_float("y", 0, 1)
        q = 0.9 - 0.8 * math.hypot(x - target[0], y - target[1])
        acc = 0.0
        for epoch in range(1, 10):
            acc = curve(q, epoch)
            trial.report(acc, epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return acc

    K, dists = 40, []
    for seed in range(3):
        sampler = MFSampler(n_candidates=K, seed=seed)  # the default proposer: TPESampler(seed=seed)
        study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
        study.optimize(obj, n_trials=500)
        assert isinstance(sampler.proposer, TPESampler) and sampler.recommendation(study).done
        arms = sampler.arms(study)
        assert len(arms) == K and all(a is not None for a in arms)
        proposed = np.array([[a["x"], a["y"]] for a in arms[10:]])
        dists.append(np.hypot(*(proposed - target).T))
    mean_dist = float(np.mean(dists))
    u = np.random.default_rng(0).random((100_000, 3 * (K - 10), 2))
    threshold = float(np.quantile(np.hypot(u[..., 0] - target[0], u[..., 1] - target[1]).mean(axis=1), 0.001))
    assert 0.40 < threshold < 0.43  # the simulation itself
    assert mean_dist < threshold, (mean_dist, threshold)


def test_sobol_keeps_the_fixed_candidates_and_a_grid_stays_a_grid() -> None:
    sampler = MFSampler(proposer="sobol", n_candidates=8, seed=0)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    study.optimize(ordinary, n_trials=100)
    cands = candidate_set(SPACE, n_candidates=8)
    assert not sampler.proposes and sampler.proposer is None and sampler.candidates == cands
    assert sampler.arms(study) == cands
    assert all(t.params in cands for t in study.trials[1:] if not t.system_attrs.get("mf:surplus"))
    # a finite grid is raced whole, in the seeded order: the proposer samples only the first trial (space unknown)
    rec = Recording(RandomSampler(seed=0))
    grid = MFSampler(proposer=rec, seed=0)
    study = optuna.create_study(direction="maximize", sampler=grid, pruner=MFPruner())

    def on_grid(trial: optuna.Trial) -> float:
        x = trial.suggest_int("x", 0, 5)
        acc = 0.0
        for epoch in range(1, 10):
            acc = curve(0.3 + 0.1 * x, epoch)
            trial.report(acc, epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return acc

    study.optimize(on_grid, n_trials=100)
    assert not grid.proposes and grid.candidates == [{"x": i} for i in range(6)]
    assert sorted(rec.values) == [0] and grid.recommendation(study).params == {"x": 5}


def test_enqueued_configurations_and_threads() -> None:
    rec = Recording(TPESampler(seed=0))
    sampler = MFSampler(proposer=rec, n_candidates=6, seed=0)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    study.optimize(ordinary, n_trials=100, n_jobs=2)
    real = real_trials(study)
    assert sampler.recommendation(study).done
    arms = sampler.arms(study)
    assert all(t.params == arms[sampler.arm_of(t)] for t in real)
    assert len(rec.values) == 6 and rec.reseeds > 0  # n_jobs=2 reseeds the proposer (once per trial)
    # an enqueued trial with an arm's configuration evaluates that arm
    study.enqueue_trial(arms[4])
    trial = study.ask()
    assert sampler.arm_of(study._storage.get_trial(trial._trial_id)) == 4


def test_proposed_arms_rebuilt_incrementally_equal_a_fresh_rebuild() -> None:
    """ProposedArms folds the leading finished trials once; what it rebuilds equals a rebuild from scratch while
    trials are added, finish out of order and claim arms twice."""
    rng = np.random.default_rng(0)
    study = optuna.create_study()
    incremental = ProposedArms(5)
    for step in range(60):
        arm = int(rng.integers(5))
        params = {"lr": float(rng.choice([1e-3, 1e-2])), "n": int(rng.integers(1, 3))}
        if rng.random() < 0.3:
            params.pop("n")
        state = TrialState.RUNNING if rng.random() < 0.2 else TrialState.COMPLETE
        study.add_trial(optuna.trial.create_trial(
            state=state, value=None if state == TrialState.RUNNING else 0.0, params=params,
            distributions={k: SPACE[k] for k in params}, system_attrs={"mf:arm": arm},
        ))  # fmt: skip
        trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
        running = [t for t in trials if t.state == TrialState.RUNNING]
        if running and rng.random() < 0.3:  # a running trial finishes
            study._storage.set_trial_state_values(running[0]._trial_id, TrialState.COMPLETE, [0.0])
            trials = study._storage.get_all_trials(study._study_id, deepcopy=False)
        incremental.rebuild(trials)
        fresh = ProposedArms(5)
        fresh.rebuild(trials)
        assert [incremental.params(k) for k in range(5)] == [fresh.params(k) for k in range(5)], step
        assert [incremental.arm_of(t) for t in trials] == [fresh.arm_of(t) for t in trials]


def test_reseed_reaches_the_proposer_and_the_fallback_once() -> None:
    rec = Recording(RandomSampler(seed=0))
    calls = []
    fallback = RandomSampler(seed=0)
    fallback.reseed_rng = lambda: calls.append(1)  # type: ignore[method-assign]
    MFSampler(proposer=rec, fallback=fallback).reseed_rng()
    assert rec.reseeds == 1 and calls == [1]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"proposer": "tpe"}, r"proposer = 'tpe' is not accepted; accepted: an Optuna sampler other than MFSampler"),
        ({"proposer": MFSampler()}, r"is not accepted; accepted: an Optuna sampler other than MFSampler"),
        ({"resources": [1, 3], "policy": "sh", "proposer": RandomSampler()}, "applies to policy = 'race' only"),
    ],
)
def test_bad_proposers_are_named(kwargs: dict, match: str) -> None:
    from mf_sched import FidelityLadder

    if kwargs.get("policy") == "sh":
        kwargs = {"ladder": FidelityLadder([1, 3], [0.1, 0.0], resources=[1, 3]), **kwargs}
        kwargs.pop("resources")
    with pytest.raises(ValueError, match=match):
        MFSampler(**kwargs)
