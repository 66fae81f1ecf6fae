"""The anytime benchmark's scoring (benchmarks/anytime.py): each method on its own answer at every budget."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ray", reason="benchmarks.anytime scores Ray schedulers (the 'ray' extra)")
from benchmarks.anytime import (  # noqa: E402
    DEHB_METHODS,
    SYNE_METHODS,
    T,
    budget_trajectory,
    draw,
    peer_rows,
    regret_at,
    trajectory,
)


def test_trajectory_answers_as_tunes_scope_last():
    observed = np.array([[0.1, 0.2, 0.3], [0.5, 0.1, 0.9], [0.4, 0.45, 0.5]])
    events = [(0, "add", 0, 0, ""), (1, "result", 0, 1, ""), (2, "result", 1, 1, ""), (3, "result", 1, 2, ""),
              (4, "pause", 1, 2, ""), (5, "result", 2, 1, ""), (6, "result", 1, 3, "")]  # fmt: skip
    spent, answers = trajectory(events, observed, 1.0)
    assert spent.tolist() == [1, 2, 3, 4, 5]
    # after each result: the run whose latest value is best (1's 0.5, then its 0.1 makes 0's 0.1 ... see values)
    assert answers.tolist() == [0, 1, 0, 2, 1]
    spent, answers = trajectory(events, -observed, -1.0)  # a loss reported as is, minimised: the same answers
    assert answers.tolist() == [0, 1, 0, 2, 1]


def test_regret_at_uses_the_last_answer_within_the_budget():
    true_final = np.array([0.2, 0.9, 0.5])
    spent, answers = np.array([2, 5, 9]), np.array([-1, 2, 1])
    r = regret_at(spent, answers, np.array([1, 2, 5, 8, 9, 100]), true_final)
    random_pick = 0.9 - true_final.mean()
    assert r.tolist() == pytest.approx([random_pick, random_pick, 0.4, 0.4, 0.0, 0.0])


# ------------------------------------------------------------------------------------------ peers: DEHB, Syne Tune
ROOT = Path(__file__).resolve().parents[1]


def _peer_python(env: str, venv: str, module: str) -> str | None:
    """A Python that can import ``module``: ``$env``, else the repository's ``venv``, else None."""
    for cand in (os.environ.get(env), str(ROOT / venv / "bin" / "python")):
        if cand and Path(cand).exists():
            ok = subprocess.run([cand, "-c", f"import {module}"], capture_output=True).returncode == 0
            if ok:
                return cand
    return None


def _synthetic_job(K: int = 6, seed: int = 0, source: str = "lcbench") -> tuple:
    """A job of benchmarks.anytime on K synthetic curves (27 epochs) rising in the score's orientation: accuracies
    for ``lcbench``, negated losses for ``taskset`` (reported as losses, minimised)."""
    rng = np.random.default_rng(seed)
    final = rng.uniform(0.5, 0.9, K)
    rate = rng.uniform(2.0, 8.0, K)
    true = final[:, None] * (1 - np.exp(-np.arange(1, T + 1)[None, :] / rate[:, None]))
    return (source, "synthetic", {"true": true, "seeds": true[:, None, :]}, seed, K, None)


def test_budget_trajectory_cuts_a_job_that_ends_past_the_budget():
    spent, answers = budget_trajectory(np.array([1, 3, 0, 9, 27]), np.array([0, 1, 1, 2, 3]), 10.0)
    assert spent.tolist() == [1, 4, 4, 10]  # the 9-epoch job would end at 13: cut at 10, its result never comes
    assert answers.tolist() == [0, 1, 1, 1]
    spent, answers = budget_trajectory(np.array([5, 5]), np.array([0, 1]), 10.0)
    assert spent.tolist() == [5, 10] and answers.tolist() == [0, 1]  # ends exactly at the budget: kept
    spent, answers = budget_trajectory(np.array([27]), np.array([4]), 10.0)
    assert spent.tolist() == [10] and answers.tolist() == [-1]  # nothing finished: no answer (scored as random)


def test_dehb_runner_validates_its_input(tmp_path):
    from benchmarks.dehb_runner import load_sets

    np.savez(tmp_path / "ok.npz", curves_0=np.ones((3, 9)), curves_1=np.ones((4, 9)), maximize=np.array([1, 0]))
    sets, maximize, seed = load_sets(tmp_path / "ok.npz")
    assert [s.shape for s in sets] == [(3, 9), (4, 9)] and maximize.tolist() == [True, False] and seed is None
    np.savez(tmp_path / "bad.npz", curves_0=np.ones((3, 9)), seed=np.array([1, 2]))
    with pytest.raises(ValueError, match="one value per curve set"):
        load_sets(tmp_path / "bad.npz")
    np.savez(tmp_path / "inf.npz", curves_0=np.full((3, 9), np.inf))
    with pytest.raises(ValueError, match="finite"):
        load_sets(tmp_path / "inf.npz")
    np.savez(tmp_path / "obj.npz", curves_0=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError):  # allow_pickle=False: an object array is never unpickled
        load_sets(tmp_path / "obj.npz")


