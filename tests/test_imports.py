"""`import mf_sched` stays light: the heavy optional modules load only in the functions that need them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("scipy.stats", "sklearn", "onnxruntime", "matplotlib")


def _loaded_after(statement: str) -> list[str]:
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _heavy(mods: list[str]) -> list[str]:
    return [m for m in mods if any(m == h or m.startswith(h + ".") for h in HEAVY)]


def test_import_mf_sched_does_not_load_heavy_modules():
    assert _heavy(_loaded_after("import mf_sched")) == []


def test_building_and_running_a_policy_does_not_load_heavy_modules():
    stmt = (
        "from mf_sched import FidelityLadder, Instance, get_policy, run_policy\n"
        "inst = Instance([[0.2, 0.3], [0.6, 0.7]], FidelityLadder([1.0, 4.0], [0.2, 0.0]), {'kind': 'bernoulli'})\n"
        "run_policy(get_policy('lucb-explore-c')(n_arms=2, ladder=inst.ladder, delta=0.1, seed=0), inst, seed=0)"
    )
    assert _heavy(_loaded_after(stmt)) == []


def test_the_lazy_imports_still_work():
    # the functions whose scipy.stats import moved inside them
    from mf_sched.constrained import wilson_interval
    from mf_sched.curves.calibration import bound_count
    from mf_sched.sim.simulate import mean_ci95

    assert mean_ci95([1.0, 2.0, 3.0])[1] == pytest.approx(2.484, abs=1e-3)
    assert wilson_interval(5, 100)[0] == pytest.approx(0.0215, abs=1e-4)
    assert bound_count(100, 0.9, 0.95) == (90, 94)


# The modules moved into sub-packages (issue 17) keep their old names as aliases of the same module object.
MOVED = {
    "instance": "sim",
    "simulate": "sim",
    "bounds": "sim",
    "_tight_decomp": "sim",
    "alternative": "sim",
    "iise_runner": "sim",
    "calibration": "curves",
    "race_calibration": "curves",
    "datasets": "curves",
    "replay": "curves",
    "space": "continuous",
    "gp": "continuous",
    "functions": "continuous",
    "mixture": "constrained",
    "mixture_hardness": "constrained",
    "_calibrate_cli": "cli",
}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_module_names_are_the_moved_modules(old):
    import importlib

    new = importlib.import_module(f"mf_sched.{MOVED[old]}.{old}")
    assert importlib.import_module(f"mf_sched.{old}") is new
    assert new.__name__ == f"mf_sched.{MOVED[old]}.{old}"


def test_the_packages_that_were_modules_re_export_their_public_names():
    import mf_sched.cli
    import mf_sched.cli.app
    import mf_sched.constrained
    import mf_sched.constrained.instance
    import mf_sched.constrained.runner
    import mf_sched.constrained.tang2024
    import mf_sched.curves
    import mf_sched.curves.learning_curves

    for package, module in (
        (mf_sched.curves, mf_sched.curves.learning_curves),
        (mf_sched.constrained, mf_sched.constrained.instance),
        (mf_sched.constrained, mf_sched.constrained.runner),
        (mf_sched.constrained, mf_sched.constrained.tang2024),
        (mf_sched.cli, mf_sched.cli.app),
    ):
        assert set(module.__all__) <= set(package.__all__)
        assert all(getattr(package, n) is getattr(module, n) for n in module.__all__)


def test_python_m_mf_sched_cli_runs_the_command_line():
    out = subprocess.run(
        [sys.executable, "-m", "mf_sched.cli", "policies", "--json"], capture_output=True, text=True, check=True
    )
    assert "iise" in json.loads(out.stdout)
