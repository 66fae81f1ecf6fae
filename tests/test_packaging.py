"""`integrations/` must import as `mf_sched.integrations` from an editable install and from a built wheel."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import mf_sched

ROOT = Path(__file__).resolve().parents[1]


def test_editable_install_maps_integrations_folder():
    import mf_sched.integrations as integ

    if not Path(mf_sched.__file__).resolve().is_relative_to(ROOT):
        pytest.skip("mf_sched is not installed from this checkout (editable)")
    assert Path(integ.__file__).resolve() == ROOT / "integrations" / "__init__.py"


def test_wheel_contains_and_imports_integrations(tmp_path):
    """The wheel builds without a setuptools warning (``-v`` shows the build backend's output: before the data
    folders were declared, setuptools warned that ``mf_sched.data`` is importable but absent from ``packages``,
    and that a TOML-table licence is deprecated), holds every file under ``mf_sched/data`` that the checkout
    holds, and imports from a plain install. It builds from a copy of the sources, so that a stale `build/`
    folder of the checkout (setuptools reuses it) cannot put a module that no longer exists into the wheel."""
    src = tmp_path / "src"
    keep = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("mf_sched", "integrations"):
        shutil.copytree(ROOT / name, src / name, ignore=keep)
    for f in ROOT.iterdir():
        if f.is_file() and (f.name in ("pyproject.toml", "README.md") or f.name.startswith("LICENSE")):
            shutil.copy2(f, src / f.name)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-v",
            "-w",
            str(tmp_path),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr
    log = out.stdout + out.stderr
    assert "BuildBackendWarning" not in log and "SetuptoolsDeprecationWarning" not in log, [
        line for line in log.splitlines() if "Warning" in line
    ]
    assert "namespace" not in log.lower() and "absent from the `packages`" not in log
    wheel = next(tmp_path.glob("mf_sched-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    data = ROOT / "mf_sched" / "data"
    on_disk = {f"mf_sched/data/{p.relative_to(data).as_posix()}" for p in data.rglob("*") if p.is_file()}
    assert on_disk and on_disk <= set(names), sorted(on_disk - set(names))
    assert {"mf_sched/data/race_prior.json", "mf_sched/data/curve_bound.json"} <= on_disk
    assert "mf_sched/integrations/__init__.py" in names
    assert "mf_sched/policies/se.py" in names or "mf_sched/policies/successive_elimination.py" in names
    assert not any(n.startswith(("integrations/", "tests/")) for n in names)
    # the published instances (and their sources and licences) ship with the package: docs need no ../shared
    assert "mf_sched/data/instances/poiani2024-5x2.json" in names and "mf_sched/data/instances/README.md" in names
    target = tmp_path / "site"
    out = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr
    code = (
        "import mf_sched, mf_sched.integrations, mf_sched.cli; "
        "print(mf_sched.__file__); print(mf_sched.integrations.__file__); "
        "print(sorted(mf_sched.list_policies())); print(mf_sched.published_instance('poiani2024-5x2').K)"
    )
    env = {"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"}
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120
    )
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith(str(target)) and lines[1].startswith(str(target))
    assert "se" in lines[2] and "hyperband" in lines[2]
    assert lines[3] == "5"  # a published instance, read from the installed wheel
