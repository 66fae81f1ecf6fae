"""Seeing the race of an Optuna study: the numbers behind each stop on the pruned trial (``race:*`` user attributes),
the certificate on the study, the race read back from the storage alone, the plot and the report."""

from __future__ import annotations

import collections
import math
from pathlib import Path

import pytest

optuna = pytest.importorskip("optuna", reason="the 'optuna' extra is not installed")
pytest.importorskip("plotly", reason="plotly (the 'viz' extra) is not installed")

from mf_sched.integrations.optuna import MFPruner, MFSampler, finish, train_to  # noqa: E402
from optuna.trial import TrialState  # noqa: E402

from mf_sched import FidelityLadder  # noqa: E402
from mf_sched.cli import main  # noqa: E402
from mf_sched.visualization import plot_race, race_data  # noqa: E402
from mf_sched.visualization.report import load, write_report  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)
QUALITY = {"a": 0.55, "b": 0.62, "c": 0.90, "d": 0.70, "e": 0.40, "f": 0.80}
# the candidates in this order, the best first (MFSampler starts them in order): every run makes the same race
SPACE = {"config": ["c", "a", "f", "e", "d", "b"]}


def curve(q: float, epoch: int) -> float:
    return q * (1 - 0.15 * math.exp(-(epoch - 1) / 3))


def ordinary(trial: optuna.Trial) -> float:
    name = trial.suggest_categorical("config", SPACE["config"])
    acc = 0.0
    for epoch in range(1, 28):
        acc = curve(QUALITY[name], epoch)
        trial.report(acc, epoch)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return acc


def loss_objective(trial: optuna.Trial) -> float:
    q = trial.suggest_float("q", 0.0, 1.0)
    loss = 0.0
    for epoch in range(1, 28):
        loss = (1.2 - q) * (1 + 2.0 / epoch)
        trial.report(loss, epoch)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return loss


def continuous(trial: optuna.Trial) -> float:
    x, y = trial.suggest_float("x", 0.0, 1.0), trial.suggest_float("y", 0.0, 1.0)
    acc = 0.0
    for epoch in range(1, 28):
        acc = (0.3 + 0.6 * x * (1 - abs(y - 0.5))) * (1 - 0.3 * math.exp(-epoch / 4))
        trial.report(acc, epoch)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return acc


def assert_evidence_is_the_decision(study: optuna.Study, word: str = "race:incumbent_lower_bound") -> list:
    """Every pruned trial says why, and the numbers are those of the study."""
    trials = {t.number: t for t in study.trials}
    pruned = [t for t in study.trials if t.state == TrialState.PRUNED]
    assert pruned
    maximize = study.direction == optuna.study.StudyDirection.MAXIMIZE
    for t in pruned:
        a = t.user_attrs
        assert a["race:rule"] == "race" and a["race:delta"] == 0.05 and a["race:bias_source"]
        assert a["race:value"] == pytest.approx(t.intermediate_values[a["race:step"]])
        if t.system_attrs.get("mf:paused"):  # paused by the anytime schedule (ASHA's cut), not stopped
            # its configuration may run again with MFSampler; a trial of any other sampler never runs again
            again = "may run again" if isinstance(study.sampler, MFSampler) else "never runs again"
            assert "at rung" in a["race:reason"] and again in a["race:reason"]
            assert (a["race:value"] < a["race:cut"]) if maximize else (a["race:value"] > a["race:cut"])
            continue
        # the curve-aware bound compares observed values: the incumbent's bound is its value (no radius)
        if maximize:
            assert a["race:bound"] < a[word] <= a["race:incumbent_value"]
        else:
            assert a["race:bound"] > a[word] >= a["race:incumbent_value"]
        inc = trials[a["race:incumbent_trial"]]
        assert inc.state == TrialState.COMPLETE and inc.number < t.number
        assert a["race:incumbent_value"] == pytest.approx(inc.value)
        assert "stopped at rung" in a["race:reason"] and a["race:incumbent"] in a["race:reason"]
    return pruned


