"""``mf-sched simulate`` used by a careless or hostile user (issue 19, defects 3 and 6–9): every mistake is a
one-line error naming the problem, Ctrl-C stops the worker processes, tied best arms cannot hang a run, and
the default δ is reported with its bounds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mf_sched import FidelityLadder, Instance
from mf_sched.cli import main
from mf_sched.sim.simulate import is_correct, policy_for, run_many, run_policy

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def small_file(tmp_path, small_instance) -> str:
    path = tmp_path / "small.json"
    small_instance.save(path)
    return str(path)


@pytest.fixture
def tied_file(tmp_path) -> str:
    path = tmp_path / "tied.json"
    Instance(
        [[0.4, 0.5], [0.6, 0.7], [0.6, 0.7]],
        FidelityLadder([1.0, 10.0], [0.15, 0.0]),
        {"kind": "gaussian", "sigma": 0.1},
    ).save(path)
    return str(path)


def _simulate(*args: str) -> int:
    return main(["simulate", "--no-progress", *args])


@pytest.mark.parametrize("key", ["delta", "budget"])
def test_param_delta_and_budget_are_the_options(small_file, capsys, key):
    """Defect 7: ``--param delta=``/``budget=`` raised a raw TypeError; they now mean ``--delta``/``--budget``."""
    value = "0.1" if key == "delta" else "5000"
    assert (
        _simulate("--policy", "se", "--instance", small_file, "--runs", "2", "--param", f"{key}={value}", "--json") == 0
    )
    out = json.loads(capsys.readouterr().out)
    if key == "delta":
        assert out["delta"] == 0.1
    else:
        assert out["cost"]["mean"] <= 5000
    assert _simulate("--policy", "se", "--instance", small_file, "--param", f"{key}={value}", f"--{key}", value) == 2
    assert "given twice" in capsys.readouterr().err
    assert _simulate("--policy", "se", "--instance", small_file, "--param", f"{key}=abc") == 2
    err = capsys.readouterr().err
    assert f"--param {key}='abc'" in err and "Traceback" not in err


def test_param_seed_and_instance_fields_are_refused(small_file, capsys):
    assert _simulate("--policy", "se", "--instance", small_file, "--param", "seed=3") == 2
    assert "use --seed" in capsys.readouterr().err
    assert _simulate("--policy", "se", "--instance", small_file, "--param", "n_arms=3") == 2
    assert "set by the instance" in capsys.readouterr().err
    with pytest.raises(ValueError, match="argument of its own"):
        run_many("se", Instance([[0.2], [0.8]], FidelityLadder([1.0]), {"kind": "bernoulli"}), params={"delta": 0.1})


def test_bad_values_name_the_parameter(small_file, tmp_path, capsys):
    """Defect 9: ``epsilon=abc`` did not name the parameter; ``--jobs -5`` became 1; a directory was
    reported as a missing file."""
    assert _simulate("--policy", "lucb1", "--instance", small_file, "--param", "epsilon=abc") == 2
    assert "parameter epsilon = 'abc' must be a number" in capsys.readouterr().err
    assert _simulate("--policy", "lucb1", "--instance", small_file, "--param", "epsilon=true") == 2
    assert "parameter epsilon = True" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        _simulate("--policy", "se", "--instance", small_file, "--jobs", "-5")
    assert e.value.code == 2
    assert "--jobs: expected an integer >= 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _simulate("--policy", "se", "--instance", small_file, "--delta", "1.5")
    assert "--delta: expected a number in (0, 1)" in capsys.readouterr().err
    assert _simulate("--policy", "se", "--instance", str(tmp_path)) == 2
    assert "is a directory" in capsys.readouterr().err


def test_default_delta_is_reported_with_its_bounds(small_file, capsys):
    """Defect 9: without ``--delta`` the table said ``delta None`` and "n/a" bounds although SE used 0.05."""
    assert _simulate("--policy", "se", "--instance", small_file, "--runs", "2") == 0
    table = capsys.readouterr().out
    assert "0.05 (the policy's default)" in table
    row = next(line for line in table.splitlines() if line.startswith("tight lower bound"))
    assert "n/a" not in row


def test_no_bounds_and_time_limit(small_file, capsys):
    """Defect 3: the bounds can be skipped, and a time limit keeps them from hanging a run."""
    assert _simulate("--policy", "se", "--instance", small_file, "--runs", "2", "--no-bounds", "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["lower_bound"] is None and out["tight_lower_bound"] is None
    assert "skipped" in out["tight_lower_bound_note"]
    with pytest.raises(SystemExit):
        _simulate("--policy", "se", "--instance", small_file, "--bounds-time-limit", "0")


def test_time_limited_bound_on_a_large_instance_says_so():
    big = Instance.synthetic(3000, [1, 10, 100], [1.0, 0.2, 0.0], [0.3, 0.05, 0.0], seed=3)
    from mf_sched.sim.simulate import summarize

    res = [run_policy(policy_for("se", big, delta=0.05, seed=0), big, seed=1, max_pulls=10)]
    s = summarize(res, big, delta=0.05, bounds_time_limit=1e-6)
    assert s.tight_lower_bound is not None and s.tight_lower_bound > 0
    assert "time limit" in s.tight_lower_bound_note


def test_tied_best_arms_are_capped_and_count_as_correct(tied_file, capsys):
    """Defect 8: a δ-correct policy ran forever on tied best arms; Successive Halving reported an error rate
    of 1.0 although either tied arm is right."""
    assert _simulate("--policy", "se", "--instance", tied_file, "--runs", "2", "--json") == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert "tie for the best" in captured.err and "--max-pulls 10000" in captured.err and "epsilon" in captured.err
    assert out["stop_reasons"] == {"max-pulls": 2} and out["error_rate"] == 0.0
    assert _simulate("--policy", "sh", "--instance", tied_file, "--runs", "8", "--budget", "3000", "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["error_rate"] == 0.0 and set(out["recommendations"]) <= {"1", "2"}


def test_correct_counts_ties_and_epsilon():
    inst = Instance([[0.5], [0.7], [0.7], [0.68]], FidelityLadder([1.0]), {"kind": "bernoulli"})
    assert [is_correct(a, inst) for a in range(4)] == [False, True, True, False]
    assert is_correct(3, inst, epsilon=0.05) and not is_correct(0, inst, epsilon=0.05)
    # LUCB1 with ε targets an ε-optimal arm: answering arm 3 is then right
    p = policy_for("lucb1", inst, delta=0.1, seed=0, epsilon=0.05)
    res = run_policy(p, inst, seed=0)
    assert res.correct == (res.recommendation.arm in (1, 2, 3))


def _group_alive(pgid: int) -> list[str]:
    """Processes of the group that are still running (zombies left for init to reap do not count)."""
    alive = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(d.name)
    return alive


def _as_from_a_terminal() -> None:  # pragma: no cover - runs in the child, before exec
    """The CLI as started from a terminal, where Ctrl-C interrupts it: SIGINT at its default action. A test run
    started in the background (``make test &``, a CI runner) has SIGINT ignored, and its children inherit that: the
    CLI would then never see the Ctrl-C the test sends (these tests timed out in such a run, passing alone)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _busy_workers(pgid: int, cpu_seconds: float) -> list[str]:
    """The group's multiprocessing workers (spawned: ``multiprocessing.spawn`` in their command line) that have
    used at least ``cpu_seconds`` of CPU time."""
    tick = os.sysconf("SC_CLK_TCK")
    busy = []
    for pid in _group_alive(pgid):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if b"multiprocessing.spawn" in cmd and (int(fields[11]) + int(fields[12])) / tick >= cpu_seconds:
            busy.append(pid)
    return busy


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc to find the worker processes")
@pytest.mark.parametrize("target", ["group", "parent"])
def test_ctrl_c_stops_simulate_with_jobs(tied_file, target):
    """Defect 6: Ctrl-C did not stop ``simulate --jobs N`` (with SIGINT to the parent only, it waited for the
    workers' endless runs; to the whole group, as a terminal sends it, every process printed a traceback).
    Now: exit 130 with a short message, no worker left, no traceback."""
    cmd = [sys.executable, "-m", "mf_sched.cli", "simulate", "--no-progress", "--policy", "se"]
    cmd += ["--instance", tied_file, "--runs", "40", "--jobs", "2", "--max-pulls", "1000000000"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
        preexec_fn=_as_from_a_terminal,
    )
    try:
        # wait until both workers run their (endless) runs: each has used a CPU second (its start-up, imports
        # included, takes less); on a loaded machine that can take a while, so the deadlines are generous
        deadline = time.monotonic() + 120
        while len(_busy_workers(p.pid, cpu_seconds=1.0)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert p.poll() is None and len(_busy_workers(p.pid, cpu_seconds=1.0)) == 2
        if target == "group":
            os.killpg(p.pid, signal.SIGINT)
        else:
            os.kill(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:  # pragma: no cover - only when the test fails
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
    assert p.returncode == 130
    assert "interrupted" in err and "Traceback" not in err
    deadline = time.monotonic() + 60
    while _group_alive(p.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _group_alive(p.pid) == []


_CTRL_C_AT_START = """
import os, signal, sys
from concurrent.futures import ProcessPoolExecutor

submit = ProcessPoolExecutor.submit


def ctrl_c_while_starting(self, fn, *args, **kwargs):
    if not getattr(ctrl_c_while_starting, "sent", False):  # the first worker is about to be started
        ctrl_c_while_starting.sent = True
        os.killpg(0, signal.SIGINT)  # Ctrl-C at the terminal: the whole process group
    return submit(self, fn, *args, **kwargs)


ProcessPoolExecutor.submit = ctrl_c_while_starting
from mf_sched.cli import main

sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc to find the worker processes")
def test_ctrl_c_while_the_workers_start_is_not_lost(tied_file):
    """Issue 24 (10): the CLI ignored SIGINT while it started its workers (so that they would be born ignoring it),
    and a Ctrl-C in that window was dropped: ``simulate --jobs 2`` on tied arms then ran on for ever. Now the Ctrl-C
    stays pending while the workers start and stops the run (exit 130, no worker left, no traceback)."""
    args = ["simulate", "--no-progress", "--policy", "se", "--instance", tied_file, "--runs", "40", "--jobs", "2"]
    args += ["--max-pulls", "1000000000"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen(
        [sys.executable, "-c", _CTRL_C_AT_START, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_as_from_a_terminal,
        env=env,
    )
    try:
        out, err = p.communicate(timeout=120)  # generous for a loaded machine: without the fix it never ends
    finally:
        if p.poll() is None:  # pragma: no cover - only when the test fails
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
    assert p.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    deadline = time.monotonic() + 60
    while _group_alive(p.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _group_alive(p.pid) == []
