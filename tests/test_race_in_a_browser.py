"""The race report and plot as a person sees them: opened in a real headless Chromium (Debian's ``chromium``
package), screenshot taken, and the figure checked to be drawn — not an empty canvas. Slow; skipped, with the
reason, where Chromium, Optuna or plotly is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow

optuna = pytest.importorskip("optuna", reason="the 'optuna' extra is not installed")
pytest.importorskip("plotly", reason="plotly (the 'viz' extra) is not installed")
plt = pytest.importorskip("matplotlib.pyplot", reason="matplotlib is not installed")

from _browser import CHROMIUM, FLAGS, NO_CHROMIUM  # noqa: E402
from mf_sched.integrations.optuna import MFPruner, MFSampler  # noqa: E402

from mf_sched.visualization import plot_race  # noqa: E402
from mf_sched.visualization._style import COLORS  # noqa: E402
from mf_sched.visualization.report import write_report  # noqa: E402

if CHROMIUM is None:
    pytest.skip(NO_CHROMIUM, allow_module_level=True)


def chromium(page: Path, out: Path, *extra: str, size: str = "1300,2300") -> subprocess.CompletedProcess:
    profile = out.parent / f"profile-{out.stem}"
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", f"--window-size={size}", "--virtual-time-budget=20000"]
    return subprocess.run([*cmd, *extra, page.as_uri()], capture_output=True, text=True, timeout=180)


def screenshot(page: Path, out: Path, *extra: str, size: str = "1300,2300") -> np.ndarray:
    res = chromium(page, out, f"--screenshot={out}", *extra, size=size)
    assert out.is_file(), f"Chromium wrote no screenshot: {res.stderr[-2000:]}"
    keep = os.environ.get("MF_SCHED_SCREENSHOTS")  # a folder to keep the pictures in, to look at them
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(out, Path(keep) / out.name)
    return plt.imread(out)[..., :3]


def pixels_of(img: np.ndarray, color: str, tol: float = 0.09) -> int:
    rgb = np.array([int(color[i : i + 2], 16) for i in (1, 3, 5)]) / 255.0
    return int((np.abs(img - rgb).max(axis=2) < tol).sum())


def study_with_stops(tmp_path: Path) -> optuna.Study:
    """MFSampler + MFPruner on a study whose first candidate is the best: the others are stopped early."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    qs = [0.9, 0.55, 0.8, 0.3, 0.7, 0.45, 0.85, 0.6]

    def objective(trial: optuna.Trial) -> float:
        q = trial.suggest_categorical("q", qs)
        acc = 0.0
        for epoch in range(1, 28):
            acc = q * (1 - 0.35 * np.exp(-epoch / 5))
            trial.report(float(acc), epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return float(acc)

    study = optuna.create_study(
        direction="maximize", study_name="browser", storage=f"sqlite:///{tmp_path / 'b.db'}",
        sampler=MFSampler(search_space={"q": qs}), pruner=MFPruner(),
    )  # fmt: skip
    study.optimize(objective, n_trials=60)
    assert sum(t.state == optuna.trial.TrialState.PRUNED for t in study.trials) >= 3
    return study


def test_the_report_renders_its_figure_in_chromium(tmp_path: Path) -> None:
    study = study_with_stops(tmp_path)
    page = write_report(study, tmp_path / "report.html")
    # the page as the browser built it, scripts run: plotly drew an SVG with the curves and the stops
    dom = chromium(page, tmp_path / "dom.png", "--dump-dom").stdout
    assert 'class="main-svg"' in dom, "plotly drew no figure"
    assert dom.count('class="trace scatter') >= len(study.trials)
    shot = screenshot(page, tmp_path / "report.png")
    # the same page with its scripts inert (headless Chromium takes no screenshot with scripts turned off): the
    # figure's box keeps its size, empty
    inert = tmp_path / "report-no-script.html"
    text = page.read_text()
    assert text.count("<script>") >= 2
    inert.write_text(text.replace("<script>", '<script type="text/plain">'))
    blank = screenshot(inert, tmp_path / "report-no-script.png")
    # the fates' colours: many more pixels once the figure is drawn (curves, bounds, stops) than the table's fate
    # dots alone give (the stopped curves are drawn translucent: their crosses and triangles count)
    for fate in ("best", "finished", "stopped"):
        drawn, without = pixels_of(shot, COLORS[fate]), pixels_of(blank, COLORS[fate])
        assert drawn > without + 300, (fate, drawn, without)
    # not an empty canvas: the figure's region is not a flat background
    assert shot.std() > 0.05 and (np.abs(shot - blank).max(axis=2) > 0.2).sum() > 20_000


def test_the_static_report_and_the_figure_alone_render(tmp_path: Path) -> None:
    study = study_with_stops(tmp_path)
    static = write_report(study, tmp_path / "static.html", interactive=False)
    img = screenshot(static, tmp_path / "static.png")
    assert pixels_of(img, COLORS["stopped"]) > 300 and pixels_of(img, COLORS["best"]) > 300
    alone = tmp_path / "figure.html"
    plot_race(study).write_html(alone, include_plotlyjs=True)
    fig = screenshot(alone, tmp_path / "figure.png", size="1200,900")
    assert pixels_of(fig, COLORS["stopped"]) > 300 and pixels_of(fig, COLORS["finished"]) > 300
    assert (fig.min(axis=2) < 0.9).mean() > 0.02  # ink on the canvas
