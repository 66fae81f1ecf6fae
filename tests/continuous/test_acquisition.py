"""mf_sched.continuous.acquisition: the initial designs, the acquisition optimiser and the GP-BUCB step, each
against what it must satisfy whatever the implementation (strata, snapping, a brute force, the closed-form
posterior update)."""

from __future__ import annotations

import numpy as np
import pytest

from mf_sched.continuous.acquisition import (
    DESIGNS,
    condition_on_pending,
    direct_budget,
    initial_design,
    maximize_acquisition,
)
from mf_sched.continuous.space import Categorical, Float, Int, SearchSpace

MIXED = SearchSpace([Float("x", -1.0, 1.0), Int("k", 1, 4), Categorical("c", ["a", "b", "c"])])


@pytest.mark.parametrize("design", DESIGNS)
def test_every_design_gives_n_snapped_points_in_the_cube(design):
    Z = initial_design(MIXED, 12, design, np.random.default_rng(3))
    assert Z.shape == (12, MIXED.dim)
    assert np.all((Z >= 0.0) & (Z <= 1.0))
    np.testing.assert_array_equal(Z, MIXED.snap(Z))  # integers and one-hot categoricals exactly
    assert np.all(Z[:, 2:].sum(axis=1) == 1.0)  # one choice of the categorical per point


def test_the_latin_hypercube_puts_one_point_in_every_stratum():
    space = SearchSpace.box([0.0] * 3, [1.0] * 3)
    n = 9
    Z = initial_design(space, n, "lhs", np.random.default_rng(0))
    for d in range(3):
        assert sorted(np.floor(Z[:, d] * n).astype(int).tolist()) == list(range(n))


def test_designs_draw_only_from_the_generator_they_are_given():
    a = initial_design(MIXED, 5, "kmeans", np.random.default_rng(7))
    b = initial_design(MIXED, 5, "kmeans", np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    rng = np.random.default_rng(1)
    state = rng.bit_generator.state
    one = initial_design(SearchSpace.box([0.0, 0.0], [1.0, 1.0]), 1, "kmeans", rng)
    assert one.tolist() == [[0.5, 0.5]] and rng.bit_generator.state == state  # the centre, nothing drawn


def test_an_unknown_design_is_named():
    with pytest.raises(ValueError, match="design = 'sobol'; accepted: random, lhs, kmeans"):
        initial_design(MIXED, 3, "sobol", np.random.default_rng(0))


def test_direct_budget_is_the_codes_formula():
    for t in (1, 7, 999, 1000, 5000):
        for dim in (1, 3, 5, 9):
            assert direct_budget(t, dim) == int(np.ceil(7 * min(5, dim) ** 2 * np.sqrt(min(t, 1000))))


def test_the_optimiser_only_evaluates_snapped_points_and_finds_the_brute_force_optimum():
    seen: list[np.ndarray] = []

    def phi(z: np.ndarray) -> float:
        seen.append(z.copy())
        p = MIXED.decode(z)
        bonus = {"a": 0.0, "b": 0.3, "c": 0.1}[p["c"]]
        return -((p["x"] - 0.3) ** 2) - 0.2 * abs(p["k"] - 3) + bonus

    z, value = maximize_acquisition(phi, MIXED, maxfun=400)
    assert seen and all(np.array_equal(s, MIXED.snap(s)) for s in seen)
    assert value == pytest.approx(phi(z))
    # brute force over the discrete coordinates on a fine grid of x
    best = max(
        phi(MIXED.encode({"x": x, "k": k, "c": c}))
        for x in np.linspace(-1.0, 1.0, 2001)
        for k in (1, 2, 3, 4)
        for c in ("a", "b", "c")
    )
    assert value >= best - 1e-6
    assert MIXED.decode(z)["k"] == 3 and MIXED.decode(z)["c"] == "b"


def test_the_polish_only_moves_float_coordinates_and_only_improves():
    def phi(z: np.ndarray) -> float:
        p = MIXED.decode(z)
        return -((p["x"] - 0.123456) ** 2) - abs(p["k"] - 2)

    rough, v_rough = maximize_acquisition(phi, MIXED, maxfun=20, polish=False)
    fine, v_fine = maximize_acquisition(phi, MIXED, maxfun=20, polish=True)
    assert v_fine >= v_rough
    np.testing.assert_array_equal(fine[1:], rough[1:])  # the integer and categorical coordinates stay
    assert MIXED.decode(fine)["x"] == pytest.approx(0.123456, abs=1e-5)


def test_pending_points_keep_the_mean_and_shrink_the_variance_as_the_closed_form_says():
    pytest.importorskip("sklearn")
    from mf_sched.continuous import gp

    rng = np.random.default_rng(0)
    X = rng.random((12, 2))
    y = np.sin(3 * X).sum(axis=1)
    theta, noise = np.log([1.0, 0.3]), 1e-3
    post = gp.fit_posterior(X, y, kernel="se", theta=theta, noise_var=noise)
    pending = np.array([[0.5, 0.5]])
    after = condition_on_pending(post, X, y, pending, kernel="se", theta=theta, noise_var=noise)
    Z = rng.random((50, 2))
    mu0, sd0 = post.predict(Z)
    mu1, sd1 = after.predict(Z)
    np.testing.assert_allclose(mu1, mu0, atol=1e-8)  # observing the mean moves no mean
    assert np.all(sd1 <= sd0 + 1e-12)
    m0, s0 = post.predict_one(pending[0])
    m1, s1 = after.predict_one(pending[0])
    # one observation with noise variance η² at a point of prior variance v leaves v − v²/(v + η²) there
    assert s1**2 == pytest.approx(s0**2 - s0**4 / (s0**2 + noise), rel=1e-6)
    assert m1 == pytest.approx(m0, abs=1e-9)
