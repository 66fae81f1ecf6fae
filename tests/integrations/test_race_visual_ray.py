"""Seeing the race of a Ray Tune experiment: the scheduler's per-rung lines in Tune's progress reporter, its
decisions in the result dictionaries (CSV, JSON, TensorBoard), and the race plot / report read from the folder."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the 'ray' extra is not installed")

from mf_sched.integrations.ray import (  # noqa: E402
    STATE_FILE,
    IISEScheduler,
    SchedulerStateCallback,
)
from ray import tune  # noqa: E402
from test_ray import LADDER, QUALITY, Controller, added, curve, drive, fn_trainable  # noqa: E402

from mf_sched.visualization import _tune, plot_race, race_data  # noqa: E402
from mf_sched.visualization.report import write_report  # noqa: E402

CKPT = {"should_checkpoint": True}


def test_the_state_file_name_is_the_callbacks() -> None:
    assert _tune.STATE_FILE == STATE_FILE


def test_debug_string_has_one_line_per_rung_with_the_incumbent_and_stops() -> None:
    sched = IISEScheduler(LADDER, metric="acc", mode="max", sigma=0.01, n_trials=6)
    drive(sched)
    text = sched.debug_string()
    lines = text.splitlines()
    assert len(lines) == 1 + LADDER.M
    head = lines[0]
    best = max(QUALITY, key=QUALITY.get)
    assert f"incumbent t{best} acc={curve(QUALITY[best], 9):.4g}" in head and "lower bound" in head
    table = sched.engine.rung_table()
    for m, line in enumerate(lines[1:]):
        assert line.startswith(f"  rung {m} (training_iteration={LADDER.resources[m]:g}):")
        assert f"{table[m]['reported']} reported, {table[m]['stopped']} stopped here" in line
    assert sum(r["stopped"] for r in table) >= 2  # the lines count real stops
    assert f"leader t{best} acc=" in lines[-1]


def test_race_metrics_say_why_a_trial_stopped_and_are_present_from_the_first_result() -> None:
    sched, trials, ctl = added(IISEScheduler(LADDER, metric="acc", mode="max", sigma=0.01, n_trials=6), 0, 3)
    first = sched.race_metrics("t0")
    assert first["race/rung"] == -1 and math.isnan(first["race/bound"]) and first["race/stopped"] == 0
    keys = set(first)
    for e in range(1, 10):  # trial 0 (q = 0.9) runs to the top: the incumbent
        sched.on_trial_result(ctl, trials[0], {"training_iteration": e, "acc": curve(0.9, e), **CKPT})
    for e in (1, 2, 3):  # trial 3 (q = 0.3) is raced against it
        act = sched.on_trial_result(ctl, trials[1], {"training_iteration": e, "acc": curve(0.3, e), **CKPT})
        if act == "STOP":
            break
    m = sched.race_metrics("t3")
    assert set(m) == keys
    assert m["race/stopped"] == 1 and m["race/status"] == "stopped" and m["race/stop_rung"] >= 0
    assert m["race/incumbent"] == "t0" and m["race/incumbent_value"] == pytest.approx(curve(0.9, 9))
    # the curve-aware bound compares observed values: the incumbent's lower bound is its value (no radius)
    assert m["race/bound"] < m["race/incumbent_lower_bound"] <= m["race/incumbent_value"]
    assert m["race/value"] == pytest.approx(curve(0.3, LADDER.resources[m["race/stop_rung"]]))
    assert m["race/stopped_trials"] == 1 and m["race/finished_trials"] == 1
    lo = IISEScheduler(LADDER, metric="loss", mode="min", sigma=0.01)
    assert "race/incumbent_upper_bound" in lo.race_metrics("x") and "race/incumbent_lower_bound" not in lo.race_metrics(
        "x"
    )
    assert isinstance(ctl, Controller)


def test_tuner_shows_the_race_in_the_reporter_results_tensorboard_and_the_plot(
    ray_session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RAY_AIR_NEW_OUTPUT", "0")  # Tune's classic progress reporter prints debug_string()
    log = tmp_path / "epochs.log"
    sched = IISEScheduler(LADDER, sigma=0.01, n_trials=6)
    space = {
        "i": tune.grid_search(list(range(6))),
        "q": tune.sample_from(lambda s: QUALITY[s.config.i]),
        "log": str(log),
    }
    # One trial at a time, in the scheduler's seeded order, so that the trials report in the same order on every run:
    # each asks for every CPU of the session's Ray. With two at once, which of them reported a rung first decided
    # whether one paused, and about one run in six showed no "paused" row. (`max_concurrent_trials=1` would not do:
    # Tune then creates each trial only when the previous one ends, and a trial pauses only while others wait to
    # start.) With the default seed the trials start in the order q = 0.3, 0.5, 0.85, 0.9, 0.88, 0.1: each of the
    # first four is the best at every rung it reaches and goes on (the incumbent changes three times); trial 4
    # (q = 0.88) reaches rung 0 below trial 0 (q = 0.9) while trial 5 waits: ASHA would not promote it, so the
    # anytime schedule pauses it. Reusing the worker process saves starting one per trial and resume (test_ray's
    # Tuner runs cover the path without reuse).
    tuner = tune.Tuner(
        tune.with_resources(fn_trainable, {"cpu": ray.cluster_resources()["CPU"]}),
        param_space=space,
        tune_config=tune.TuneConfig(metric="acc", mode="max", scheduler=sched, reuse_actors=True),
        run_config=tune.RunConfig(
            name="race-visual",
            storage_path=str(tmp_path),
            callbacks=[SchedulerStateCallback(sched)],
            stop={"training_iteration": 9},
            progress_reporter=tune.CLIReporter(metric_columns=["acc"], max_report_frequency=1),
        ),
    )
    results = tuner.fit()
    assert not results.errors
    out = capsys.readouterr().out
    assert "IISEScheduler (racing" in out and "rung 0 (training_iteration=1):" in out and "stopped here" in out
    assert "incumbent " in out
    exp = tmp_path / "race-visual"
    # the decisions reached the result dictionaries: progress.csv and TensorBoard's event files
    rows = [r for p in exp.glob("*/progress.csv") for r in csv.DictReader(p.open())]
    assert {r["race/status"] for r in rows} >= {"paused", "running", "finished"}
    assert sum(math.isfinite(float(r["race/bound"])) for r in rows) > len(rows) / 2
    # every incumbent a result showed had finished, the answer among them (the incumbent changes as better ones finish)
    shown = {r["race/incumbent"] for r in rows if r["race/incumbent"]}
    assert sched.certificate().key in shown and all(sched.engine.status(k) == "finished" for k in shown)
    for r in rows:  # a trial stopped at a result (not while paused) says why
        if r["race/stopped"] == "1":
            assert float(r["race/bound"]) < float(r["race/incumbent_lower_bound"])
    events = b"".join(p.read_bytes() for p in exp.glob("*/events.out.tfevents.*"))
    assert b"race/bound" in events and b"race/incumbent_lower_bound" in events
    # the race read back from the folder, without the scheduler object
    race = race_data(exp)
    cert = sched.certificate()
    assert race.certificate["best"] == cert.key and race.certificate["epsilon"] == pytest.approx(cert.epsilon)
    fates = {r.name: r.fate for r in race.runs}
    assert {k: fates[k] for k in fates} == {
        k: ("best" if k == cert.key else sched.engine.status(k)) for k in sched.engine.keys
    }
    stopped = [r for r in race.runs if r.fate == "stopped"]
    assert stopped and all(r.evidence["bound"] < r.evidence["incumbent_bound"] for r in stopped)
    assert all(r.curve_x.size >= 1 for r in race.runs) and race.time_label.startswith("seconds")
    fig = plot_race(exp)
    names = {t.name for t in fig.data}
    assert "stopped here" in names and "bound on the final value, after each rung" in names
    page = write_report(exp, tmp_path / "race.html").read_text()
    assert cert.key in page and "stopped by the rule" in page
