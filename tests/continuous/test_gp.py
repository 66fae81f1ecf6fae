"""mf_sched.continuous.gp: the fast posterior path agrees with scikit-learn; the hyper-parameter search works."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")
from sklearn.gaussian_process import GaussianProcessRegressor  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from mf_sched.continuous import gp  # noqa: E402


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with threadpool_limits(1):
        yield


def data(n: int = 30, D: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, D))
    return X, np.sin(4 * X).sum(axis=1) - 3.0


@pytest.mark.parametrize("kernel", gp.KERNELS)
@pytest.mark.parametrize("fit_noise", [False, True])
def test_fast_posterior_matches_sklearn_predict(kernel, fit_noise):
    X, y = data()
    D = X.shape[1]
    bounds = gp.theta_bounds(kernel, D, fit_noise, signal=(1, 10), bandwidth=(1e-3, 10))
    theta0 = bounds.mean(axis=1)
    post = gp.fit_posterior(
        X, y, kernel=kernel, theta=theta0, noise_var=None if fit_noise else 1e-6, bounds=bounds, optimize=True
    )
    assert np.all(post.theta >= bounds[:, 0] - 1e-9) and np.all(post.theta <= bounds[:, 1] + 1e-9)
    ref = GaussianProcessRegressor(
        kernel=gp.sklearn_kernel(kernel, D, post.theta, None, fit_noise),
        alpha=1e-10 if fit_noise else 1e-6,
        optimizer=None,
    ).fit(X, y)
    Z = np.random.default_rng(1).random((20, D))
    mu, sd = ref.predict(Z, return_std=True)
    if fit_noise:  # sklearn's std includes the fitted white noise; ours is the latent function's
        sd = np.sqrt(np.maximum(sd**2 - np.exp(post.theta[-1]), 0.0))
    m2, s2 = post.predict(Z)
    np.testing.assert_allclose(m2, mu, atol=1e-10 * max(1.0, np.abs(mu).max()))
    np.testing.assert_allclose(s2, sd, atol=1e-8)
    for z, m, s in zip(Z[:5], m2, s2):
        a, b = post.predict_one(z)
        assert a == pytest.approx(m, abs=1e-10) and b == pytest.approx(s, abs=1e-10)


def test_hyperparameter_search_beats_the_start_and_recovers_a_bandwidth():
    rng = np.random.default_rng(3)
    X = rng.random((60, 1))
    y = np.sin(2 * np.pi * X[:, 0] / 0.5)  # smooth, period 0.5
    bounds = gp.theta_bounds("se", 1, False, signal=(0.1, 10), bandwidth=(1e-3, 10))
    start = np.log([1.0, 5.0])
    post = gp.fit_posterior(X, y, kernel="se", theta=start, noise_var=1e-6, bounds=bounds, optimize=True)
    ref = GaussianProcessRegressor(kernel=gp.sklearn_kernel("se", 1, start, bounds, False), alpha=1e-6, optimizer=None)
    ref.fit(X, y)
    assert ref.log_marginal_likelihood(post.theta) > ref.log_marginal_likelihood(start) + 10
    assert 0.03 < np.exp(post.theta[1]) < 0.3  # a bandwidth on the scale of the period


def test_prior_without_data_and_duplicate_points():
    post = gp.fit_posterior(np.zeros((0, 2)), np.zeros(0), kernel="se", theta=np.log([4.0, 0.3]), noise_var=1e-6)
    assert post.predict_one(np.array([0.3, 0.3])) == (0.0, 2.0)
    X = np.array([[0.5, 0.5]] * 5 + [[0.2, 0.1]])
    y = np.array([1.0] * 5 + [0.0])
    p = gp.fit_posterior(X, y, kernel="se", theta=np.log([1.0, 0.3]), noise_var=1e-12)
    mu, sd = p.predict_one(np.array([0.5, 0.5]))
    assert mu == pytest.approx(1.0, abs=1e-4) and sd < 1e-3


def test_bad_kernel_and_theta_shape():
    with pytest.raises(ValueError, match="kernel = 'rbf' is unknown"):
        gp.fit_posterior(np.zeros((1, 1)), np.zeros(1), kernel="rbf", theta=np.zeros(2), noise_var=1e-6)
    with pytest.raises(ValueError, match="needs 3"):
        gp.fit_posterior(np.zeros((1, 2)), np.zeros(1), kernel="se-ard", theta=np.zeros(2), noise_var=1e-6)
