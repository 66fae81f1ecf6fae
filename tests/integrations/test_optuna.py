"""MFSampler and MFPruner (mf_sched.integrations.optuna) with an explicit ladder and the round-based policy
``iise-rungs`` (the racing default is tested in test_optuna_race.py)."""

from __future__ import annotations

import collections
import math
import multiprocessing as mp
from pathlib import Path

import numpy as np
import pytest

optuna = pytest.importorskip("optuna", reason="the 'optuna' extra is not installed")

from mf_sched.integrations.optuna import (  # noqa: E402
    MFPruner,
    MFSampler,
    candidate_set,
    curves_from_study,
    finish,
    train_to,
)
from optuna.testing.pytest_samplers import BasicSamplerTestCase, SingleOnlySamplerTestCase  # noqa: E402
from optuna.trial import TrialState  # noqa: E402

from mf_sched import FidelityLadder  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)
LADDER = FidelityLadder(costs=[1, 3, 9, 27], zeta=[0.2, 0.1, 0.04, 0.0], resources=[1, 3, 9, 27])
SPACE = {"x": list(range(8)), "lr": [0.1, 0.01]}


def quality(x: int, lr: float) -> float:
    return 0.3 + 0.08 * x + (0.05 if lr == 0.01 else 0.0)


def objective(trial: optuna.Trial) -> float:
    x = trial.suggest_categorical("x", SPACE["x"])
    lr = trial.suggest_categorical("lr", SPACE["lr"])
    q = quality(x, lr)
    acc = float("nan")
    for e in range(1, train_to(trial) + 1):
        acc = q * (1 - 0.3 * math.exp(-e / 4))
        trial.report(acc, e)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return finish(trial, acc)


class TestMFSamplerBasic(BasicSamplerTestCase):
    """Optuna's public sampler suite: trials without an arm fall back to the RandomSampler."""

    @pytest.fixture(params=[pytest.param(lambda: MFSampler(LADDER, seed=0), id="MFSampler")])
    def sampler(self, request):  # type: ignore[override]
        return request.param


class TestMFSamplerSingleOnly(SingleOnlySamplerTestCase):
    """Single-objective only: both sample_* raise ValueError on a multi-objective study."""

    @pytest.fixture(params=[pytest.param(lambda: MFSampler(LADDER, seed=0), id="MFSampler")])
    def sampler(self, request):  # type: ignore[override]
        return request.param


def test_seeded_runs_reproduce_and_reseed_reaches_the_fallback() -> None:
    def run() -> list[dict]:
        sampler = MFSampler(LADDER, policy="iise-rungs", search_space=SPACE, sigma=0.005, seed=3)
        study = optuna.create_study(direction="maximize", sampler=sampler)
        study.optimize(objective, n_trials=25)
        return [(t.params, t.system_attrs.get("mf:fidelity")) for t in study.trials]

    assert run() == run()
    calls = []
    fallback = optuna.samplers.RandomSampler(seed=0)
    fallback.reseed_rng = lambda: calls.append(1)  # type: ignore[method-assign]
    sampler = MFSampler(LADDER, seed=0, fallback=fallback)
    sampler.reseed_rng()
    assert calls == [1]


def test_best_trial_is_top_fidelity_and_recommendation_is_certified() -> None:
    sampler = MFSampler(LADDER, policy="iise-rungs", search_space=SPACE, sigma=0.005, seed=0)
    pruner = MFPruner(LADDER, rule="iise", sigma=0.005)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=pruner)
    for _ in range(20):
        study.optimize(objective, n_trials=10)
        if sampler.recommendation(study).done:
            break
    rec = sampler.recommendation(study)
    assert rec.done and rec.params == {"x": 7, "lr": 0.01}
    assert rec.certified and rec.reason == "identified"
    complete = study.get_trials(states=(TrialState.COMPLETE,))
    assert complete and all(t.system_attrs["mf:fidelity"] == LADDER.top for t in complete)
    assert study.best_trial.system_attrs["mf:fidelity"] == LADDER.top
    assert study.best_trial.params == {"x": 7, "lr": 0.01}
    low = [t for t in study.trials if t.system_attrs.get("mf:fidelity", LADDER.top) < LADDER.top]
    assert low and all(t.state == TrialState.PRUNED for t in low)
    assert rec.resources_spent < 0.7 * rec.full_fidelity_resources  # cheap rungs eliminated bad configurations
    per_fid = collections.Counter(t.system_attrs["mf:fidelity"] for t in study.trials if "mf:arm" in t.system_attrs)
    assert per_fid[0] == 16 and per_fid[3] < 16