def test_pruned_trials_record_why_and_the_study_its_certificate(tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path / 'race.db'}"
    sampler = MFSampler(search_space=SPACE)
    study = optuna.create_study(
        direction="maximize", sampler=sampler, pruner=MFPruner(), storage=storage, study_name="race"
    )
    study.optimize(ordinary, n_trials=100)
    assert_evidence_is_the_decision(study)
    cert = study.user_attrs["race:certificate"]
    rec = sampler.recommendation(study)
    assert cert["best_trial"] == study.best_trial.number and cert["value"] == pytest.approx(study.best_value)
    assert cert["epsilon"] == pytest.approx(rec.details["epsilon"]) and cert["delta"] == 0.05
    assert cert["bias_source"] == rec.details["bias_source"] and cert["counts"] == rec.details["counts"]
    assert f"(trial {study.best_trial.number})" in study.user_attrs["race:summary"]
    assert study.user_attrs["race:config"]["adapter"] == "MFSampler"
    # a fresh process with the default sampler and pruner sees the same race, from the storage alone
    loaded = optuna.load_study(study_name="race", storage=storage)
    live, back = race_data(study), race_data(loaded)
    assert [(r.name, r.fate, r.stop_rung) for r in back.runs] == [(r.name, r.fate, r.stop_rung) for r in live.runs]
    assert back.certificate == live.certificate
    for r in back.runs:
        ts = [loaded.trials[n] for n in r.trials]
        ivs = {float(s): v for t in ts for s, v in t.intermediate_values.items()}
        assert dict(zip(r.curve_x.tolist(), r.curve_y.tolist())) == pytest.approx(ivs)
        if r.fate == "stopped":
            t = ts[-1]
            assert r.evidence["bound"] == pytest.approx(t.user_attrs["race:bound"])
            assert r.reason == t.user_attrs["race:reason"]
            assert r.stop_time is not None and r.stop_time >= r.times[r.stop_rung]
    assert back.certificate["best"] == f"config {sampler.arm_of(study.best_trial)}"


def test_minimised_loss_with_any_sampler_and_mfpruner() -> None:
    # the racing cut alone (no ASHA pauses), with the unconditional ζ⁺ prior, which is tighter than the
    # curve-aware bound on this loss: the rule itself stops trials, and says why in the minimised wording
    pruner = MFPruner(bound="zeta+", schedule="best-first")
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.RandomSampler(seed=0), pruner=pruner)
    study.optimize(loss_objective, n_trials=25)
    pruned = assert_evidence_is_the_decision(study, word="race:incumbent_upper_bound")
    assert all("race:incumbent_lower_bound" not in t.user_attrs for t in pruned)
    stopped = [t for t in pruned if not t.system_attrs.get("mf:paused")]
    assert stopped and "is above the upper bound" in stopped[0].user_attrs["race:reason"]
    assert study.user_attrs["race:config"]["adapter"] == "MFPruner"
    race = race_data(study)
    assert race.direction == "minimize" and race.certificate["best"] == f"trial {study.best_trial.number}"
    assert race.certificate["value"] == pytest.approx(study.best_value)
    # a new incumbent has a smaller (better) upper bound than the one before
    bounds = [s.bound for s in race.incumbent]
    assert bounds and all(a > b for a, b in zip(bounds, bounds[1:]))
    assert all(s.value < s.bound for s in race.incumbent)
    stopped = [r for r in race.runs if r.fate == "stopped"]
    assert {r.name for r in stopped} == {f"trial {t.number}" for t in pruned}


CHECKPOINTS: dict[str, int] = {}


def resumable(trial: optuna.Trial) -> float:
    name = trial.suggest_categorical("config", SPACE["config"])
    start = CHECKPOINTS.get(name, 0)
    acc = 0.0
    for epoch in range(start + 1, train_to(trial) + 1):
        acc = curve(QUALITY[name], epoch)
        trial.report(acc, epoch)
    CHECKPOINTS[name] = train_to(trial)
    return finish(trial, acc)


