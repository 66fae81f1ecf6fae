"""optuna-dashboard, started against a study's SQLite file as a user would, shows the race: the pruned trials'
decision attributes (``race:*``) in the trial page's data, and the certificate in the study's. Slow; skipped, with
the reason, where optuna-dashboard is not installed."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

optuna = pytest.importorskip("optuna", reason="the 'optuna' extra is not installed")
pytest.importorskip("optuna_dashboard", reason="optuna-dashboard (the 'dev' extra) is not installed")

from mf_sched.integrations.optuna import MFPruner, MFSampler  # noqa: E402

DASHBOARD = shutil.which("optuna-dashboard") or str(Path(sys.executable).parent / "optuna-dashboard")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read().decode())


def test_the_dashboard_shows_why_each_trial_was_pruned(tmp_path: Path) -> None:
    if not Path(DASHBOARD).is_file():
        pytest.skip("the optuna-dashboard command is not installed")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    db = tmp_path / "study.db"
    qs = [0.9, 0.5, 0.8, 0.3, 0.7]

    def objective(trial: optuna.Trial) -> float:
        q = trial.suggest_categorical("q", qs)
        acc = 0.0
        for epoch in range(1, 28):
            acc = q * (1 - 0.3 / epoch)
            trial.report(acc, epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return acc

    study = optuna.create_study(
        direction="maximize", study_name="dash", storage=f"sqlite:///{db}",
        sampler=MFSampler(search_space={"q": qs}), pruner=MFPruner(),
    )  # fmt: skip
    study.optimize(objective, n_trials=30)
    pruned = {t.number: t for t in study.trials if t.state == optuna.trial.TrialState.PRUNED}
    assert len(pruned) >= 2
    port = free_port()
    log = (tmp_path / "dashboard.log").open("w")
    server = subprocess.Popen(
        [DASHBOARD, f"sqlite:///{db}", "--host", "127.0.0.1", "--port", str(port)], stdout=log, stderr=log
    )
    try:
        base = f"http://127.0.0.1:{port}"
        studies = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and studies is None:
            try:
                studies = get_json(f"{base}/api/studies")["study_summaries"]
            except OSError:
                if server.poll() is not None:
                    pytest.fail(f"optuna-dashboard exited: {(tmp_path / 'dashboard.log').read_text()[-2000:]}")
                time.sleep(0.5)
        assert studies, "optuna-dashboard did not answer within 60 s"
        sid = next(s["study_id"] for s in studies if s["study_name"] == "dash")
        # the trial pages are served, and their data (the study's detail) carries the decision attributes
        with urllib.request.urlopen(f"{base}/dashboard/studies/{sid}/trials", timeout=10) as r:
            assert r.status == 200 and b"<html" in r.read().lower()
        detail = get_json(f"{base}/api/studies/{sid}?after=0")
        seen = 0
        for t in detail["trials"]:
            attrs = {a["key"]: a["value"] for a in t["user_attrs"]}
            if t["number"] not in pruned:
                assert "race:bound" not in attrs
                continue
            seen += 1
            assert t["state"].lower() == "pruned"
            mine = pruned[t["number"]].user_attrs
            paused = bool(pruned[t["number"]].system_attrs.get("mf:paused"))
            keys = ("race:rung", "race:value", "race:bound", "race:bias_source", "race:reason")
            # a trial the anytime schedule paused says against which cut; one the rule stopped, which incumbent
            keys += ("race:cut",) if paused else ("race:incumbent_value", "race:incumbent_lower_bound")
            for key in keys:
                assert attrs[key] == str(mine[key]), key
            if paused:
                assert float(attrs["race:value"]) < float(attrs["race:cut"]) and "paused" in attrs["race:reason"]
            else:
                assert float(attrs["race:bound"]) < float(attrs["race:incumbent_lower_bound"])
        assert seen == len(pruned)
        study_attrs = {a["key"]: a["value"] for a in detail["user_attrs"]}
        cert = json.loads(study_attrs["race:certificate"])
        assert cert["best_trial"] == study.best_trial.number and cert["delta"] == 0.05
        assert "is the best run at the top rung" in study_attrs["race:summary"]
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
