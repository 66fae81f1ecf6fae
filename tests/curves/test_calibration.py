"""ζ, γ, σ and λ estimation, held-out coverage, ladder suggestion and `mf-sched calibrate`."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from mf_sched import FidelityLadder
from mf_sched.cli import main
from mf_sched.curves import LearningCurves
from mf_sched.curves.calibration import (
    bound_count,
    calibrate,
    cost_bias_convexity,
    estimate_costs,
    estimate_gamma,
    estimate_sigma,
    geometric_rungs,
    holdout_coverage,
    narrowest_band,
    non_increasing_envelope,
    quantile_bound,
    suggest_ladder,
)


def synthetic_curves(C=300, epochs=(1, 3, 9, 27), seeds=1, scale=0.3, seed=0, tasks=None, noise=0.0):
    """Accuracy-like curves: final in [0.5, 0.9], early values below by scale·E/epoch with E ~ Exp(1)."""
    rng = np.random.default_rng(seed)
    ep = np.asarray(epochs, dtype=float)
    final = rng.uniform(0.5, 0.9, C)
    shortfall = rng.exponential(1.0, C)
    rows = {"config": [], "seed": [], "fidelity": [], "metric": [], "task": []}
    for s in range(seeds):
        vals = final[:, None] - scale * shortfall[:, None] * (1 / ep - 1 / ep[-1])
        vals = vals + noise * rng.standard_normal(vals.shape)
        rows["config"].append(np.repeat(np.arange(C), ep.size))
        rows["seed"].append(np.full(C * ep.size, s))
        rows["fidelity"].append(np.tile(ep, C))
        rows["metric"].append(vals.ravel())
        rows["task"].append(np.repeat(np.arange(C) % (tasks or 1), ep.size))
    cols = {k: np.concatenate(v) for k, v in rows.items()}
    return LearningCurves(
        config=cols["config"],
        seed=cols["seed"],
        fidelity=cols["fidelity"],
        metric=cols["metric"],
        task=cols["task"] if tasks else None,
        metric_name="acc",
        fidelity_name="epoch",
    )


# ------------------------------------------------------------------------------------------ quantile bounds
def test_exact_bootstrap_matches_monte_carlo_bootstrap():
    rng = np.random.default_rng(3)
    x = rng.lognormal(size=60)
    q, c = 0.9, 0.9
    point, ucb = quantile_bound(x, q, c)
    boot = rng.choice(x, size=(20000, x.size), replace=True)
    k = math.ceil(q * x.size)
    mc = np.sort(boot, axis=1)[:, k - 1]  # inverted-CDF quantile of each resample
    s = np.sort(x)
    assert point == s[k - 1]
    # the closed form is the c-quantile of the bootstrap distribution: Monte Carlo lands within one order statistic
    i_mc = np.searchsorted(s, np.quantile(mc, c, method="inverted_cdf"))
    assert abs(int(np.searchsorted(s, ucb)) - int(i_mc)) <= 1


@pytest.mark.parametrize("method", ["bootstrap", "order"])
def test_upper_bound_covers_the_true_quantile_at_its_confidence(method):
    """Over 400 samples of n = 200 exponential values, the bound is >= the true 0.9-quantile in >= 90% of
    them (minus a 3-sigma binomial margin); the point estimate alone covers it about half of the time."""
    rng = np.random.default_rng(11)
    q, c, n, reps = 0.9, 0.9, 200, 400
    truth = stats.expon.ppf(q)
    hits = points = 0
    for _ in range(reps):
        x = rng.exponential(size=n)
        p, u = quantile_bound(x, q, c, method)
        hits += u >= truth
        points += p >= truth
    margin = 3 * math.sqrt(c * (1 - c) / reps)
    assert hits / reps >= c - margin
    assert points / reps < 0.75


def test_order_method_needs_enough_values_and_bad_arguments_are_named():
    with pytest.raises(ValueError, match="at least 59 are needed"):
        quantile_bound(np.arange(30.0), 0.95, 0.95, method="order")
    with pytest.raises(ValueError, match="quantile = 1.5 is out of range"):
        quantile_bound([1.0], 1.5, 0.9)
    with pytest.raises(ValueError, match="confidence = 0.3 is out of range; accepted: 0.5 < confidence < 1"):
        quantile_bound([1.0], 0.9, 0.3)
    with pytest.raises(ValueError, match="method = 'magic' is unknown"):
        quantile_bound([1.0], 0.9, 0.9, method="magic")


@pytest.mark.parametrize("method", ["bootstrap", "order"])
def test_bound_count_is_the_order_statistic_of_quantile_bound(method):
    x = np.random.default_rng(4).permutation(np.arange(1.0, 201.0))  # the k-th smallest value is k
    for q, c in [(0.5, 0.9), (0.9, 0.95), (0.95, 0.99)]:
        k, j = bound_count(200, q, c, method)
        assert quantile_bound(x, q, c, method) == (float(k), float(j))
        assert k == math.ceil(q * 200) and k <= j <= 200
    k, j = bound_count(200, 0.9, 0.95, method)
    if method == "order":  # distribution-free: P(Binomial(n, q) <= j - 1) >= c, and j is the smallest such
        assert stats.binom.cdf(j - 1, 200, 0.9) >= 0.95 > stats.binom.cdf(j - 2, 200, 0.9)
    else:  # the c-quantile of the bootstrap distribution of the k-th order statistic
        assert stats.binom.sf(k - 1, 200, j / 200) >= 0.95 > stats.binom.sf(k - 1, 200, (j - 1) / 200)
    with pytest.raises(ValueError, match="no values to take a quantile of"):
        bound_count(0, 0.9, 0.9)


def test_narrowest_band_matches_brute_force_and_is_narrower_than_the_central_interval():
    rng = np.random.default_rng(7)
    for _ in range(20):
        x = rng.exponential(size=rng.integers(5, 40))
        lo, hi, lo_b, hi_b = narrowest_band(x, 0.8, 0.9)
        k, j = bound_count(x.size, 0.8, 0.9)
        for cnt, a, b in ((k, lo, hi), (j, lo_b, hi_b)):
            assert np.sum((x >= a) & (x <= b)) >= cnt  # holds the count ...
            s = np.sort(x)
            assert b - a == pytest.approx(np.min(s[cnt - 1 :] - s[: s.size - cnt + 1]))  # ... and is the narrowest
        assert hi_b - lo_b >= hi - lo
    # an underestimating fidelity: biases in [-zeta, 0] with mass near 0; the band is [~-ζ, ~0], not a central one
    b = -rng.exponential(0.1, 2000)
    lo, hi, _, _ = narrowest_band(b, 0.9, 0.9)
    zeta = quantile_bound(np.abs(b), 0.9, 0.9)[0]
    assert hi > -0.001 and hi - lo <= zeta
    central = np.quantile(b, 0.95) - np.quantile(b, 0.05)
    assert hi - lo < central
    assert narrowest_band([np.nan, 1.0, 2.0, 3.0], 0.5, 0.6)[:2] == (1.0, 2.0)  # NaN values are ignored


def test_envelope_is_the_smallest_non_increasing_majorant():
    x = np.array([0.1, 0.4, 0.2, 0.3, 0.0])
    e = non_increasing_envelope(x)
    assert e.tolist() == [0.4, 0.4, 0.3, 0.3, 0.0]
    assert np.all(np.diff(e) <= 0) and np.all(e >= x)


# ------------------------------------------------------------------------------------------ calibrate
def test_calibrate_recovers_zeta_and_builds_a_valid_ladder():
    curves = synthetic_curves(C=2000)
    cal = calibrate(curves, [1, 3, 9, 27], quantile=0.9, confidence=0.95, holdout=None)
    # true 0.9-quantile of 0.3·E·(1/e − 1/27), E ~ Exp(1)
    true = 0.3 * stats.expon.ppf(0.9) * (1 / np.array([1, 3, 9, 27]) - 1 / 27)
    assert np.allclose(cal.zeta_point, true, rtol=0.08)
    assert np.all(cal.zeta >= cal.zeta_ucb) and np.all(cal.zeta_ucb >= cal.zeta_point)
    assert cal.zeta[-1] == 0 and np.all(np.diff(cal.zeta) <= 0)
    assert cal.underestimating[:-1].all()  # accuracy below its final value at every earlier epoch
    # Poiani et al. §5: for an underestimating fidelity the spread is at most the bias bound (γ ≤ ξ)
    assert np.all(cal.gamma_point <= cal.zeta_point + 1e-12)
    ladder = cal.ladder()
    assert isinstance(ladder, FidelityLadder)
    assert ladder.resources == (1.0, 3.0, 9.0, 27.0) and ladder.costs == (1.0, 3.0, 9.0, 27.0)
    assert ladder.gamma is not None and ladder.gamma[-1] == 0
    d = json.loads(json.dumps(cal.to_dict()))
    assert d["zeta"] == cal.zeta.tolist() and d["coverage"] is None
    assert "ζ̂" in cal.table()


def test_direction_awareness_loss_and_accuracy_give_the_same_zeta():
    acc = synthetic_curves(C=300)
    loss = LearningCurves(
        config=acc.config, fidelity=acc.fidelity, metric=1 - acc.metric, mode="min", fidelity_name="epoch"
    )
    a = calibrate(acc, [1, 3, 9, 27], holdout=None)
    b = calibrate(loss, [1, 3, 9, 27], holdout=None)
    assert np.allclose(a.zeta, b.zeta) and np.allclose(a.gamma, b.gamma)
    assert np.allclose(a.bias_high, b.bias_high)  # the same "underestimating" interval in score orientation


def test_gamma_interval_with_mixed_sign_biases():
    rng = np.random.default_rng(0)
    b = np.c_[rng.normal(0.05, 0.1, 500), np.zeros(500)]
    g = estimate_gamma(b, 0.9, 0.9)
    lo, hi = stats.norm.ppf([0.05, 0.95], 0.05, 0.1)
    assert g["low_bound"][0] <= lo + 0.02 and g["high_bound"][0] >= hi - 0.02
    assert g["low_bound"][0] < 0 < g["high_bound"][0]
    assert g["gamma_ucb"][0] == pytest.approx(g["high_bound"][0] - g["low_bound"][0])


def test_sigma_pooled_from_seeds():
    curves = synthetic_curves(C=200, seeds=4, noise=0.02, seed=5)
    sig = estimate_sigma(curves.values_at([1, 3, 9, 27]))
    assert np.allclose(sig["pooled"], 0.02, rtol=0.1) and sig["n_configs"].tolist() == [200] * 4
    single = synthetic_curves(C=10)
    assert np.isnan(estimate_sigma(single.values_at([1, 27]))["pooled"]).all()


def test_costs_from_resources_or_measured_time():
    c = LearningCurves(config=[0, 0, 1, 1], fidelity=[1, 2, 1, 2], metric=[0.1, 0.2, 0.3, 0.4], cost=[5, 9, 7, 15])
    rv = c.values_at([1, 2])
    assert estimate_costs(rv, "time")[0].tolist() == [6.0, 12.0]
    assert estimate_costs(rv, "resource")[0].tolist() == [1.0, 2.0]
    bad = LearningCurves(config=[0, 0], fidelity=[1, 2], metric=[0.1, 0.2], cost=[5, 3])
    with pytest.raises(ValueError, match="median elapsed cost is not increasing"):
        estimate_costs(bad.values_at([1, 2]), "time")
    none = LearningCurves(config=[0, 0], fidelity=[1, 2], metric=[0.1, 0.2])
    assert estimate_costs(none.values_at([1, 2]), "auto")[1] == "resource"
    with pytest.raises(ValueError, match="needs measured elapsed costs"):
        estimate_costs(none.values_at([1, 2]), "time")


def test_holdout_coverage_meets_the_quantile_on_exchangeable_configurations():
    curves = synthetic_curves(C=600, seed=2)
    cov = holdout_coverage(curves.values_at([1, 3, 9, 27]), quantile=0.9, confidence=0.95, repeats=10, seed=0)
    assert cov.zeta[-1] == 1.0
    assert np.all(cov.zeta[:-1] >= 0.9 - 0.02)  # the bound generalises to unseen configurations
    assert np.all(cov.zeta_point[:-1] <= cov.zeta[:-1])
    assert np.all(cov.gamma[:-1] >= 0.85)
    assert cov.n_train == pytest.approx(300) and cov.n_test == pytest.approx(300)


def test_holdout_by_tasks_detects_an_estimate_that_does_not_transfer():
    """Tasks whose biases differ in scale: a configuration split mixes them and looks fine, a task split
    shows that ζ̂ from some tasks under-covers others — what the acceptance test is for."""
    parts = []
    for t, scale in enumerate([0.05, 0.1, 0.4, 0.8]):
        c = synthetic_curves(C=150, scale=scale, seed=t)
        parts.append((c, t))
    config = np.concatenate([c.config + 1000 * t for c, t in parts])
    curves = LearningCurves(
        config=config,
        fidelity=np.concatenate([c.fidelity for c, _ in parts]),
        metric=np.concatenate([c.metric for c, _ in parts]),
        task=np.concatenate([np.full(c.n_rows, t) for c, t in parts]),
    )
    rv = curves.values_at([1, 3, 9, 27])
    by_cfg = holdout_coverage(rv, quantile=0.9, repeats=10, split="configs")
    by_task = holdout_coverage(rv, quantile=0.9, repeats=10, split="tasks")
    assert by_cfg.zeta[0] >= 0.88
    assert by_task.zeta_worst[0] < 0.75
    with pytest.raises(ValueError, match="at least two tasks"):
        holdout_coverage(synthetic_curves(C=20).values_at([1, 27]), split="tasks")


def test_calibrate_needs_the_last_rung_and_reports_missing_configs():
    c = LearningCurves(config=[0, 0, 1], fidelity=[1, 2, 1], metric=[0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="only 1 configuration"):
        calibrate(c, [1, 2], holdout=None)
    c = synthetic_curves(C=30)
    short = LearningCurves(config=np.r_[c.config, [99]], fidelity=np.r_[c.fidelity, [1]], metric=np.r_[c.metric, [0.2]])
    cal = calibrate(short, [1, 3, 9, 27], holdout=None)
    assert any("1 configuration(s) without the last rung" in n for n in cal.notes)
    with pytest.raises(ValueError, match="rungs are required"):
        calibrate(short)


def test_geometric_rungs_and_suggest_ladder_with_dominated_rungs():
    assert geometric_rungs(1, 81).tolist() == [1, 3, 9, 27, 81]
    assert geometric_rungs(1, 100, eta=10).tolist() == [1, 10, 100]
    assert geometric_rungs(1, 52, available=np.arange(1, 53)).tolist() == [1, 3, 9, 27, 52]
    with pytest.raises(ValueError, match="eta = 1 is out of range"):
        geometric_rungs(1, 10, eta=1)
    # a rung that is no closer to the target than the previous one is dominated
    ep = np.array([1, 3, 9, 27])
    rng = np.random.default_rng(0)
    final = rng.uniform(0.5, 0.9, 200)
    noise = rng.exponential(0.1, (200, 1))
    vals = np.c_[final - 0.3 * noise[:, 0], final - 0.3 * noise[:, 0], final - 0.05 * noise[:, 0], final]
    c = LearningCurves(config=np.repeat(np.arange(200), 4), fidelity=np.tile(ep, 200), metric=vals.ravel())
    cal = suggest_ladder(c, holdout=None)
    assert cal.rungs.tolist() == [1, 3, 9, 27] and cal.dominated == [1]
    dropped = suggest_ladder(c, holdout=None, drop_dominated=True)
    assert dropped.rungs.tolist() == [1, 9, 27] and not dropped.dominated


def test_assumption1_convex_chain():
    ok, slopes = cost_bias_convexity([1, 4, 16], [0.4, 0.1, 0.0])
    assert ok and slopes == pytest.approx([1 / 0.3, 2 / 0.1])
    # slopes (5 − 1)/0.3 = 13.3 then (6 − 5)/0.1 = 10: the middle rung is too dear for its bias
    ok, slopes = cost_bias_convexity([1, 25, 36], [0.4, 0.1, 0.0])
    assert not ok and slopes == pytest.approx([4 / 0.3, 10.0])
    assert not cost_bias_convexity([1, 4, 16], [0.4, 0.4, 0.0])[0]  # ζ does not decrease: infinite slope


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    cal = calibrate(synthetic_curves(C=100), [1, 3, 9, 27], holdout="configs", repeats=3)
    cal.plot(str(tmp_path / "c.png"))
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"


# ------------------------------------------------------------------------------------------ CLI
def test_cli_calibrate_csv_then_simulate_the_saved_instance(tmp_path, capsys):
    curves = synthetic_curves(C=120, seeds=2, noise=0.01)
    csv = tmp_path / "curves.csv"
    curves.to_csv(csv)
    ladder, inst, png = tmp_path / "ladder.json", tmp_path / "inst.json", tmp_path / "cal.png"
    rc = main(
        ["calibrate", str(csv), "--metric", "metric", "--mode", "max", "--fidelity", "fidelity", "--seed-col",
         "seed", "--fidelities", "1,3,9,27", "--quantile", "0.9", "--repeats", "3", "--plot", str(png),
         "--save-ladder", str(ladder), "--save-instance", str(inst), "--arms", "20"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0 and "σ̂ seeds" in out and "instance arms within zeta" in out
    lad = FidelityLadder.from_dict(json.loads(ladder.read_text()))
    assert lad.resources == (1.0, 3.0, 9.0, 27.0)
    rc = main(["simulate", "--policy", "sh", "--instance", str(inst), "--runs", "2", "--no-progress", "--json"])
    assert rc == 0 and json.loads(capsys.readouterr().out)["runs"] == 2


def test_cli_calibrate_errors_exit_2(tmp_path, capsys):
    csv = tmp_path / "c.csv"
    synthetic_curves(C=10).to_csv(csv)
    assert main(["calibrate", str(csv), "--fidelities", "1,27"]) == 2
    assert "needs --metric NAME and --mode" in capsys.readouterr().err
    assert main(["calibrate", str(tmp_path / "missing.csv"), "--metric", "m", "--mode", "max"]) == 2
    assert "neither a file nor a source" in capsys.readouterr().err
    args = ["calibrate", str(csv), "--metric", "metric", "--mode", "max", "--fidelities", "3,1", "--no-plot"]
    assert main(args) == 2
    assert "strictly increasing" in capsys.readouterr().err


def test_cli_calibrate_suggests_a_ladder_and_prints_json(tmp_path, capsys):
    csv = tmp_path / "c.csv"
    ep = np.arange(1, 28)
    vals = np.linspace(0.5, 0.9, 40)[:, None] * (1 - 0.5 / ep)
    LearningCurves(config=np.repeat(np.arange(40), 27), fidelity=np.tile(ep, 40), metric=vals.ravel()).to_csv(csv)
    assert main(["calibrate", str(csv), "--metric", "metric", "--mode", "max", "--no-plot", "--json",
                 "--holdout", "none"]) == 0  # fmt: skip
    d = json.loads(capsys.readouterr().out)
    assert d["calibration"]["rungs"] == [1.0, 3.0, 9.0, 27.0]