def test_state_is_rebuilt_from_storage_by_a_fresh_sampler(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    s1 = MFSampler(LADDER, policy="iise-rungs", search_space=SPACE, sigma=0.005, seed=0)
    study = optuna.create_study(storage=url, study_name="s", direction="maximize", sampler=s1)
    study.optimize(objective, n_trials=20)
    s2 = MFSampler(LADDER, policy="iise-rungs", search_space=SPACE, sigma=0.005, seed=0)
    again = optuna.load_study(study_name="s", storage=url, sampler=s2)
    assert s2.recommendation(again) == s1.recommendation(study)
    again.optimize(objective, n_trials=5)
    assert len(again.trials) == 25


def test_failed_trials_give_their_pull_back() -> None:
    sampler = MFSampler(LADDER, policy="iise-rungs", search_space=SPACE, sigma=0.005, seed=0)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    fail = {"n": 0}

    def flaky(trial: optuna.Trial) -> float:
        if trial.number in (0, 3):
            fail["n"] += 1
            trial.suggest_categorical("x", SPACE["x"])
            raise RuntimeError("worker crashed")
        return objective(trial)

    study.optimize(flaky, n_trials=18, catch=(RuntimeError,))
    failed = [t for t in study.trials if t.state == TrialState.FAIL]
    assert len(failed) == 2
    pulls = collections.Counter(
        (t.system_attrs["mf:arm"], t.system_attrs["mf:fidelity"]) for t in study.trials if t.state != TrialState.FAIL
    )
    # the 16 rung-0 pulls were all handed out once more after the failures (none lost)
    assert sum(1 for (a, f) in pulls if f == 0) == 16


def test_n_jobs_two_threads() -> None:
    sampler = MFSampler(LADDER, policy="iise-rungs", search_space=SPACE, sigma=0.005, seed=0)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.optimize(objective, n_trials=30, n_jobs=2)
    assert len(study.trials) == 30
    assert all(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in study.trials)
    arms0 = [t.system_attrs["mf:arm"] for t in study.trials if t.system_attrs.get("mf:fidelity") == 0]
    assert set(arms0) == set(range(16))


def _worker(url: str, n: int) -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    s = MFSampler(LADDER, policy="iise-rungs", search_space=SPACE, sigma=0.005, seed=0)
    study = optuna.load_study(study_name="mp", storage=url, sampler=s)
    study.optimize(objective, n_trials=n)


@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_two_processes_share_one_policy(tmp_path: Path, kind: str) -> None:
    if kind == "sqlite":
        url: object = f"sqlite:///{tmp_path / 'mp.db'}"
        storage = url
    else:
        from optuna.storages import JournalStorage
        from optuna.storages.journal import JournalFileBackend

        path = str(tmp_path / "mp.log")
        storage = JournalStorage(JournalFileBackend(path))
        url = None
    optuna.create_study(study_name="mp", storage=storage, direction="maximize")
    if kind == "journal":
        target, args = _journal_worker, (str(tmp_path / "mp.log"), 12)
    else:
        target, args = _worker, (url, 12)
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=target, args=args) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    study = optuna.load_study(study_name="mp", storage=storage)
    trials = study.trials
    assert len(trials) == 24 and all(t.state != TrialState.RUNNING for t in trials)
    rung0 = collections.Counter(
        t.system_attrs["mf:arm"]
        for t in trials
        if t.system_attrs.get("mf:fidelity") == 0
        and not t.system_attrs.get("mf:replica")
        and not t.system_attrs.get("mf:surplus")  # a surplus trial withdrew its claim (arm None): it pulls nothing
    )
    assert set(rung0) == set(range(16))  # no pull lost
    assert sum(rung0.values()) <= 16 + 4  # duplicates (beyond barrier replicas) only from simultaneous decisions
    # every told value present; a worker whose claim clashed with the other's four times in a row took a surplus
    # trial instead (it evaluates nothing: no configuration, no result)
    assert all(
        t.system_attrs.get("mf:result") is not None
        or (t.system_attrs.get("mf:surplus") and t.system_attrs.get("mf:arm") is None)
        for t in trials
    )


def _journal_worker(path: str, n: int) -> None:
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    s = MFSampler(LADDER, policy="iise-rungs", search_space=SPACE, sigma=0.005, seed=0)
    study = optuna.load_study(study_name="mp", storage=JournalStorage(JournalFileBackend(path)), sampler=s)
    study.optimize(objective, n_trials=n)


