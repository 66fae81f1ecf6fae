"""The Optuna quickstart runs end to end (a few trials of the zero-configuration flow on heartbeat storage)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("optuna", reason="the 'optuna' extra is not installed")
pytest.importorskip("sklearn", reason="the 'gp' extra (scikit-learn) is not installed")


def test_optuna_quickstart_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from examples import optuna_quickstart

    monkeypatch.chdir(tmp_path)
    db = tmp_path / "qs.db"
    monkeypatch.setattr(sys, "argv", ["optuna_quickstart", "--storage", f"sqlite:///{db}", "--max-trials", "4"])
    optuna_quickstart.main()
    out = capsys.readouterr().out
    assert "recommended:" in out and "certificate:" in out
    saved = json.loads((tmp_path / "results" / "optuna_quickstart.json").read_text())
    assert saved["n_trials"] == 4 and saved["epochs"] >= 27  # the first trial trains to the top (27 epochs)
    assert saved["full_fidelity_epochs"] == 140 * 27  # every candidate of the 7 × 4 × 5 grid at 27 epochs
    assert db.is_file()
