"""Bounded soaks of the adapters under faults (issue 24; ``make test-slow``): ``benchmarks/soak.py`` with fewer
configurations. Optuna: 8 worker processes on a real PostgreSQL server (the ``postgres_server`` fixture), workers
SIGKILLed at random mid-trial and mid-decision and replaced; Ray Tune: trials crashing at random and retried. Each
against an undisturbed run: the same answer, no reported value lost. Issue 35's scale soak (a continuous space with
TPE proposals, workers killed) and a two-node Ray cluster whose worker node is killed mid-race, bounded."""

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


def test_scale_continuous_space_tpe_workers_killed_mid_trial_and_mid_decision(postgres_server: str, tmp_path) -> None:
    """Issue 35's scale soak, bounded (``python -m benchmarks.soak scale`` runs 16 workers and 5,000 trials): 4 worker
    processes on one PostgreSQL study, two floats raced as TPE-proposed candidates (``MFSampler(n_candidates=300,
    proposer=TPESampler(seed))``), the study capped at 300 trials, workers SIGKILLed mid-trial and mid-decision.
    0 values lost, no configuration trained to the top twice but the retries of killed trials, none left RUNNING,
    the answer the best configuration the completed trials show; then the report and plot_race on that study."""
    from _postgres import new_database

    db = new_database(postgres_server)
    run = soak.soak_optuna(
        db, workers=4, configs=300, trial_kills=3, decision_kills=2, seed=5, space="continuous", n_trials=300,
        epoch_s=(0.002, 0.005), kill_gap_s=(1.0, 3.0), timeout_s=900.0, label="scale", progress=False,
    )  # fmt: skip
    assert run["trials"] >= 300 and run["configurations"] >= 100, run["states"]
    assert run["values_lost"] == 0 and run["values_logged"] > 0, run["lost"]
    assert run["left_running"] == [] and run["uncovered"] == []
    assert run["kills_mid_trial"] == 3 and run["kills_mid_decision"] == 2, run["kills"]
    assert run["killed_trials_failed"] and run["killed_trials_retried"], run["killed_not_retried"]
    assert run["decision_trials_failed"]
    assert run["workers_started"] >= 4 + 5 - 1 and run["workers_alive_max"] == 4  # the load was held
    assert run["duplicate_evaluations"] <= run["kills_mid_trial"], run["duplicates_detail"]  # the retries only
    assert run["answer"] == run["best"] and run["answer_rung"] is not None  # the best completed configuration
    assert run["answer_quality"] > 0.8 * run["optimum_quality"]
    timing = soak.time_report(db, "scale-5", tmp_path)
    assert timing["report_s"] < 60 and timing["plot_race_s"] < 20, timing
    assert timing["report_page_bytes"] < 20e6 and timing["plot_race_json_bytes"] < 10e6, timing


def test_ray_two_node_cluster_worker_node_killed_mid_race(tmp_path) -> None:
    """Issue 35: ``python -m benchmarks.soak ray-node`` (in a subprocess: its own two-node cluster, never the test
    session's Ray) — the worker node SIGKILLed mid-race, a new node joining 2 s later; the race resumes (the trials
    running on the dead node are retried, from their checkpoints where they had one), 0 results lost, the
    undisturbed answer."""
    import json
    import subprocess
    import sys

    from conftest import ROOT

    out = tmp_path / "out.json"
    cmd = [sys.executable, "-m", "benchmarks.soak", "ray-node", "--configs", "8", "--kill-after", "12",
           "--storage", str(tmp_path / "exp"), "--out", str(out)]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.exists(), proc.stdout[-2000:] + proc.stderr[-3000:]
    res = json.loads(out.read_text())
    clean, hit = res["runs"]
    assert hit["during"]["killed"], hit["during"]
    for run in (clean, hit):
        assert run["answer"] == run["best"] and run["errored_trials"] == 0, run
        assert run["values_lost"] == 0 and run["values_received"] > 0, run["lost"]
        assert run["certificate"]["epsilon"] is not None and run["certificate"]["uncovered"] == 0
    assert hit["retried_after_kill"], hit["during"]  # the trials running on the dead node were retried
    assert set(hit["resumed_from_checkpoint"]) <= set(hit["retried_after_kill"])
    assert res["answer_kept"] and proc.returncode == 0
