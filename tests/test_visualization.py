"""mf_sched.visualization on engines built by hand (no framework): what the race plot shows is what the engine
decided, the Ray experiment reader validates what it reads, and importing the package stays light."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mf_sched import FidelityLadder
from mf_sched._serialize import StateFormatError, encode
from mf_sched.racing.engine import RungEliminator
from mf_sched.visualization import RaceData, race_data
from mf_sched.visualization._tune import STATE_FILE, STATE_FORMAT

LADDER = FidelityLadder([1, 3, 9, 27], [0.3, 0.1, 0.03, 0.0], resources=[1, 3, 9, 27])
BIAS = [0.25, 0.08, 0.02, 0.0]
Q = [0.9, 0.5, 0.85, 0.3, 0.7, 0.88]


def acc(q: float, r: float) -> float:
    return q * (1 - 0.3 / r)


def raced(sign: float = 1.0) -> RungEliminator:
    """Runs 0 and 2 finish first; the others are raced against them, rung by rung (as the adapters do). With
    ``sign=-1`` the metric is the loss ``1 − acc`` (the engine holds ``−loss``)."""
    eng = RungEliminator(LADDER, sigma=0.01, n_arms=len(Q), rule="race", race_bias=BIAS)
    for i in range(len(Q)):
        eng.register(f"r{i}")

    def value(q: float, r: float) -> float:
        return acc(q, r) if sign > 0 else -(1 - acc(q, r))

    for i in (0, 2):
        for m, r in enumerate(LADDER.resources):
            eng.report(f"r{i}", m, value(Q[i], r))
    for i in (1, 3, 4, 5):
        for m, r in enumerate(LADDER.resources):
            eng.report(f"r{i}", m, value(Q[i], r))
            if eng.eliminate([f"r{i}"]):
                break
    return eng


def test_the_race_data_is_what_the_engine_decided() -> None:
    eng = raced()
    race = RaceData.from_engine(eng, metric="accuracy")
    cert = eng.certificate()
    assert race.certificate["best"] == cert.key == "r0" and race.certificate["epsilon"] == cert.epsilon
    by = {r.name: r for r in race.runs}
    for k in eng.keys:
        st = eng.status(k)
        assert by[k].fate == ("best" if k == cert.key else st)
        assert by[k].stop_rung == eng.stop_rung(k)
        for m in range(LADDER.M):
            v = eng.value(k, m)
            assert (v is None and math.isnan(by[k].rung_values[m])) or by[k].rung_values[m] == v
    stopped = [r for r in race.runs if r.fate == "stopped"]
    assert {r.name for r in stopped} == {"r1", "r3", "r4"}
    inc_key, lcb = eng.incumbent()
    for r in stopped:
        # the final bound is the engine's; the stop was against a pessimistic bound above it
        assert r.bound == pytest.approx(eng.upper_bound(r.key))
        assert r.evidence["bound"] < r.evidence["incumbent_bound"] <= lcb + 1e-12
        assert r.reason.startswith(f"stopped at rung {r.stop_rung} (value ")
    assert race.incumbent[-1].name == inc_key and race.incumbent[-1].bound == pytest.approx(lcb)
    json.dumps(race.to_dict())  # JSON-safe


def test_the_bound_after_each_rung_is_the_engines_bound_with_the_values_known_then() -> None:
    eng = raced()
    race = RaceData.from_engine(eng)
    for run in race.runs:
        for m in range(run.reached + 1):
            fresh = RungEliminator(LADDER, sigma=0.01, n_arms=len(Q), rule="race", race_bias=BIAS)
            for k in eng.keys:
                fresh.register(k)
            for mm in range(m + 1):
                fresh.report(run.key, mm, eng.value(run.key, mm))
            assert run.bounds[m] == pytest.approx(fresh.upper_bound(run.key)), (run.name, m)
        assert np.isnan(run.bounds[run.reached + 1 :]).all()


def test_a_minimised_metric_is_shown_in_its_own_orientation() -> None:
    eng = raced(sign=-1.0)
    race = RaceData.from_engine(eng, sign=-1, metric="loss")
    assert race.direction == "minimize" and race.certificate["value"] == pytest.approx(1 - acc(Q[0], 27))
    for r in race.runs:
        if r.fate == "stopped":
            assert r.evidence["bound"] > r.evidence["incumbent_bound"] > r.evidence["incumbent_value"]
            assert "is above the upper bound" in r.reason
    assert all(s.bound > s.value for s in race.incumbent)
    with pytest.raises(ValueError, match="sign"):
        RaceData.from_engine(eng, sign=2)


def test_times_order_the_incumbents_and_the_stops() -> None:
    eng = raced()
    # r2 reaches the top before r0 here: it is the first incumbent, r0 replaces it
    times = {k: [10.0 * i + m for m in range(LADDER.M)] for i, k in enumerate(eng.keys)}
    times["r2"] = [1.0, 2.0, 3.0, 4.0]
    times["r0"] = [5.0, 6.0, 7.0, 8.0]
    race = RaceData.from_engine(eng, times=times)
    assert [s.name for s in race.incumbent] == ["r2", "r0"] and race.incumbent[0].time == 4.0
    for r in race.runs:
        if r.fate == "stopped":
            assert r.stop_time >= r.times[r.stop_rung]
    assert race.time_label.startswith("seconds")
    plain = RaceData.from_engine(eng)
    assert plain.time_label == "runs in order of registration"


def test_iise_rule_bounds_are_value_plus_radius_plus_margin() -> None:
    lad = FidelityLadder([1, 3, 9], [0.1, 0.03, 0.0], resources=[1, 3, 9])
    eng = RungEliminator(lad, sigma=0.01, n_arms=3)
    for k, v in {"a": 0.8, "b": 0.3, "c": 0.75}.items():
        eng.report(k, 0, v)
    assert eng.decide_rung(0) == ["b"]
    race = RaceData.from_engine(eng)
    b = next(r for r in race.runs if r.name == "b")
    assert b.bounds[0] == pytest.approx(0.3 + eng.radius("b", 0) + 0.2)
    assert b.evidence["incumbent"] == "a" and b.evidence["incumbent_bound"] == pytest.approx(0.8 - eng.radius("a", 0))
    assert race.certificate["best"] is None and "nothing to certify" in race.summary()


def test_plotly_and_matplotlib_figures_draw_every_decision(tmp_path: Path) -> None:
    pytest.importorskip("plotly", reason="plotly (the 'viz' extra) is not installed")
    pytest.importorskip("matplotlib", reason="matplotlib is not installed")
    from mf_sched.visualization import plot_race
    from mf_sched.visualization.matplotlib import plot_race as plot_race_mpl

    eng = raced()
    race = RaceData.from_engine(eng, metric="accuracy")
    fig = plot_race(race)
    by = {t.name: t for t in fig.data}
    assert len(by["stopped here"].x) == 3
    n_bounds = sum(int((~np.isnan(r.rung_values[:-1])).sum()) for r in race.runs)
    assert len(by["bound on the final value, after each rung"].x) == n_bounds
    assert fig.layout.xaxis.type == "log" and fig.layout.title.text.startswith("Race: r0 = ")
    curves = [t for t in fig.data if t.legendgroup in ("best", "finished", "stopped")]
    assert len(curves) == len(Q)
    ax, ax_time = plot_race_mpl(race)
    path = tmp_path / "race.png"
    ax.figure.savefig(path)
    assert path.stat().st_size > 10_000 and ax.get_xscale() == "log"


def write_experiment(root: Path, eng: RungEliminator, *, mode: str = "max") -> None:
    """A Ray Tune experiment folder as SchedulerStateCallback and Tune's CSV logger leave it (no Ray needed)."""
    root.mkdir(parents=True)
    state = {"engine": eng.state_dict(), "metric": "acc", "mode": mode, "time_attr": "training_iteration",
             "configs": {k: {"q": Q[i]} for i, k in enumerate(eng.keys)}}  # fmt: skip
    doc = {"format": STATE_FORMAT, "scheduler": "IISEScheduler", "state": encode(state)}
    (root / STATE_FILE).write_text(json.dumps(doc))
    for i, k in enumerate(eng.keys):
        d = root / f"trial_{k}"
        d.mkdir()
        with (d / "progress.csv").open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["acc", "training_iteration", "trial_id", "timestamp", "time_this_iter_s"])
            top = eng.reached(k)
            for e in range(1, int(LADDER.resources[top]) + 1):
                w.writerow([acc(Q[i], e), e, k, 1000 + 100 * i + e, 1.0])


