"""Ray Tune schedulers under faults (issue 19): crashing and retried trials, NaN reports, function trainables
without checkpoints, an interrupted driver, the certificate read back from the experiment directory, and a
two-node local cluster. Trainables and helpers come from test_ray_race / test_ray (one local Ray per session,
the `ray_session` fixture in conftest.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the 'ray' extra is not installed")

from mf_sched.integrations.ray import (  # noqa: E402
    STATE_FILE,
    IISEScheduler,
    SchedulerStateCallback,
    load_certificate,
)
from ray import tune  # noqa: E402
from test_ray import LADDER, CrashOnce  # noqa: E402
from test_ray_race import QUALITY, epochs_trained, replay_trainable  # noqa: E402

from mf_sched._serialize import StateFormatError  # noqa: E402

SPACE_Q = QUALITY[:6]  # 0.9 (best), 0.85, 0.5, 0.3, 0.88, 0.1
MAX_T = 9


def tuner(tmp_path: Path, sched, *, name: str, max_failures: int = 0, callbacks=(), **space) -> tune.Tuner:
    """The zero-argument study of test_ray_race on replay_trainable: 6 configurations, 9 epochs."""
    param_space = {"q": tune.grid_search(SPACE_Q), "log": str(tmp_path / "epochs.log"), "max_t": MAX_T, **space}
    return tune.Tuner(
        replay_trainable, param_space=param_space,
        tune_config=tune.TuneConfig(metric="acc", mode="max", scheduler=sched, reuse_actors=True),
        run_config=tune.RunConfig(
            name=name, storage_path=str(tmp_path), verbose=0, stop={"training_iteration": MAX_T},
            failure_config=tune.FailureConfig(max_failures=max_failures), callbacks=list(callbacks),
        ),
    )  # fmt: skip


def trial_ids(results) -> dict[str, float]:
    """trial id -> q (Ray fills in trial_id also for a trial that failed before its first result)."""
    return {r.metrics["trial_id"]: r.config["q"] for r in results if r.metrics and "trial_id" in r.metrics}


# ------------------------------------------------------------------------------ a crashing configuration
@pytest.mark.parametrize("max_failures", [0, 1])
def test_a_crashing_configuration(ray_session, tmp_path: Path, max_failures: int) -> None:
    """The best configuration (q = 0.9) raises at its first epoch: with max_failures=0 it is lost (uncovered;
    the answer is the best of the others, 0.88); with max_failures=1 the retry succeeds and wins. The
    certificate is also read back from the experiment directory (load_certificate)."""
    sched = IISEScheduler()
    flag = {"flag": str(tmp_path / "crashed")} if max_failures else {}
    results = tuner(
        tmp_path, sched, name="crash", max_failures=max_failures, callbacks=[SchedulerStateCallback(sched)],
        crash=0.9, **flag,
    ).fit()  # fmt: skip
    errored = [r.config["q"] for r in results if r.error]
    pairs = epochs_trained(tmp_path / "epochs.log")
    assert len(pairs) == len(set(pairs))  # no epoch trained twice (the crash comes before epoch 1 is logged)
    cert = sched.certificate()
    ids = trial_ids(results)
    assert cert.counts["running"] == 0 and cert.epsilon is not None
    if max_failures == 0:
        assert errored == [0.9]
        assert results.get_best_result().config["q"] == 0.88 and sched.best_config()["q"] == 0.88
        assert [ids[k] for k in cert.uncovered] == [0.9]  # the crashed trial, listed as uncovered
        assert cert.counts["lost"] == 1 and not cert.identified
        assert 0.9 not in {q for q, _ in pairs}
    else:
        assert errored == [] and (tmp_path / "crashed").exists()  # crashed once, retried
        assert results.get_best_result().config["q"] == 0.9 and sched.best_config()["q"] == 0.9
        # the retried configuration wins and is covered; a trial Ray ended before the learned bound widened cannot
        # run again and is listed as uncovered (then the answer is not certified), never the retried one
        assert 0.9 not in [ids[k] for k in cert.uncovered] and cert.counts["lost"] == len(cert.uncovered)
        assert ids[cert.key] == 0.9 and (cert.certified or cert.uncovered)
        assert sum(1 for q, _ in pairs if q == 0.9) == MAX_T  # the retry trained each epoch once
    # the same certificate, read from the experiment directory without the scheduler object
    assert load_certificate(tmp_path / "crash") == cert


# ------------------------------------------------------------------------------ NaN reports
def test_a_nan_reporting_trial_is_stopped_and_uncovered(ray_session, tmp_path: Path) -> None:
    sched = IISEScheduler()
    results = tuner(tmp_path, sched, name="nan", nan=0.85).fit()
    assert not results.errors
    pairs = epochs_trained(tmp_path / "epochs.log")
    assert [e for q, e in pairs if q == 0.85] == [1]  # stopped at its first rung, not trained to the budget
    cert = sched.certificate()
    ids = trial_ids(results)
    assert [ids[k] for k in cert.uncovered] == [0.85]
    assert cert.counts["running"] == 0 and cert.epsilon is not None  # the experiment ended with a certificate
    assert ids[cert.key] == 0.9 and results.get_best_result().config["q"] == 0.9


# ------------------------------------------------------------------------------ no checkpoints
def test_racing_without_checkpoints_never_pauses_or_retrains(ray_session, tmp_path: Path) -> None:
    """The documented behaviour: a function trainable without checkpoints is never paused (it would restart
    from scratch), so no epoch is trained twice; the race still stops the weak trials."""
    sched = IISEScheduler()
    results = tuner(tmp_path, sched, name="nockpt-race", checkpoint=False).fit()
    assert not results.errors and results.get_best_result().config["q"] == 0.9
    pairs = epochs_trained(tmp_path / "epochs.log")
    assert len(pairs) == len(set(pairs))
    assert all(e == i + 1 for q in SPACE_Q for i, e in enumerate(e for qq, e in pairs if qq == q))  # in order
    cert = sched.certificate()
    assert cert.counts["stopped"] >= 1 and cert.counts["running"] == 0 and cert.epsilon is not None


def test_synchronous_iise_without_checkpoints_fails_at_the_first_rung(ray_session, tmp_path: Path) -> None:
    """Synchronous IISE pauses every trial at each rung; without a checkpoint the trial would restart from
    scratch. The documented behaviour: a clear error at the first pause, before any epoch is re-run."""
    sched = IISEScheduler(LADDER, rule="iise", sigma=0.01)
    with pytest.raises(Exception, match="without a checkpoint") as info:  # noqa: B017
        tuner(tmp_path, sched, name="nockpt-iise", checkpoint=False).fit()
    assert "tune.report(..., checkpoint=" in str(info.value)
    pairs = epochs_trained(tmp_path / "epochs.log")
    assert len(pairs) == len(set(pairs))  # nothing was trained twice before the error


# ------------------------------------------------------------------------------ interrupted driver
@pytest.mark.slow
def test_restore_with_the_zero_argument_scheduler_gives_the_same_answer(ray_session, tmp_path: Path) -> None:
    sched = IISEScheduler()
    crash = CrashOnce(str(tmp_path / "flag"), after=12)
    with pytest.raises(Exception, match="simulated driver crash"):  # noqa: B017
        tuner(tmp_path, sched, name="restore", callbacks=[SchedulerStateCallback(sched), crash]).fit()
    assert sched.certificate().counts["running"] > 0  # interrupted mid-experiment
    before = len(epochs_trained(tmp_path / "epochs.log"))
    restored = tune.Tuner.restore(str(tmp_path / "restore"), trainable=replay_trainable, resume_unfinished=True)
    results = restored.fit()
    assert not results.errors
    assert results.get_best_result(metric="acc", mode="max").config["q"] == 0.9
    cert = load_certificate(tmp_path / "restore")  # the restored scheduler's state, read back
    ids = trial_ids(results)
    assert ids[cert.key] == 0.9 and cert.counts["running"] == 0 and cert.epsilon is not None
    # every trial was stopped, finished, or — stopped and ended by Ray before the bound learned from the finished
    # trials widened — given back and listed as uncovered (then the answer is not certified)
    assert sum(cert.counts.values()) == len(SPACE_Q) and cert.counts["stopped"] + cert.counts["lost"] >= 1
    assert len(cert.uncovered) == cert.counts["lost"] and (cert.certified or cert.uncovered)
    pairs = epochs_trained(tmp_path / "epochs.log")
    # resumed from checkpoints; Ray's experiment snapshots are periodic, so a restored trial may repeat the
    # epochs after the snapshot (at most the epochs since it), never the whole run: the restored run trains less
    # than a full search
    assert len(pairs) - before < len(SPACE_Q) * MAX_T
    assert sum(1 for r in results if r.metrics.get("training_iteration", 0) == MAX_T) <= 4


# ------------------------------------------------------------------------------ the state file
def test_load_certificate_validates_the_file(tmp_path: Path) -> None:
    from test_ray_race import run

    sched = IISEScheduler()
    run(sched)
    cb = SchedulerStateCallback(sched)
    cb.write_state(tmp_path)
    assert load_certificate(tmp_path) == sched.certificate() == load_certificate(tmp_path / STATE_FILE)
    with pytest.raises(FileNotFoundError, match="SchedulerStateCallback"):
        load_certificate(tmp_path / "missing")
    bad = tmp_path / "bad"
    bad.mkdir()
    for text, match in [
        ("not json", "not valid JSON"),
        ("[1, 2]", "format"),
        (json.dumps({"format": "other/1"}), "format"),
        (json.dumps({"format": "mf_sched.ray.SchedulerState/1", "state": {"engine": {"format": "x"}}}),
         "not a saved RungEliminator"),
    ]:  # fmt: skip
        (bad / STATE_FILE).write_text(text)
        with pytest.raises(StateFormatError, match=match):
            load_certificate(bad)
    state = json.loads((tmp_path / STATE_FILE).read_text())
    state["state"]["engine"] = None  # saved before the rungs were known
    (bad / STATE_FILE).write_text(json.dumps(state))
    assert load_certificate(bad) is None


# ------------------------------------------------------------------------------ a two-node cluster
CLUSTER_STUDY = Path(__file__).with_name("_ray_cluster_study.py")


@pytest.mark.slow
def test_two_node_cluster_runs_the_default_scheduler(tmp_path: Path) -> None:
    """Two local nodes with one CPU each (ray.cluster_utils.Cluster), in a subprocess so that it never
    meets the session's Ray."""
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [sys.executable, str(CLUSTER_STUDY), str(tmp_path), str(out)], capture_output=True, text=True, timeout=280
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(out.read_text())
    assert res["best_q"] == 0.9 and res["scheduler_best_q"] == 0.9
    assert res["nodes"] == 2 and len(res["trial_nodes"]) == 2  # both nodes (the first two trials wait for each other)
    assert res["duplicate_epochs"] == 0 and res["certificate"]["epsilon"] is not None


def never_reports_the_metric(config: dict) -> None:
    for _ in range(3):
        tune.report({"loss": 1.0})  # the experiment's metric is "acc": never reported


def test_a_trainable_that_never_reports_the_metric_is_named(ray_session, tmp_path: Path, monkeypatch) -> None:
    """It said nothing: best_config() and certificate() were None with no word why (issue 35). Tune's own check is
    off, as where a trainable reports the metric only now and then (TUNE_DISABLE_STRICT_METRIC_CHECKING=1)."""
    monkeypatch.setenv("TUNE_DISABLE_STRICT_METRIC_CHECKING", "1")
    sched = IISEScheduler(metric="acc", mode="max")
    t = tune.Tuner(
        never_reports_the_metric, param_space={"q": tune.grid_search([1, 2])},
        tune_config=tune.TuneConfig(scheduler=sched),
        run_config=tune.RunConfig(name="nometric", storage_path=str(tmp_path), verbose=0),
    )  # fmt: skip
    with pytest.warns(UserWarning, match=r"has no 'acc'.*'loss'.*report 'acc' with tune.report") as rec:
        t.fit()
    assert sum("has no 'acc'" in str(w.message) for w in rec) == 1  # said once
    assert sched.best_config() is None and sched.certificate() is None