def test_a_resumable_objective_records_the_stop_on_the_trial_whose_result_decided_it() -> None:
    CHECKPOINTS.clear()
    sampler = MFSampler(max_resource=27, search_space=SPACE)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    study.optimize(resumable, n_trials=100)
    race = race_data(study)
    stopped = [r for r in race.runs if r.fate == "stopped"]
    assert stopped
    noted = [t for t in study.trials if "race:bound" in t.user_attrs]
    assert (
        noted
    )  # a configuration stopped by the result of its own trial says so on that trial; one stopped later (a better
    # incumbent arrived while it waited) has its evidence reconstructed in the plot
    for t in noted:
        assert sampler.arm_of(t) in [r.key for r in stopped]
        assert t.user_attrs["race:bound"] < t.user_attrs["race:incumbent_lower_bound"]
    for r in stopped:
        assert r.evidence["bound"] < r.evidence["incumbent_bound"] and r.reason.startswith("stopped at rung")
    assert collections.Counter(r.fate for r in race.runs)["best"] == 1


def test_iise_rule_records_its_own_evidence() -> None:
    lad = FidelityLadder(costs=[1, 3, 9], zeta=[0.1, 0.03, 0.0], resources=[1, 3, 9])
    study = optuna.create_study(
        direction="maximize", sampler=optuna.samplers.RandomSampler(seed=1), pruner=MFPruner(lad, rule="iise")
    )

    def obj(trial: optuna.Trial) -> float:
        q = trial.suggest_float("q", 0.0, 1.0)
        for epoch in range(1, 10):
            trial.report(q, epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return q

    study.optimize(obj, n_trials=20)
    pruned = [t for t in study.trials if t.state == TrialState.PRUNED]
    assert pruned
    for t in pruned:
        a = t.user_attrs
        assert a["race:rule"] == "iise" and a["race:bound"] < a["race:incumbent_lower_bound"]
    race = race_data(study)
    assert race.rule == "iise" and {r.name for r in race.runs if r.fate == "stopped"} == {
        f"trial {t.number}" for t in pruned
    }


def test_plot_report_and_cli_from_a_journal_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    path = tmp_path / "journal.log"
    storage = JournalStorage(JournalFileBackend(str(path)))
    study = optuna.create_study(
        direction="maximize", sampler=MFSampler(search_space=SPACE), pruner=MFPruner(), storage=storage, study_name="j1"
    )
    study.optimize(ordinary, n_trials=100)
    fig = plot_race(study)
    stops = next(t for t in fig.data if t.name == "stopped here")
    # one mark per configuration the rule stopped (a configuration paused by the schedule is not stopped)
    eng = study.sampler.engine(study)
    n_stopped = sum(eng.status(k) == "stopped" for k in eng.keys)
    assert n_stopped and len(stops.x) == n_stopped and all("stopped at rung" in s for s in stops.text)
    assert "ε = " in fig.layout.title.text and "δ = 0.05" in fig.layout.title.text
    from mf_sched.visualization.matplotlib import plot_race as plot_race_mpl

    ax, ax_time = plot_race_mpl(study)
    assert ax.figure.get_suptitle().startswith("Race: config") and ax_time.get_xlabel().startswith("seconds")
    out = tmp_path / "report.html"
    assert main(["report", str(path), "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out.resolve())
    page = out.read_text()
    assert "Race report: j1" in page and page.count("stopped by the rule") >= n_stopped
    assert 'id="race-plot"' in page and "plotly" in page
    # a second study: the storage now needs --study
    optuna.create_study(storage=storage, study_name="j2")
    assert main(["report", str(path), "-o", str(out)]) == 2
    assert "choose one with --study: j1, j2" in capsys.readouterr().err
    assert main(["report", str(path), "--study", "j1", "--static", "-o", str(out)]) == 0
    assert "data:image/png;base64," in out.read_text()
    assert main(["report", str(path), "--study", "j2", "-o", str(out)]) == 2  # nothing raced
    assert "nothing to plot" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "missing.db")]) == 2
    assert main(["report", f"sqlite:///{tmp_path / 'missing.db'}"]) == 2
    assert not (tmp_path / "missing.db").exists()  # reading never creates a storage


