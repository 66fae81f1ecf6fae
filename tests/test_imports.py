"""`import mf_sched` stays light: the heavy optional modules load only in the functions that need them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

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


# The modules moved into sub-packages (issue 17): their old names give the moved module, with a warning that
# names the new path and the release that removes the old one (one table and one import hook: mf_sched._moved).
# Racing moved into mf_sched.racing (issue 25).
MOVED = {
    "mf_sched.instance": "mf_sched.sim.instance",
    "mf_sched.simulate": "mf_sched.sim.simulate",
    "mf_sched.bounds": "mf_sched.sim.bounds",
    "mf_sched._tight_decomp": "mf_sched.sim._tight_decomp",
    "mf_sched.alternative": "mf_sched.sim.alternative",
    "mf_sched.iise_runner": "mf_sched.sim.iise_runner",
    "mf_sched.calibration": "mf_sched.curves.calibration",
    "mf_sched.race_calibration": "mf_sched.racing.calibration",
    "mf_sched.datasets": "mf_sched.curves.datasets",
    "mf_sched.replay": "mf_sched.curves.replay",
    "mf_sched.space": "mf_sched.continuous.space",
    "mf_sched.gp": "mf_sched.continuous.gp",
    "mf_sched.functions": "mf_sched.continuous.functions",
    "mf_sched.mixture": "mf_sched.constrained.mixture",
    "mf_sched.mixture_hardness": "mf_sched.constrained.mixture_hardness",
    "mf_sched._calibrate_cli": "mf_sched.cli._calibrate_cli",
    "mf_sched.rungs": "mf_sched.racing.engine",
    "mf_sched.race": "mf_sched.racing.bias",
    "mf_sched.policies.race": "mf_sched.racing.policy",
    "mf_sched.curves.race_calibration": "mf_sched.racing.calibration",
}


def _forget(old: str) -> None:
    """As if module `old` had never been imported in this process (the warning comes on a first import)."""
    import importlib

    parent, _, name = old.rpartition(".")
    sys.modules.pop(old, None)
    importlib.import_module(parent).__dict__.pop(name, None)


def _next_minor(version: str) -> str:
    major, minor = (int(x) for x in version.split(".")[:2])
    return f"{major}.{minor + 1}.0"


def test_the_moved_table_is_the_one_the_package_uses():
    from mf_sched import _moved

    assert _moved.MOVED == MOVED
    assert _moved.REMOVED_IN == _next_minor(mf_sched_version()) == "0.2.0"
    root = Path(__file__).resolve().parents[1]
    assert not [old for old in MOVED if (root / f"{old.replace('.', '/')}.py").exists()]  # no alias files left


def mf_sched_version() -> str:
    text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    return re.search(r'^version = "([^"]+)"', text, re.M).group(1)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("old", "how"),
    # only the top-level package resolves old names as attributes (`mf_sched.datasets`)
    [
        (o, h)
        for o in sorted(MOVED)
        for h in ("import", "from-import", "attribute")
        if h != "attribute" or o.count(".") == 1
    ],
)
def test_old_module_names_warn_and_are_the_moved_modules(old, how):
    import importlib

    import mf_sched

    new_name = MOVED[old]
    new = importlib.import_module(new_name)
    parent, _, name = old.rpartition(".")
    _forget(old)
    text = rf"^{re.escape(old)} is deprecated and will be removed in mf-sched 0\.2\.0; import {new_name} instead$"
    with pytest.warns(DeprecationWarning, match=text) as caught:
        if how == "import":
            got = importlib.import_module(old)
        elif how == "from-import":
            got = __import__(parent, fromlist=[name]).__dict__[name]
        else:
            got = getattr(mf_sched, name)
    assert got is new  # the same module object: the same classes and functions, one state
    assert all(getattr(got, n) is getattr(new, n) for n in getattr(new, "__all__", ()))
    assert new.__name__ == new_name and new.__spec__.name == new_name  # the moved module keeps its own spec
    assert caught[0].filename == __file__  # the warning points at the importing line, not at the import hook
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert importlib.import_module(old) is new  # later imports: the cached module, no warning


def test_an_old_name_in_a_fresh_interpreter_warns_at_the_import_line():
    code = (
        "import warnings\nwarnings.simplefilter('always')\n"
        "from mf_sched.datasets import load_source\nprint(load_source.__module__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "mf_sched.curves.datasets"
    assert out.stderr.splitlines()[0].startswith("<string>:3: DeprecationWarning: mf_sched.datasets is deprecated")


def test_unknown_attributes_and_modules_still_fail():
    import mf_sched

    with pytest.raises(AttributeError, match="no attribute 'no_such_module'"):
        mf_sched.no_such_module  # noqa: B018
    with pytest.raises(ModuleNotFoundError):
        __import__("mf_sched.no_such_module")


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