def _study_with_curves(values: dict[int, list[float]], direction: str = "maximize") -> optuna.Study:
    study = optuna.create_study(direction=direction)
    for number in sorted(values):
        trial = optuna.trial.create_trial(
            state=TrialState.COMPLETE if len(values[number]) == 4 else TrialState.PRUNED,
            value=values[number][-1],
            intermediate_values={s: v for s, v in zip([1, 3, 9, 27], values[number])},
            params={"i": number},
            distributions={"i": optuna.distributions.IntDistribution(0, 100)},
        )
        study.add_trial(trial)
    return study


def test_pruner_decisions_on_constructed_studies() -> None:
    pruner = MFPruner(LADDER, rule="iise", sigma=0.01, n_trials=10)
    study = _study_with_curves({0: [0.7, 0.8, 0.85, 0.9], 1: [0.6, 0.75, 0.8, 0.86]})
    t = optuna.trial.create_trial(
        state=TrialState.RUNNING, intermediate_values={1: 0.2}, params={"i": 2},
        distributions={"i": optuna.distributions.IntDistribution(0, 100)},
    )  # fmt: skip
    study.add_trial(t)
    frozen = study.trials[-1]
    out = pruner.prune(study, frozen)
    assert out is True and type(out) is bool  # 0.7 − B − (0.2 + B) ≥ 2ζ(0) = 0.4
    close = optuna.trial.create_trial(state=TrialState.RUNNING, intermediate_values={1: 0.5, 2: 0.51})
    study.add_trial(close)
    assert pruner.prune(study, study.trials[-1]) is False  # between rungs: no decision
    near = optuna.trial.create_trial(state=TrialState.RUNNING, intermediate_values={1: 0.5})
    study.add_trial(near)
    assert pruner.prune(study, study.trials[-1]) is False  # within the ζ band
    nan = optuna.trial.create_trial(state=TrialState.RUNNING, intermediate_values={1: float("nan")})
    study.add_trial(nan)
    assert pruner.prune(study, study.trials[-1]) is False
    # minimisation: the same numbers as losses
    loss = _study_with_curves({0: [0.3, 0.2, 0.15, 0.1]}, direction="minimize")
    loss.add_trial(optuna.trial.create_trial(state=TrialState.RUNNING, intermediate_values={1: 0.8}))
    assert pruner.prune(loss, loss.trials[-1]) is True


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"policy": "iise-rungs"}, "needs ladder= or calibration="),
        ({"ladder": LADDER, "calibration": object()}, "not ladder and calibration"),
        ({"resources": [1, 3, 2]}, "strictly increasing"),
        ({"resources": [1, 3], "policy": "iise-rungs"}, "needs ladder= or calibration="),
        ({"ladder": FidelityLadder([1, 3], [0.1, 0.0])}, "the ladder needs resources"),
        ({"ladder": LADDER, "policy": "mf-ucb"}, "not a finite-armed best-arm policy"),
        ({"ladder": LADDER, "delta": 1.5}, "delta = 1.5 is out of range"),
        ({"ladder": LADDER, "sigma": -1}, "sigma = -1 is out of range"),
        ({"ladder": LADDER, "search_space": {"x": []}}, r"search_space\['x'\] = \[\] is not accepted"),
        ({"ladder": LADDER, "policy": "iise-rungs", "policy_kwargs": {"nope": 1}}, "does not accept parameter"),
        ({"max_resource": -3}, "max_resource = -3 is out of range"),
        ({"max_resource": 27, "min_resource": 30}, "min_resource = 30 is out of range; accepted: 0 < min_resource"),
        ({"reduction_factor": 1}, "reduction_factor = 1 is out of range; accepted: a number > 1"),
        ({"ladder": LADDER, "race_bias": [0.1, 0.0]}, "race_bias has 2 rungs but the ladder has"),
        ({"max_failures": 0}, "max_failures = 0 is out of range"),
    ],
)
def test_bad_arguments(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        MFSampler(**kwargs)


def test_dynamic_space_is_rejected_clearly() -> None:
    sampler = MFSampler(LADDER, search_space={"x": [0, 1]}, seed=0)
    study = optuna.create_study(sampler=sampler)

    def obj(trial: optuna.Trial) -> float:
        trial.suggest_categorical("x", [0, 1])
        trial.suggest_float("y", 0, 1)
        return 0.0

    with pytest.raises(ValueError, match="not in MFSampler's search space"):
        study.optimize(obj, n_trials=1)


def test_candidate_set_grid_and_sobol() -> None:
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    grid = candidate_set({"a": IntDistribution(1, 3), "b": CategoricalDistribution(["u", "v"])})
    assert len(grid) == 6 and {"a": 3, "b": "v"} in grid
    cont = candidate_set({"lr": FloatDistribution(1e-4, 1e-1, log=True), "n": IntDistribution(1, 8)}, n_candidates=32)
    assert len(cont) == 32 and all(1e-4 <= c["lr"] <= 1e-1 and type(c["n"]) is int for c in cont)
    again = candidate_set({"lr": FloatDistribution(1e-4, 1e-1, log=True), "n": IntDistribution(1, 8)}, n_candidates=32)
    assert cont == again  # the same arms in every process


def test_curves_from_study_feed_calibration() -> None:
    from mf_sched.curves.calibration import calibrate

    rng = np.random.default_rng(0)
    curves = {i: list(np.sort(rng.uniform(0.5, 0.9, 4))) for i in range(30)}
    study = _study_with_curves(curves)
    lc = curves_from_study(study)
    cal = calibrate(lc, [1, 3, 9, 27], quantile=0.9, holdout=None)
    assert cal.zeta[-1] == 0 and cal.zeta[0] > 0
    with pytest.raises(ValueError, match="no finite intermediate values"):
        curves_from_study(optuna.create_study())


def test_curves_from_study_merges_a_configuration_resumed_across_trials() -> None:
    study = optuna.create_study(direction="maximize")
    dist = {"i": optuna.distributions.IntDistribution(0, 9)}
    for steps in ({1: 0.5, 3: 0.6}, {9: 0.7, 27: 0.75}):
        study.add_trial(
            optuna.trial.create_trial(
                state=TrialState.PRUNED, value=0.0, intermediate_values=steps, params={"i": 1}, distributions=dist
            )
        )
    merged = curves_from_study(study, merge_trials=True)
    separate = curves_from_study(study)
    rv = merged.values_at([1, 3, 9, 27])
    assert rv.n_configs == 1 and not np.isnan(rv.score).any()
    assert np.isnan(separate.values_at([1, 3, 9, 27]).score).any()  # two partial runs


def test_mf_gp_ucb_for_continuous_spaces() -> None:
    pytest.importorskip("sklearn", reason="MF-GP-UCB needs the 'gp' extra")
    ladder = FidelityLadder(costs=[1, 10], zeta=[0.1, 0.0], resources=[1, 10])

    def obj(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        f = -((x - 0.7) ** 2) - (0.05 if train_to(trial) == 1 else 0.0)
        return finish(trial, f)

    kw = {"budget": 120, "init_capital": 20, "acq_maxfun": 100, "refit_every": 10}
    sampler = MFSampler(ladder, policy="mf-gp-ucb", policy_kwargs=kw, sigma=0.01, seed=0)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.optimize(obj, n_trials=30)
    fids = collections.Counter(t.system_attrs["mf:fidelity"] for t in study.trials)
    assert fids[0] >= 10 and fids[1] >= 3  # cheap looks first, then the top fidelity
    assert len({t.params["x"] for t in study.trials}) > 20  # the policy's own points, not one repeated
    rec = sampler.recommendation(study)
    assert rec.params is not None and abs(rec.params["x"] - 0.7) < 0.15
    with pytest.raises(ValueError, match="needs policy_kwargs=.*budget"):
        MFSampler(ladder, policy="mf-gp-ucb")


def test_the_inferred_ladder_arguments_stay_readable():
    s = MFSampler(max_resource=27, min_resource=3, reduction_factor=3)
    p = MFPruner()
    assert (s.max_resource, s.min_resource, s.reduction_factor) == (27, 3, 3)
    assert (p.max_resource, p.min_resource, p.reduction_factor) == (None, None, 3)
    with pytest.raises(AttributeError):
        s.max_resource = 9  # read-only: the ladder is resolved at construction


def test_budget_is_the_deprecated_name_of_train_to():
    from mf_sched.integrations.optuna import budget

    sampler = MFSampler(max_resource=9)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    seen = []

    def objective(trial):
        trial.suggest_float("x", 0, 1)
        with pytest.warns(DeprecationWarning, match=r"budget\(trial\) is now called train_to\(trial\)"):
            seen.append((budget(trial), train_to(trial)))
        return finish(trial, 0.5)

    study.optimize(objective, n_trials=3)
    assert seen and all(a == b for a, b in seen)


def test_continuous_says_which_kind_of_search_the_sampler_runs() -> None:
    ladder = FidelityLadder(costs=[1, 10], zeta=[0.1, 0.0], resources=[1, 10])
    assert not MFSampler().continuous and not MFSampler(ladder, policy="sh").continuous
    for policy in ("mf-gp-ucb", "gp-ucb"):
        assert MFSampler(ladder, policy=policy, policy_kwargs={"budget": 50}).continuous
    with pytest.raises(ValueError, match="'mf-ucb' is not a finite-armed best-arm policy"):
        MFSampler(ladder, policy="mf-ucb")
