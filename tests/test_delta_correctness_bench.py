"""benchmarks/delta_correctness.py (issue 19, build item 3): its quick mode on a tiny configuration, its
binomial bounds and its random instances."""

from __future__ import annotations

import importlib.util
import json

import pytest

from benchmarks import delta_correctness as dc


def test_clopper_pearson_bounds_of_a_cell():
    c = dc.Cell("se", "x", 1.0, runs=1000, errors=0)
    s = c.summary(0.05)
    assert s["upper95"] == pytest.approx(1 - 0.05 ** (1 / 1000), rel=1e-9)  # 0 errors: 1 − α^(1/n)
    assert s["lower95"] == 0.0 and s["confirmed"] and not s["violated"]
    bad = dc.Cell("se", "x", 1.0, runs=200, errors=40).summary(0.05)
    assert bad["violated"] and not bad["confirmed"] and bad["lower95"] > 0.05
    few = dc.Cell("se", "x", 1.0, runs=20, errors=0).summary(0.05)
    assert not few["confirmed"] and not few["violated"]  # 20 runs cannot confirm δ = 0.05
    none = dc.Cell("iise-rungs", "x", 1.0, runs=5, unclaimed=5).summary(0.05)
    assert none["error_rate"] is None and not none["confirmed"]


def test_random_instances_satisfy_the_model_and_the_adversarial_ones_mislead():
    for i in range(6):
        inst = dc.random_instance(i)
        assert inst.check_assumptions().ok, inst.name
        assert 3 <= inst.K <= 6 and 2 <= inst.M <= 3
        if i % 2:
            b = inst.best_arm
            z = inst.ladder.zeta[0]
            assert inst.means[b, 0] == pytest.approx(inst.true_means[b] - z)  # the best arm looks worse
    assert dc.random_instance(3).means.tolist() == dc.random_instance(3).means.tolist()  # seeded


def test_quick_mode_on_a_tiny_configuration(tmp_path):
    out = tmp_path / "dc.json"
    argv = ["--quick", "--policies", "se", "iise", "iise-rungs", "--no-published", "--random", "2"]
    argv += ["--misspec-random", "2", "--runs", "30", "--jobs", "1", "--no-progress", "--out", str(out)]
    assert dc.main(argv) == 0
    res = json.loads(out.read_text())
    cells = {(c["policy"], c["instance"], c["factor"]): c for c in res["cells"]}
    assert len(cells) == 2 + 2 * 3 + 2 * 3  # se at ζ × 1 only; the ζ-aware ones at 0.5, 1, 2
    for c in cells.values():
        assert 0 < c["runs"] <= 30
        if c["error_rate"] is not None:
            assert 0 <= c["lower95"] <= c["error_rate"] <= c["upper95"] <= 1
    # an underestimated ζ makes IISE discard the best arm on the adversarial instance; the true ζ does not
    adv = "random-01-adv"
    assert cells[("iise", adv, 0.5)]["errors"] > 0
    assert cells[("iise", adv, 1.0)]["errors"] == 0
    assert cells[("iise", adv, 2.0)]["cost_over_zeta1"] is not None
    summary = {(s["policy"], s["factor"]): s for s in res["summary"]}
    assert summary[("iise", 0.5)]["cost_over_zeta1_median"] is not None
    assert summary[("se", 1.0)]["claim"].startswith("Even-Dar")
    assert res["meta"]["quick"] and res["meta"]["delta"] == 0.1
    if importlib.util.find_spec("matplotlib") is None:  # everything above holds without it; the plot needs it
        pytest.skip("matplotlib (the 'bench' extra) is not installed: the benchmark writes no plot")
    assert out.with_suffix(".png").exists()
