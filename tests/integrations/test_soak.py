"""Bounded soaks of the adapters under faults (issue 24; ``make test-slow``): ``benchmarks/soak.py`` with fewer
configurations. Optuna: 8 worker processes on a real PostgreSQL server (the ``postgres_server`` fixture), workers
SIGKILLed at random mid-trial and mid-decision and replaced; Ray Tune: trials crashing at random and retried. Each
against an undisturbed run: the same answer, no reported value lost."""

from __future__ import annotations

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning"),
    pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used with Study.optimize"),
]
optuna = pytest.importorskip("optuna", reason="the 'optuna' extra is not installed")

from benchmarks import soak  # noqa: E402


def test_optuna_eight_workers_on_postgres_killed_mid_trial_and_mid_decision(postgres_server: str) -> None:
    from _postgres import new_database

    kw = dict(workers=8, configs=60, seed=3, timeout_s=600.0, progress=False)
    clean = soak.soak_optuna(new_database(postgres_server), trial_kills=0, decision_kills=0, label="clean", **kw)
    hit = soak.soak_optuna(new_database(postgres_server), trial_kills=6, decision_kills=3, label="hit", **kw)
    for run in (clean, hit):
        assert run["done"] and run["answer"] == run["best"], run  # the undisturbed answer: the best configuration
        assert run["values_lost"] == 0 and run["values_logged"] > 0, run["lost"]
        assert run["left_running"] == [] and run["uncovered"] == []
    assert hit["kills_mid_trial"] == 6 and hit["kills_mid_decision"] == 3
    assert hit["killed_trials_failed"] and hit["killed_trials_retried"] and hit["decision_trials_failed"]
    assert hit["workers_started"] >= 8 + 9 - 1 and hit["workers_alive_max"] == 8  # the load was held
    assert clean["duplicate_evaluations"] == 0, clean["duplicates_detail"]  # two workers never keep one configuration
    assert hit["duplicate_evaluations"] <= hit["kills_mid_trial"]  # only the retries of killed trials


def test_ray_trials_crashing_at_random(ray_session, tmp_path) -> None:
    clean = soak.soak_ray(configs=8, crash_rate=0.0, seed=3, label="clean", storage_path=str(tmp_path))
    hit = soak.soak_ray(configs=8, crash_rate=0.15, seed=3, label="hit", storage_path=str(tmp_path))
    assert clean["crashes"] == 0 and hit["crashes"] >= 3  # (0, 1), (1, 1), (5, 1) at least: epoch 1 is run by all
    for run in (clean, hit):
        assert run["answer"] == run["best"] and run["errored_trials"] == 0, run
        assert run["values_lost"] == 0 and run["values_received"] > 0, run["lost"]
        assert run["certificate"]["epsilon"] is not None and run["certificate"]["uncovered"] == 0