def test_a_malformed_stored_configuration_is_refused() -> None:
    study = optuna.create_study(direction="maximize", pruner=MFPruner())
    study.optimize(ordinary, n_trials=8)
    study.set_user_attr("race:config", {"version": 1, "adapter": "MFPruner", "ladder": {"costs": "x"}})
    fresh = optuna.load_study(study_name=study.study_name, storage=study._storage)
    with pytest.raises(ValueError, match="race:config is malformed"):
        race_data(fresh)
    with pytest.raises(TypeError, match="cannot be plotted"):
        race_data(42)


def test_write_report_of_a_live_study_escapes_what_the_study_holds(tmp_path: Path) -> None:
    study = optuna.create_study(direction="maximize", sampler=MFSampler(), pruner=MFPruner(), study_name="<b>x</b>")

    def obj(trial: optuna.Trial) -> float:
        name = trial.suggest_categorical("config", ["<script>alert(1)</script>", "ok", "better"])
        q = {"ok": 0.5, "better": 0.9}.get(name, 0.2)
        for epoch in range(1, 10):
            trial.report(curve(q, epoch), epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return curve(q, 9)

    study.optimize(obj, n_trials=20)
    page = write_report(study, tmp_path / "r.html").read_text()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "Race report: &lt;b&gt;x&lt;/b&gt;" in page


def test_a_study_mf_sched_never_raced_is_drawn_without_a_certificate(tmp_path: Path) -> None:
    """TPESampler + MedianPruner: curves, where each run ended, and no word of a certificate (it said "ε = 0 · δ =
    0.05" and "guarantee holds: yes" before)."""
    study = optuna.create_study(
        direction="maximize", sampler=optuna.samplers.TPESampler(seed=0), pruner=optuna.pruners.MedianPruner()
    )
    study.optimize(ordinary, n_trials=12)
    race = race_data(study)
    c = race.certificate
    assert c["raced"] is False and c["certified"] is False and c["epsilon"] is None
    assert "not raced by mf-sched" in race.summary() and "no certificate" in race.title()
    assert {r.fate for r in race.runs} <= {"best", "finished", "lost"}  # no stop it did not decide
    page = write_report(study, tmp_path / "foreign.html").read_text()
    assert "not raced by mf-sched" in page and "ε = 0" not in page
    assert "guarantee holds" not in page and "δ" not in page.split("</table>", 1)[0]


def test_a_finished_tpe_study_is_not_reported_in_progress_nor_its_pruned_trials_paused(tmp_path: Path) -> None:
    """Issue 33: TPESampler + MFPruner, every trial finished. The report said "race in progress … running N" and
    every trial ASHA's cut pruned was "paused … it may run again", though a pruned trial of a sampler that
    proposes new configurations never runs again: they are uncovered (ended below the top without being
    stopped)."""
    study = optuna.create_study(
        direction="maximize", sampler=optuna.samplers.TPESampler(seed=0), pruner=MFPruner(), study_name="tpe"
    )
    study.optimize(continuous, n_trials=40)
    paused = [t for t in study.trials if t.system_attrs.get("mf:paused")]
    assert paused and all(t.state == TrialState.PRUNED for t in paused)
    loaded = optuna.load_study(study_name="tpe", storage=study._storage)  # as `mf-sched report` reads it
    for source in (study, loaded):
        race = race_data(source)
        c = race.certificate
        assert c["counts"]["running"] == 0 and "in progress" not in race.summary() + race.title()
        by_trial = {r.trials[0]: r for r in race.runs}
        for t in paused:
            r = by_trial[t.number]
            assert r.fate == "lost" and f"trial {t.number}" in c["uncovered"]
            assert "may run again" not in r.reason and "ASHA's cut" in r.reason and "never runs again" in r.reason
        assert "abandoned below the top rung without being stopped" in c["statement"]
    # what the pruner stored on the study at its last decision (optuna-dashboard's study page): the trial deciding then
    # was running, the pruned ones are not (it counted every one of them running)
    counts = study.user_attrs["race:certificate"]["counts"]
    assert counts["running"] <= 1 and counts["lost"] >= len(paused) - 1
    for t in paused:  # what optuna-dashboard shows on the trial: the same words
        assert "ASHA's cut" in t.user_attrs["race:reason"] and "never runs again" in t.user_attrs["race:reason"]
        assert "may run again" not in t.user_attrs["race:reason"]
    page = write_report(loaded, tmp_path / "tpe.html").read_text()
    table = page.split('id="runs"', 1)[1]
    assert "race in progress" not in page and "may run again" not in table and "still racing" not in table
    assert "running 0" in page and f"lost {len(paused)}" in page


def test_a_stopped_mfsampler_race_says_its_paused_configurations_may_run_again_and_is_not_in_progress() -> None:
    """The other side of issue 33: MFSampler stopped early (n_trials) with configurations paused by the anytime
    schedule. They are paused (their configuration may run again when the study goes on), and with no trial
    running the race is not "in progress"."""
    study = optuna.create_study(direction="maximize", sampler=MFSampler(search_space=SPACE), pruner=MFPruner())
    study.optimize(ordinary, n_trials=6)  # config 3 was paused at rung 0 while the others were tried
    race = race_data(study)
    fates = collections.Counter(r.fate for r in race.runs)
    assert fates["paused"] > 0 and fates["running"] == 0
    for r in race.runs:
        if r.fate == "paused":
            assert "may run again" in r.reason
    assert "in progress" not in race.summary() + race.title()
    assert "race not over" in race.certificate["statement"] and "paused" in race.certificate["statement"]
    assert race.certificate["counts"]["paused"] == fates["paused"] and race.certificate["counts"]["running"] == 0


def test_a_journal_cut_mid_line_is_reported_with_a_warning_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 33: a worker killed while writing leaves the journal's last line cut. Optuna skips it silently; the
    report reads the complete records, warns (IncompleteJournalWarning, on stderr for the command) and says on the
    page which file and how much it skipped."""
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    from mf_sched.visualization.report import IncompleteJournalWarning

    path = tmp_path / "journal.log"
    storage = JournalStorage(JournalFileBackend(str(path)))
    study = optuna.create_study(
        direction="maximize", sampler=MFSampler(search_space=SPACE), pruner=MFPruner(), storage=storage, study_name="j"
    )
    study.optimize(ordinary, n_trials=12)
    whole = path.read_bytes()
    last = whole[:-1].rsplit(b"\n", 1)[1]
    path.write_bytes(whole[: -1 - len(last) // 2])  # the last record cut mid-line: no end of line
    cut = len(last) - len(last) // 2
    out = tmp_path / "report.html"
    with pytest.warns(IncompleteJournalWarning, match=rf"{path}.*incomplete last record \({cut} bytes"):
        page = write_report(str(path), out).read_text()
    assert "Race report: j" in page and 'id="warnings"' in page
    note = page.split('id="warnings"', 1)[1].split("</", 1)[0]
    assert str(path) in note and f"{cut} bytes" in note
    assert main(["report", str(path), "-o", str(out)]) == 0
    assert f"warning: {path}" in capsys.readouterr().err
    # a line that is not a journal record in the middle (Optuna refuses the whole file): skipped, never run
    lines = whole.split(b"\n")
    hostile = b'{"op_code": "__import__(\'os\').system(\'touch pwned\')", "worker_id": "x"}'
    path.write_bytes(b"\n".join([*lines[:5], hostile, b"not json", *lines[5:]]))
    with pytest.warns(IncompleteJournalWarning, match=r"2 lines that are not journal records \(lines 6, 7"):
        race, name = load(str(path))
    assert name == "j" and race.warnings and not (tmp_path / "pwned").exists()
    path.write_bytes(b"a,b\n1,2\n")  # not a journal at all
    with pytest.raises(ValueError, match="not an Optuna journal"):
        load(str(path))


def tpe_like_study(n: int) -> optuna.Study:
    """A finished TPE + MFPruner study of `n` trials over a continuous space, built in a second by adding the trials
    (most pruned by ASHA's cut at 1, 3 or 9 epochs, about 5% trained to 27): the report reads it as it reads one
    that `study.optimize` ran (the race configuration stored with it, the trials' values and race attributes)."""
    import datetime
    import random

    from optuna.distributions import FloatDistribution
    from optuna.trial import create_trial

    small = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0), pruner=MFPruner())
    small.optimize(continuous, n_trials=12)
    study = optuna.create_study(direction="maximize")
    study.set_user_attr("race:config", small.user_attrs["race:config"])
    rng = random.Random(0)
    dist = {"x": FloatDistribution(0, 1), "y": FloatDistribution(0, 1)}
    t0 = datetime.datetime(2026, 1, 1)
    trials = []
    for i in range(n):
        x, y, u = rng.random(), rng.random(), rng.random()
        top = 27 if u < 0.055 else 9 if u < 0.12 else 3 if u < 0.3 else 1
        iv = {e: (0.3 + 0.6 * x * (1 - abs(y - 0.5))) * (1 - 0.3 * math.exp(-e / 4)) for e in range(1, top + 1)}
        kw = {"params": {"x": x, "y": y}, "distributions": dist, "intermediate_values": iv}
        if top == 27:
            t = create_trial(state=TrialState.COMPLETE, value=iv[27], **kw)
        else:
            rung = {1: 0, 3: 1, 9: 2}[top]
            t = create_trial(
                state=TrialState.PRUNED, system_attrs={"mf:paused": True, "mf:pruned_rung": rung},
                user_attrs={"race:rule": "race", "race:rung": rung, "race:step": top, "race:value": iv[top],
                            "race:cut": iv[top] + 0.01, "race:reason": f"paused at rung {rung}: it may run again"},
                **kw,
            )  # fmt: skip
        t.datetime_start = t0 + datetime.timedelta(seconds=i)
        t.datetime_complete = t.datetime_start + datetime.timedelta(seconds=0.5)
        trials.append(t)
    study.add_trials(trials)
    return study


def test_the_report_of_a_large_study_is_fast_and_its_page_bounded(tmp_path: Path) -> None:
    """Issue 35: with 2,000 trials the figure took 6 s (a plotly trace per run), the page 7.5 MB (2.6 MB besides
    plotly.js, which the page inlines) and the PNG report 15 s (a matplotlib line per run and per bound). Now a
    trace per fate, the runs table capped, the PNG's lines drawn as collections."""
    import time

    from mf_sched.visualization.report import MAX_ROWS

    study = tpe_like_study(2000)
    start = time.perf_counter()
    fig = plot_race(study)
    took_plot = time.perf_counter() - start
    assert len(fig.data) < 20  # was one trace per run
    start = time.perf_counter()
    page = write_report(study, tmp_path / "big.html").read_text()
    took_report = time.perf_counter() - start
    start = time.perf_counter()
    png = write_report(study, tmp_path / "big-png.html", interactive=False).read_text()
    took_png = time.perf_counter() - start
    assert took_plot < 10 and took_report < 10 and took_png < 10, (took_plot, took_report, took_png)
    script = page.index("<script>/**")  # plotly.js, inlined: 4.8 MB whatever the study
    besides_plotly = len(page) - (page.index("</script>", script) - script)
    assert besides_plotly < 1_500_000, besides_plotly
    assert len(png) < 2_000_000
    table = page.split('id="runs"', 1)[1].split("</table>", 1)[0]
    assert table.count("<tr>") == MAX_ROWS + 1 and f"and {2000 - MAX_ROWS:,} more runs, not listed" in table
    assert "race in progress" not in page and "running 0" in page  # issue 33 at scale
