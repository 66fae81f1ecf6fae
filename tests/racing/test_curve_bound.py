"""The curve-aware bound (mf_sched.racing.curve_bound) and its fitting (mf_sched.racing.fit)."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from scipy.special import comb

from mf_sched.racing.curve_bound import CurveBound, CurveBoundFit, curve_bound_families, shipped_curve_bound
from mf_sched.racing.fit import best_of_k_weights, fit_curve_bound, ladder_scores, miss_rate, quantile_regression

FR = np.array([1 / 27, 1 / 9, 1 / 3, 1.0])
LADDER = [FR[:-1].tolist()]


def tasks(n_tasks: int, rng: np.random.Generator, n: int = 100, late: float = 0.0) -> dict[str, np.ndarray]:
    """Accuracy-like curves: a final value and a speed per configuration, seed noise 0.01; ``late`` adds a late
    jump to a share of the configurations (a slow starter)."""
    out = {}
    for t in range(n_tasks):
        final, speed = rng.uniform(0.5, 0.9, n), rng.uniform(0.3, 3.0, n)
        x = final[:, None] * (1 - np.exp(-FR[None] * 12 * speed[:, None]))
        if late:
            jump = rng.random(n) < late
            x[jump, -1] += 0.2
        out[f"t{t}"] = x + rng.normal(0, 0.01, x.shape)
    return out


@pytest.fixture(scope="module")
def fitted() -> CurveBoundFit:
    return fit_curve_bound(tasks(12, np.random.default_rng(0)), FR, family="toy", n_arms=(8, 24), ladders=LADDER,
                           alphas=(0.05, 0.2), tolerances=(0.0, 0.01), draws=100)  # fmt: skip


def test_best_of_k_weights_is_the_closed_form_probability():
    rng = np.random.default_rng(1)
    final = rng.random(9)
    w = best_of_k_weights(final, 4)
    ranks = np.argsort(np.argsort(final)) + 1  # 1 = worst
    expected = np.array([comb(j - 1, 3) / comb(9, 4) for j in ranks])
    np.testing.assert_allclose(w, expected)
    # brute force over every 4-subset
    import itertools

    counts = np.zeros(9)
    for sub in itertools.combinations(range(9), 4):
        counts[max(sub, key=lambda i: final[i])] += 1
    np.testing.assert_allclose(w, counts / counts.sum())


def test_quantile_regression_solves_the_check_loss_exactly():
    rng = np.random.default_rng(2)
    X = np.c_[np.ones(200), rng.normal(size=200)]
    y = X @ [1.0, 2.0] + rng.normal(size=200)
    b = quantile_regression(X, y, 0.9)
    frac_below = np.mean(y <= X @ b + 1e-9)
    assert 0.89 <= frac_below <= 0.92  # an exact LP solution interpolates the quantile
    b0 = quantile_regression(X[:, :1], y, 0.5)  # intercept only: the sample median
    assert b0[0] == pytest.approx(np.median(y), abs=1e-6) or np.mean(y <= b0[0]) == pytest.approx(0.5, abs=0.01)


def test_the_bound_grows_with_what_is_left_to_train(fitted):
    b = fitted.select(n_arms=24, alpha=0.05, fractions=LADDER[0])
    # where a strong run typically stands: 0.4 after 1/27 of training, 0.84 after 1/3
    assert b.gain(0.4, math.nan, 1 / 27, math.nan) > b.gain(0.84, 0.8, 1 / 3, 1 / 9) > 0  # earlier: more to come
    assert b.gain(0.5, math.nan, 1 / 100, math.nan) == math.inf  # before every fitted fraction: no bound


def test_scalar_path_equals_the_vectorised_one(fitted):
    b = fitted.select(n_arms=24, alpha=0.05, fractions=LADDER[0])
    rng = np.random.default_rng(3)
    for _ in range(50):
        v, p = rng.uniform(0.1, 0.95, 2)
        f = float(rng.choice([1 / 27, 1 / 9, 0.2, 1 / 3, 0.5]))
        pf = f / 3 if rng.random() < 0.7 else math.nan
        p = p if pf == pf else math.nan
        g, t = b.gain_one(v, p, f, pf)
        assert g == pytest.approx(float(b.gain(v, p, f, pf)), rel=1e-9, abs=1e-12)
        assert t == pytest.approx(float(b.typical(v, p, f, pf)), rel=1e-9, abs=1e-12)


def test_held_out_miss_rate_is_near_alpha_and_a_late_jump_is_missed(fitted):
    rng = np.random.default_rng(4)
    new = tasks(6, rng)
    # exchangeable tasks: the all-rung miss rate stays near alpha (0.05; 6 tasks x 200 studies: allow 0.12)
    assert miss_rate(fitted, new, FR, n_arms=24, alpha=0.05) <= 0.12
    # a kind of task the bound never saw (a fifth of the runs jump by 0.2 at the end) is missed far more often
    assert miss_rate(fitted, tasks(6, rng, late=0.2), FR, n_arms=24, alpha=0.05) > 0.3


def test_select_is_conservative_between_grid_points(fitted):
    small, large = fitted.select(n_arms=8), fitted.select(n_arms=24)
    assert fitted.select(n_arms=20).n_arms == 8 and fitted.select(n_arms=1000).n_arms == 24
    assert fitted.select(n_arms=None).n_arms == 8
    assert fitted.select(alpha=0.1).alpha == 0.05  # the largest calibrated alpha at or below the one asked
    assert fitted.select(tolerance=0.005).tolerance == 0.0
    with pytest.raises(ValueError, match="alpha >= 0.05"):
        fitted.select(alpha=0.01)
    with pytest.raises(ValueError, match="tolerance"):
        fitted.select(tolerance=1.5)
    assert small.lam > -math.inf and large.lam > -math.inf
    # a smaller alpha or tolerance never gives a smaller multiplier
    assert fitted.select(alpha=0.05).lam >= fitted.select(alpha=0.2).lam
    assert fitted.select(tolerance=0.0).lam >= fitted.select(tolerance=0.01).lam


def test_round_trips_and_validation(fitted):
    d = json.loads(json.dumps(fitted.to_dict()))
    again = CurveBoundFit.from_dict(d)
    b1, b2 = fitted.select(n_arms=24), again.select(n_arms=24)
    assert b1.gain(0.6, 0.5, 1 / 3, 1 / 9) == pytest.approx(b2.gain(0.6, 0.5, 1 / 3, 1 / 9), rel=1e-6)
    assert CurveBound.from_dict(json.loads(json.dumps(b1.to_dict()))).lam == b1.lam
    with pytest.raises(ValueError, match="other features"):
        CurveBoundFit.from_dict({**d, "features": ["1", "v"]})
    with pytest.raises(ValueError, match="needs the fields"):
        CurveBoundFit.from_dict({"family": "x"})
    with pytest.raises(ValueError, match="lam"):
        CurveBoundFit.from_dict({**d, "lam": [[[["nan"]]]]})
    with pytest.raises(ValueError, match="one row of 3"):
        CurveBound.from_dict({**b1.to_dict(), "hi": [[0.1, 0.2, 0.3]] * 9})
    with pytest.raises(ValueError, match="not among the fractions"):
        fit_curve_bound(tasks(3, np.random.default_rng(5)), FR, family="x", ladders=[[0.5, 0.02]])
    with pytest.raises(ValueError, match="give >= 2"):
        fit_curve_bound({"a": np.ones((5, 4))}, FR, family="x", ladders=LADDER)


def test_raised_never_lowers_and_remembers_who_raised_it(fitted):
    b = fitted.select(n_arms=24)
    assert b.raised(b.lam - 1, ["x"]) is b
    r = b.raised(b.lam + 1, ["run-7"]).raised(b.lam + 2, ["run-9"])
    assert r.lam == b.lam + 2 and r.raised_by == ("run-7", "run-9")
    assert r.gain(0.6, 0.5, 1 / 3, 1 / 9) > b.gain(0.6, 0.5, 1 / 3, 1 / 9)


def test_offset_and_scale_read_percentages_and_error_rates(fitted):
    b = fitted.select(n_arms=24)
    pct = dataclasses.replace(b, scale=100.0)
    assert pct.gain(60.0, 50.0, 1 / 3, 1 / 9) == pytest.approx(100 * b.gain(0.6, 0.5, 1 / 3, 1 / 9))
    err = dataclasses.replace(b, offset=-1.0)  # scores are −error: 1 − error reads like an accuracy
    assert err.gain(-0.4, -0.5, 1 / 3, 1 / 9) == pytest.approx(b.gain(0.6, 0.5, 1 / 3, 1 / 9))


def test_ladder_scores_exceed_lambda_exactly_where_the_bound_is_broken(fitted):
    b = fitted.select(n_arms=24, fractions=LADDER[0])
    obs = tasks(1, np.random.default_rng(6))["t0"]
    sc = ladder_scores(b, obs, FR, LADDER[0])
    broken = np.zeros(obs.shape[0], dtype=bool)
    for m in range(3):
        prev = obs[:, m - 1] if m else np.full(obs.shape[0], np.nan)
        pf = FR[m - 1] if m else np.nan
        broken |= obs[:, -1] > obs[:, m] + b.gain(obs[:, m], prev, FR[m], pf) + 1e-9
    np.testing.assert_array_equal(sc > b.lam + 1e-9, broken)


def test_shipped_bounds_are_valid_and_cover_their_sources():
    fams = curve_bound_families()
    assert set(fams) == {"unit", "loss"}
    for name in fams:
        fit = shipped_curve_bound(name)
        prov = fit.provenance
        assert prov["sources"] and prov["made_by"]
        b = fit.select(n_arms=24, alpha=0.05, tolerance=0.005, fractions=[1 / 27, 1 / 9, 1 / 3])
        assert 0 <= b.gain(-0.5 if name == "loss" else 0.5, math.nan, 1 / 27, math.nan) < math.inf
        # on real curves a run still climbing gets a wider bound than one that has flattened (same value)
        v, flat, climbing = (-0.5, -0.51, -0.8) if name == "loss" else (0.7, 0.69, 0.5)
        assert b.gain(v, flat, 1 / 3, 1 / 9) < b.gain(v, climbing, 1 / 3, 1 / 9)
        # the held-out coverage the benchmark measured is recorded with the data
        assert set(prov["held_out"]) == set(prov["sources"])
    with pytest.raises(ValueError, match="accepted: loss, unit"):
        shipped_curve_bound("reward")
