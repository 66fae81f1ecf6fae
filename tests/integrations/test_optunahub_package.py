"""The OptunaHub package (integrations/optunahub/samplers/mf_sched): laid out as OptunaHub's registry expects and
loaded the way ``optunahub.load_local_module`` loads a package."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

optuna = pytest.importorskip("optuna", reason="the 'optuna' extra is not installed")
optunahub = pytest.importorskip("optunahub", reason="optunahub (the 'dev' extra) is not installed")

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = ROOT / "integrations" / "optunahub"
PACKAGE = REGISTRY / "samplers" / "mf_sched"


def front_matter(text: str) -> dict[str, str]:
    """The README's front matter (``key: value`` lines between ``---`` lines), as OptunaHub's header check reads it."""
    m = re.match(r"---\n(.*?)\n---\n", text, re.S)
    assert m, "the README must start with a front matter block"
    out = {}
    for line in m.group(1).splitlines():
        key, _, value = line.partition(":")
        out[key.strip()] = value.strip()
    return out


def test_layout_front_matter_and_license() -> None:
    assert {p.name for p in PACKAGE.iterdir()} >= {"__init__.py", "README.md", "LICENSE", "requirements.txt"}
    readme = (PACKAGE / "README.md").read_text()
    fm = front_matter(readme)
    for key in ("author", "title", "description", "tags", "optuna_versions", "license"):
        assert fm.get(key), f"front matter needs a non-empty {key}"
    assert fm["license"] == "MIT License"
    tags = [t.strip() for t in fm["tags"].strip("[]").split(",")]
    assert "sampler" in tags and "pruner" in tags
    assert optuna.__version__ in fm["optuna_versions"]
    for section in ("## Abstract", "## APIs", "## Installation", "## Example", "## Others"):
        assert section in readme
    assert 'optunahub.load_module("samplers/mf_sched")' in readme and "<" not in readme.replace("<=", "")
    assert (PACKAGE / "LICENSE").read_text().startswith("MIT License")
    assert "mf-sched[optuna" in (PACKAGE / "requirements.txt").read_text()


def test_load_local_module_and_run_the_readme_example(capsys: pytest.CaptureFixture[str]) -> None:
    from mf_sched.integrations.optuna import MFPruner, MFSampler

    mod = optunahub.load_local_module(package="samplers/mf_sched", registry_root=str(REGISTRY))
    assert sys.modules["optunahub_registry.package.samplers.mf_sched"] is mod
    assert mod.MFSampler is MFSampler and mod.MFPruner is MFPruner
    assert isinstance(mod.MFSampler(), optuna.samplers.BaseSampler)
    assert isinstance(mod.MFPruner(), optuna.pruners.BasePruner)
    # the README's example, with the module loaded locally instead of from the registry
    readme = (PACKAGE / "README.md").read_text()
    code = re.search(r"## Example\n\n```python\n(.*?)```", readme, re.S).group(1)
    code = code.replace('optunahub.load_module("samplers/mf_sched")', "LOCAL")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    scope = {"LOCAL": mod, "__name__": "readme_example"}
    exec(compile(code, "README.md", "exec"), scope)  # the package's own README, not data
    study = scope["study"]
    assert scope["rec"].params == {"x": 7} and len(study.trials) < 20
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("{'x': 7}") and "is the best run at the top rung" in out[1]
    pruned = [t for t in study.trials if t.state == optuna.trial.TrialState.PRUNED]
    assert [line.split(" ", 1)[0] for line in out[2:]] == [str(t.number) for t in pruned]
    assert all(" stopped at rung " in line or " paused at rung " in line for line in out[2:])
    assert any(" stopped at rung " in line for line in out[2:])