def test_a_ray_experiment_folder_is_read_without_ray(tmp_path: Path) -> None:
    eng = raced()
    write_experiment(tmp_path / "exp", eng)
    race = race_data(tmp_path / "exp")
    direct = RaceData.from_engine(eng)
    assert [(r.name, r.fate) for r in race.runs] == [(r.name, r.fate) for r in direct.runs]
    r0 = next(r for r in race.runs if r.name == "r0")
    assert r0.curve_x.tolist() == list(range(1, 28)) and r0.params == {"q": 0.9}
    assert r0.times[0] == pytest.approx(
        1001 - (1001 - 1.0)
    )  # since the first result started and race.source.startswith("Ray Tune experiment")
    assert race_data(tmp_path / "exp" / STATE_FILE).certificate == race.certificate


@pytest.mark.parametrize(
    "content, match",
    [
        ("not json", "not valid JSON"),
        (json.dumps({"format": "other"}), "not a scheduler state"),
        (json.dumps({"format": STATE_FORMAT, "state": {}}), "'engine'"),
        (json.dumps({"format": STATE_FORMAT, "state": {"engine": None}}), "before the rungs were known"),
        (json.dumps({"format": STATE_FORMAT, "state": {"engine": {"format": "x"}, "mode": "max"}}), "RungEliminator"),
    ],
)
def test_a_bad_state_file_is_refused_with_the_reason(tmp_path: Path, content: str, match: str) -> None:
    (tmp_path / STATE_FILE).write_text(content)
    with pytest.raises(ValueError, match=match):
        race_data(tmp_path)