@pytest.mark.parametrize("source", ["lcbench", "taskset"])
def test_dehb_adapter_stops_at_the_budget_and_answers_its_incumbent(tmp_path, source):
    python = _peer_python("MF_SCHED_DEHB_PYTHON", ".venv-dehb", "dehb")
    if python is None:
        pytest.skip("no Python with dehb 0.1.2 (python -m venv .venv-dehb && .venv-dehb/bin/pip install dehb==0.1.2)")
    a = _synthetic_job(K=6, source=source)
    true, obs = draw(a[2], a[0], a[1], a[3], a[4])  # the K configurations in the job's order, the curves shown
    full = true.shape[0] * T
    rows = peer_rows([a], None, python, tmp_path)
    assert {r["method"] for r in rows} == set(DEHB_METHODS.values())
    raw = json.loads((tmp_path / "dehb.json").read_text())["results"][0]
    jobs = np.array(raw["jobs"], dtype=float)
    rows_asked, fidelities = jobs[:, 0].astype(int), jobs[:, 1].astype(int)
    assert set(fidelities.tolist()) <= {1, 3, 9, 27} and 27 in fidelities  # DEHB's brackets: min 1, max 27, eta 3
    # the resume counting trains each configuration once up to the furthest fidelity asked of it
    assert raw["epochs_resume"] == sum(max(fidelities[rows_asked == k], default=0) for k in range(6)) <= full
    assert jobs[:, 3].tolist() == fidelities.tolist()  # from scratch: every job trains its fidelity
    # its answer after every job: a configuration it evaluated, the one with the best value told so far
    for n, ans in enumerate(raw["answers"]):
        told = obs[rows_asked[: n + 1], fidelities[: n + 1] - 1]
        assert ans == rows_asked[int(np.argmax(told))]  # DEHB's incumbent: the best value told, at any fidelity
    # rising curves: once a configuration was evaluated at the top, the answer is one evaluated at the top
    first_top = int(np.argmax(fidelities == 27))
    for ans in raw["answers"][first_top:]:
        assert ans in set(rows_asked[fidelities == 27].tolist())
    # budgets are enforced exactly: 0.1× a full search's epochs buy only the jobs that end within them
    scratch = next(r for r in rows if r["method"] == DEHB_METHODS["scratch"])
    assert scratch["epochs"] == full  # from scratch, DEHB spends a full search's epochs (and is cut there)
    spent, answers = budget_trajectory(jobs[:, 3], np.array(raw["answers"]), 0.1 * full)
    assert spent[-1] == pytest.approx(0.1 * full) and (np.diff(spent) >= 0).all()
    done = int(np.searchsorted(np.cumsum(jobs[:, 3]), 0.1 * full, side="right"))
    assert answers[-1] == (raw["answers"][done - 1] if done else -1)
    regret = regret_at(spent, answers, np.array([0.1 * full]), true[:, -1])[0]
    assert regret == pytest.approx(scratch["regret"][0])


@pytest.mark.slow
def test_syne_tune_peers_give_an_anytime_trajectory(tmp_path):
    python = _peer_python("MF_SCHED_SYNE_PYTHON", ".venv-syne", "syne_tune")
    if python is None:
        pytest.skip("no Python with syne-tune 0.16 (see benchmarks/syne_tune_runner.py)")
    a = _synthetic_job(K=9, seed=1)
    _, obs = draw(a[2], a[0], a[1], a[3], a[4])  # the noisy curves the schedulers were shown
    rows = peer_rows([a], python, None, tmp_path)
    assert {r["method"] for r in rows} == set(SYNE_METHODS.values())
    raw = json.loads((tmp_path / "syne.json").read_text())["results"]
    for r in raw:
        events = np.array(r["events"])
        assert len(events) == r["total_epochs"] == sum(r["epochs"])
        for k in range(9):  # each configuration's epochs come in order, 1, 2, … (ASHA stops; it never pauses)
            assert events[events[:, 0] == k, 1].tolist() == list(range(1, r["epochs"][k] + 1))
        # the answer after each result: the configuration with the best value reported so far, at any epoch
        for n, ans in enumerate(r["answers"]):
            seen = events[: n + 1]
            vals = obs[seen[:, 0], seen[:, 1] - 1]
            assert ans == seen[int(np.argmax(vals)), 0]
    asha, bohb = (next(r for r in raw if r["scheduler"] == s) for s in ("ASHA", "BOHB"))
    assert asha["events"] == bohb["events"]  # every configuration given: BOHB's KDE never chooses; ASHA's rule


def test_replot_filters_a_saved_run(tmp_path, capsys):
    import argparse

    from benchmarks.anytime import PLOT_BUDGETS, replot

    def entry(source: str, K: int, method: str) -> dict:
        return {"part": "ray", "source": source, "K": K, "method": method, "runs": 2, "K_run_mean": float(K),
                "regret": {"0.1": 0.1, "0.3": 0.03, "1.0": 0.0}, "regret_median": {"0.1": 0.1, "0.3": 0.03, "1.0": 0.0},
                "regret_end": 0.0, "epochs_fraction": 0.5, "same_as_full": 1.0, "within": 1.0,
                "curve": np.linspace(0.2, 0.001, PLOT_BUDGETS.size).tolist()}  # fmt: skip

    summary = {f"ray|{s}|{k}|{m}": entry(s, k, m) for s in ("lcbench", "taskset") for k in (24, 64)
               for m in ("ASHA (Ray)", "DEHB (from scratch)")}  # fmt: skip
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps({"summary": summary}))
    out = tmp_path / "fig.png"
    ns = argparse.Namespace(sources="lcbench", K="24", methods="DEHB", out=str(out))
    assert replot(saved, ns) == 0
    printed = capsys.readouterr().out
    assert "lcbench, K = 24" in printed and "DEHB (from scratch)" in printed
    assert "ASHA (Ray)" not in printed and "taskset" not in printed and "K = 64" not in printed
    pytest.importorskip("matplotlib")
    assert out.exists()
    (tmp_path / "bad.json").write_text(json.dumps([1, 2]))
    assert replot(tmp_path / "bad.json", ns) == 2
    assert replot(saved, argparse.Namespace(sources="deepobs-acc", K="24", methods=None, out=str(out))) == 2
