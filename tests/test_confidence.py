from __future__ import annotations

import math

import numpy as np
import pytest

from mf_sched import confidence as C


def test_subgaussian_and_hoeffding_formulas():
    assert C.subgaussian_radius(8, 0.05, 1.0) == pytest.approx(math.sqrt(2 * math.log(20) / 8))
    # Hoeffding for [a, b] equals sub-Gaussian with sigma = (b - a)/2
    assert C.hoeffding_radius(50, 0.1, 0, 2) == pytest.approx(C.subgaussian_radius(50, 0.1, 1.0))
    assert C.hoeffding_radius(50, 0.1) == pytest.approx(math.sqrt(math.log(10) / 100))


def test_anytime_radius_matches_poiani_B():
    # B(t, delta) = sqrt(2 sigma^2 log(4 t^2 / delta) / t)
    for t, d, s in [(1, 0.01, 1.0), (315, 0.001 / 8000, 1.0), (10, 0.1, 0.5)]:
        assert C.anytime_radius(t, d, s) == pytest.approx(math.sqrt(2 * s * s * math.log(4 * t * t / d) / t))


def test_poiani_phase_lengths():
    # Poiani et al. 2022, §4.1 and §7: t_m = min{t : 4 B(t, delta/(KM)) <= alpha_m},
    # Synthetic A (K=2000, M=4, delta=1e-3)
    delta = 1e-3 / (2000 * 4)
    t = np.arange(1, 10_000)
    r = 4 * C.anytime_radius(t, delta, 1.0)
    assert int(t[np.argmax(r <= 1.711159)]) == 315
    assert int(t[np.argmax(r <= 0.396804)]) == 7118


def test_wang_beta_and_lucb1_beta():
    # sigma = 1/2 recovers the papers' [0, 1] formulas exactly
    assert C.wang_beta(10, 3, 0.1, L=60) == pytest.approx(math.sqrt(math.log(60 * 81 / 0.1) / 10))
    assert C.lucb1_beta(4, 2, 0.1, 10) == pytest.approx(math.sqrt(math.log(1.25 * 10 * 16 / 0.1) / 8))
    assert C.ucb1_bonus(5, 100) == pytest.approx(math.sqrt(2 * math.log(100) / 5))
    # scaling with sigma
    assert C.wang_beta(10, 3, 0.1, L=60, sigma=1.0) == pytest.approx(2 * C.wang_beta(10, 3, 0.1, L=60))


def test_zero_samples_give_infinite_radius_and_vectorisation():
    r = C.subgaussian_radius(np.array([0, 1, 4]), 0.1, 1.0)
    assert np.isinf(r[0]) and np.all(np.isfinite(r[1:])) and r[1] > r[2]
    assert np.isinf(C.anytime_radius(0, 0.1, 1.0))
    assert np.isinf(C.wang_beta(np.array([0]), 1, 0.1, 4.0))[0]


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, math.nan])
def test_invalid_delta(bad):
    with pytest.raises(ValueError, match="delta"):
        C.subgaussian_radius(3, bad, 1.0)


def test_invalid_sigma_and_counts():
    with pytest.raises(ValueError, match="sigma"):
        C.anytime_radius(3, 0.1, 0.0)
    with pytest.raises(ValueError, match=">= 0"):
        C.subgaussian_radius(-1, 0.1, 1.0)


def test_kl_divergences():
    assert C.gaussian_kl(0.0, 1.0, 2.0) == pytest.approx(1 / 8)
    assert C.bernoulli_kl(0.5, 0.5) == 0.0
    assert C.bernoulli_kl(0.3, 0.6) == pytest.approx(0.3 * math.log(0.5) + 0.7 * math.log(0.7 / 0.4))
    assert C.bernoulli_kl(0.0, 0.5) == pytest.approx(math.log(2))
    assert np.isinf(C.bernoulli_kl(0.5, 0.0))
    # Pinsker: kl(p, q) >= 2 (p - q)^2
    p, q = np.random.default_rng(0).random((2, 1000))
    assert np.all(C.bernoulli_kl(p, q) >= 2 * (p - q) ** 2 - 1e-12)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        C.bernoulli_kl(1.2, 0.5)
    assert C.kl_divergence("gaussian", 0, 2, sigma=2) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="accepted"):
        C.kl_divergence("poisson", 1, 2)


def test_psi_family_of_kandasamy_et_al():
    # sigma-sub-Gaussian: psi(e) = e^2 / (2 sigma^2); Bernoulli / [0, 1] (sigma = 1/2) is Hoeffding's 2 e^2
    assert C.psi(0.3, 0.5) == pytest.approx(2 * 0.09)
    assert C.psi(0.3, 0.2) == pytest.approx(0.09 / 0.08)
    y = np.array([0.0, 0.01, 2.5])
    np.testing.assert_allclose(C.psi(C.psi_inv(y, 0.7), 0.7), y)
    assert C.psi_inv(np.inf, 1.0) == np.inf
    # the MF-UCB width psi^{-1}(rho log t / n), +inf for n = 0, and UCB1's bonus at rho = 4
    assert C.psi_ucb_width(7, 50, 2.0, 0.2) == pytest.approx(0.2 * math.sqrt(2 * 2 * math.log(50) / 7))
    assert C.psi_ucb_width(0, 50, 2.0) == np.inf
    assert C.psi_ucb_width(3, 1, 2.0) == 0.0
    np.testing.assert_allclose(C.psi_ucb_width([1, 5, 9], 77, 4.0, 0.3), C.ucb1_bonus([1, 5, 9], 77, 0.3))
    with pytest.raises(ValueError, match="rho"):
        C.psi_ucb_width(3, 10, 0.0)
    with pytest.raises(ValueError, match="eps"):
        C.psi(-0.1)


def test_mfucb_gamma_eq4():
    # gamma(m) = psi^{-1}((lambda_m / lambda_{m+1}) psi(zeta_m)) = sqrt(lambda_m / lambda_{m+1}) zeta_m (any sigma)
    for sigma in (0.2, 0.5, 1.0):
        g = C.mfucb_gamma([1, 5, 20, 50], [1.0, 0.5, 0.2, 0.0], sigma)
        np.testing.assert_allclose(g, [math.sqrt(1 / 5), 0.5 * math.sqrt(5 / 20), 0.2 * math.sqrt(20 / 50)])
    # Kandasamy et al. 2016, App. C: problem 1 (lambda = 1, 10, 1000) gives (0.063246, 0.01)
    np.testing.assert_allclose(C.mfucb_gamma([1, 10, 1000], [0.2, 0.1, 0], 0.2), [0.2 * math.sqrt(0.1), 0.01])
    assert C.mfucb_gamma([1.0], [0.0]).size == 0
    with pytest.raises(ValueError, match="strictly increasing"):
        C.mfucb_gamma([2, 1], [0.1, 0])