def test_bad_mode_and_missing_state(tmp_path: Path) -> None:
    eng = raced()
    write_experiment(tmp_path / "exp", eng, mode="sideways")
    with pytest.raises(StateFormatError, match="mode"):
        race_data(tmp_path / "exp")
    with pytest.raises(FileNotFoundError, match="SchedulerStateCallback"):
        race_data(tmp_path)


def test_report_of_a_ray_folder_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("plotly", reason="plotly (the 'viz' extra) is not installed")
    from mf_sched.cli import main

    write_experiment(tmp_path / "exp", raced())
    out = tmp_path / "out" / "race.html"
    assert main(["report", str(tmp_path / "exp"), "-o", str(out)]) == 0
    page = out.read_text()
    assert "Race report: exp" in page and "r0 is the best run at the top rung" in page
    assert page.count('<span class="fate"') == len(Q)
    assert main(["report", str(tmp_path / "exp"), "--study", "x"]) == 2
    assert "--study applies to an Optuna storage" in capsys.readouterr().err


def test_importing_the_package_loads_no_plotting_or_framework_module() -> None:
    code = (
        "import sys, json, mf_sched.visualization, mf_sched.visualization.report, mf_sched.visualization.matplotlib\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('plotly', 'optuna', 'ray', 'matplotlib', 'torch'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_uncovered_and_running_runs_are_shown_as_such() -> None:
    pytest.importorskip("plotly", reason="plotly (the 'viz' extra) is not installed")
    from mf_sched.visualization import plot_race
    from mf_sched.visualization._style import subtitle

    eng = RungEliminator(LADDER, sigma=0.01, n_arms=4, rule="race", race_bias=BIAS)
    for m, r in enumerate(LADDER.resources):
        eng.report("best", m, acc(0.9, r))
    eng.report("crashed", 0, acc(0.85, 1))
    eng.mark_lost("crashed")  # its worker died below the top rung: the certificate does not cover it
    eng.report("climbing", 0, acc(0.88, 1))
    race = RaceData.from_engine(eng)
    fates = {r.name: r.fate for r in race.runs}
    assert fates == {"best": "best", "crashed": "lost", "climbing": "running"}
    assert race.certificate["uncovered"] == ["crashed"] and race.certificate["epsilon"] is None
    assert (
        "uncovered: crashed" in subtitle(race)
        and "race in progress (1 run below the top rung can still win)" in race.summary()
    )
    assert "uncovered by the certificate" in next(r.reason for r in race.runs if r.name == "crashed")
    fig = plot_race(race)
    lost = [t for t in fig.data if t.legendgroup == "lost"]
    assert len(lost) == 1 and lost[0].line.dash == "dash"
