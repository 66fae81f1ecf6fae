"""The closest alternative in the multi-fidelity model and the tight lower bound (Poiani et al. 2024)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import shared_instance

from mf_sched import Instance, load_instance
from mf_sched.ladder import FidelityLadder
from mf_sched.sim.alternative import (
    alternative_means,
    answer_values,
    best_response,
    project,
    response_upper_bound,
)
from mf_sched.sim.bounds import cost_lower_bound, instance_tight_lower_bound, tight_lower_bound


def _h_grid(w, x, z, grid, sigma):
    up = np.maximum(grid[:, None] - (x + z), 0)
    dn = np.maximum((x - z) - grid[:, None], 0)
    return (w * (up**2 + dn**2)).sum(1) / (2 * sigma**2)


def _random_problem(rng, inconsistent: bool, zero_weights: bool):
    K, M = int(rng.integers(2, 5)), int(rng.integers(1, 5))
    z = np.sort(rng.uniform(0, 0.3, M))[::-1].copy()
    z[-1] = 0.0
    top = rng.uniform(0, 1, K)
    x = top[:, None] + rng.uniform(-1, 1, (K, M)) * z * (1.6 if inconsistent else 1.0)
    x[:, -1] = top
    w = rng.exponential(1.0, (K, M))
    if zero_weights:
        w *= rng.random((K, M)) < 0.6
    return w, x, z


def test_pair_values_match_brute_force():
    """f(i, b) = min_{η_b ≥ η_i} h_i(η_i) + h_b(η_b) against a dense grid, consistent and inconsistent
    means, with and without zero weights (the authors' ``solve_stop_problem_fast``)."""
    rng = np.random.default_rng(0)
    grid = np.linspace(-1.5, 2.5, 16001)
    for trial in range(60):
        w, x, z = _random_problem(rng, inconsistent=trial % 2 == 1, zero_weights=trial % 3 == 0)
        K = x.shape[0]
        H = np.stack([_h_grid(w[j], x[j], z, grid, 0.3) for j in range(K)])
        run_min = np.minimum.accumulate(H, axis=1)  # min over η_i <= η of h_i
        Z = -np.inf
        for i in range(K):
            f, eta_i, eta_b = answer_values(i, w, x, z, 0.3)
            for b in range(K):
                if b == i:
                    assert f[b] == np.inf
                    continue
                brute = (H[b] + run_min[i]).min()
                assert f[b] == pytest.approx(brute, abs=1e-5), (trial, i, b)
                assert eta_b[b] >= eta_i[b] - 1e-12
                # the reported alternative attains the value
                th_i = alternative_means(x[i], z, eta_i[b])
                th_b = alternative_means(x[b], z, eta_b[b])
                cost = (w[i] * (x[i] - th_i) ** 2 + w[b] * (x[b] - th_b) ** 2).sum() / (2 * 0.3**2)
                assert cost == pytest.approx(f[b], rel=1e-9, abs=1e-12)
            Z = max(Z, f.min())
        r = best_response(w, x, z, 0.3)
        assert r.value == pytest.approx(Z, rel=1e-12, abs=1e-15)
        assert answer_values(r.answer, w, x, z, 0.3)[0].min() == pytest.approx(Z, rel=1e-12, abs=1e-15)


def test_projection_of_consistent_arm_is_its_top_mean():
    p = project([[1.0, 2.0], [3.0, 1.0]], [[0.45, 0.5], [0.9, 0.5]], [0.1, 0.0], sigma=0.5)
    assert p.lo[0] == p.hi[0] == 0.5 and p.value[0] == 0.0
    assert p.value[1] > 0 and 0.5 < p.lo[1] < 0.8  # inconsistent arm: pulled between 0.8 and 0.5
    # zero weight at the top fidelity: every η within ζ of the lower-fidelity mean is a minimiser
    q = project([[1.0, 0.0]], [[0.45, 0.5]], [0.1, 0.0], sigma=0.5)
    assert (q.lo[0], q.hi[0], q.value[0]) == pytest.approx((0.35, 0.55, 0.0))


def test_single_fidelity_statistic_is_the_classical_glr_not_the_authors_bug():
    """The authors' solver (``riccardopoiani/adv-mf-bai``) returned arm 2 with 2.025 here;
    the GLR is arm 1 with 0.025."""
    r = best_response([[10.0], [10.0], [10.0]], [[1.0], [0.9], [0.0]], [0.0], sigma=1.0)
    assert (r.answer, r.challenger) == (0, 1)
    assert r.value == pytest.approx(10 * 10 / 20 * 0.1**2 / 2)
    assert r.eta_answer == pytest.approx(0.95)


def test_supergradient_is_a_valid_cut():
    """Danskin: ω' ↦ Σ ω'·d(µ, θ*(ω))/λ is ≥ F(ω') everywhere and = F(ω) at ω."""
    rng = np.random.default_rng(1)
    mu = np.array([[0.9, 0.85, 0.8], [0.7, 0.8, 0.78], [0.6, 0.55, 0.62], [0.95, 1.0, 0.9]])
    lam, z, sigma = np.array([0.1, 0.5, 2.0]), np.array([0.12, 0.06, 0.0]), 0.1

    def F(omega):
        return best_response(omega / lam, mu, z, sigma).value

    for _ in range(20):
        omega = rng.dirichlet(np.ones(mu.size)).reshape(mu.shape)
        r = best_response(omega / lam, mu, z, sigma)
        g = np.zeros_like(mu)
        g[r.answer] = (mu[r.answer] - alternative_means(mu[r.answer], z, r.eta_answer)) ** 2
        g[r.challenger] = (mu[r.challenger] - alternative_means(mu[r.challenger], z, r.eta_challenger)) ** 2
        g /= 2 * sigma**2 * lam
        assert (g * omega).sum() == pytest.approx(F(omega), rel=1e-10)
        for _ in range(10):
            other = rng.dirichlet(np.ones(mu.size)).reshape(mu.shape)
            assert F(other) <= (g * other).sum() * (1 + 1e-10)


def test_response_upper_bound_dominates_the_statistic():
    rng = np.random.default_rng(2)
    for trial in range(100):
        w, x, z = _random_problem(rng, inconsistent=trial % 2 == 0, zero_weights=False)
        stale = best_response(w * rng.uniform(0.5, 2, w.shape), x + rng.normal(0, 0.05, x.shape), z, 0.2)
        assert response_upper_bound(w, x, z, 0.2, stale) >= best_response(w, x, z, 0.2).value * (1 - 1e-12)


@pytest.mark.parametrize(
    "name, c_star, support",
    [
        ("poiani2024-4x5.json", 2.0002, [[1], [3], [2], [1]]),
        ("poiani2024-5x2.json", 14 + 4 * math.sqrt(10), [[0], [0], [0], [0], [1]]),
        ("poiani2024-lucb-nonstop.json", 4000.0, [[1], [1]]),
        ("poiani2024-mu2.json", 3.6206, [[0], [1], [2], [0]]),
        ("poiani2024-mu3.json", 1.9671, [[0], [0], [2], [1]]),
    ],
)
def test_tight_bound_published_instances(name, c_star, support):
    """Closed forms (ours): C*(5x2) = 14 + 4√10 and C*(LUCB non-stop) = 4000 exactly; the others to 4 digits;
    the optimal cost proportions put each arm on one fidelity."""
    inst = load_instance(shared_instance(name))
    lb = instance_tight_lower_bound(inst, 0.01)
    tol = 1e-6 if name in ("poiani2024-5x2.json", "poiani2024-lucb-nonstop.json") else 5e-5
    assert lb.complexity == pytest.approx(c_star, rel=tol)
    assert lb.optimal_fidelity(1e-4) == support
    assert lb.gap <= 1e-6 and lb.note == ""
    assert lb.cost_proportions.sum() == pytest.approx(1.0)
    assert lb.log_factor == pytest.approx((1 - 0.02) * math.log(0.99 / 0.01))
    assert lb.value == pytest.approx(lb.complexity * lb.log_factor)
    if "5x2" in name:
        w_c = (math.sqrt(10) - 2) / 12  # each challenger's cost share at the optimum (our closed form)
        np.testing.assert_allclose(lb.cost_proportions[:4, 0], w_c, rtol=1e-3)


def test_tight_bound_single_fidelity_two_arms_closed_form():
    """One fidelity, two Gaussian arms: C* = λ · 8σ²/Δ² (the characteristic time times the cost)."""
    lb = tight_lower_bound([[0.3], [0.5]], [2.5], [0.0], 0.05, sigma=0.4)
    assert lb.complexity == pytest.approx(2.5 * 8 * 0.16 / 0.04, rel=1e-6)
    np.testing.assert_allclose(lb.cost_proportions.ravel(), [0.5, 0.5], atol=1e-4)


def test_tight_bound_is_never_below_the_wang_bound_and_is_cost_unit_free():
    rng = np.random.default_rng(3)
    for _ in range(25):
        K, M = int(rng.integers(2, 5)), int(rng.integers(1, 4))
        z = np.sort(rng.uniform(0, 0.2, M))[::-1].copy()
        z[-1] = 0.0
        lam = np.sort(rng.uniform(0.1, 5, M)) + np.arange(M)
        top = rng.uniform(0, 1, K)
        mu = top[:, None] + rng.uniform(-1, 1, (K, M)) * z
        mu[:, -1] = top
        tight = tight_lower_bound(mu, lam, z, 0.01, sigma=0.2)
        wang = cost_lower_bound(mu, lam, z, 0.01, sigma=0.2)
        assert tight.complexity >= wang.complexity * (1 - 1e-6)
        scaled = tight_lower_bound(mu, 4 * lam, z, 0.01, sigma=0.2)
        assert scaled.complexity == pytest.approx(4 * tight.complexity, rel=1e-5)


def test_tight_bound_validation_and_notes():
    with pytest.raises(ValueError, match="not unique"):
        tight_lower_bound([[0.5], [0.5]], [1.0], [0.0], 0.1, sigma=1.0)
    with pytest.raises(ValueError, match="delta"):
        tight_lower_bound([[0.4], [0.5]], [1.0], [0.0], 1.5, sigma=1.0)
    with pytest.raises(ValueError, match="sigma"):
        tight_lower_bound([[0.4], [0.5]], [1.0], [0.0], 0.1, sigma=0.0)
    with pytest.raises(ValueError, match="two arms"):
        tight_lower_bound([[0.4]], [1.0], [0.0], 0.1, sigma=1.0)
    bad = tight_lower_bound([[0.9, 0.5], [0.5, 0.6]], [1.0, 2.0], [0.1, 0.0], 0.1, sigma=1.0)
    assert "outside the model" in bad.note
    inst = Instance([[0.2, 0.3], [0.5, 0.6]], FidelityLadder([1.0, 4.0], [0.2, 0.0]), {"kind": "bernoulli"})
    assert instance_tight_lower_bound(inst, 0.1) is None
    g = Instance([[0.4, 0.5], [0.5, 0.6]], FidelityLadder([0.5, 5.0], [0.1, 0.0]), {"kind": "gaussian", "sigma": 0.1})
    assert instance_tight_lower_bound(g, 0.6).value == 0.0
    assert instance_tight_lower_bound(g, 0.001).value > instance_tight_lower_bound(g, 0.01).value


def _exact_upper(lb, mu, lam, z, sigma):
    """``Σω / F(ω) ≥ C*`` for the cost proportions a method returned (F evaluated exactly)."""
    f = answer_values(lb.best_arm, lb.cost_proportions / np.asarray(lam), mu, z, sigma)[0]
    return 1.0 / f.min()


@pytest.mark.parametrize(
    "name",
    [
        "poiani2024-4x5.json",
        "poiani2024-5x2.json",
        "poiani2024-lucb-nonstop.json",
        "poiani2024-mu2.json",
        "poiani2024-mu3.json",
        "poiani2022-yahtzee.json",
    ],
)
def test_decomposition_agrees_with_the_cutting_planes_on_published_instances(name):
    """Issue 19 (defect 3): the fast method gives the reference value, and each method's bound lies below
    the other's exactly evaluated allocation (both are valid bounds)."""
    inst = load_instance(shared_instance(name), warn=False)
    nz = inst.noise
    sigma = nz.sigma_proxy if nz.kind == "truncated_gaussian" else nz.sigma
    mu, lam, z = inst.means, inst.ladder.costs, inst.ladder.zeta
    ref = tight_lower_bound(mu, lam, z, 0.01, sigma=sigma, method="cutting-plane")
    fast = tight_lower_bound(mu, lam, z, 0.01, sigma=sigma, method="decomposition")
    assert fast.method == "decomposition" and ref.method == "cutting-plane"
    assert fast.complexity == pytest.approx(ref.complexity, rel=1e-6)
    assert fast.complexity <= _exact_upper(ref, mu, lam, z, sigma) * (1 + 1e-9)
    assert ref.complexity <= _exact_upper(fast, mu, lam, z, sigma) * (1 + 1e-9)
    assert fast.gap <= 1e-6
    assert fast.cost_proportions.sum() == pytest.approx(1.0)


def test_decomposition_agrees_with_the_cutting_planes_on_random_instances():
    """Consistent and model-violating means, M = 1..4: the same value to 1e-6; a certified gap below 1e-6
    whenever the means satisfy the model (each challenger's optimum may mix fidelities)."""
    rng = np.random.default_rng(7)
    for trial in range(24):
        K, M = int(rng.integers(2, 25)), int(rng.integers(1, 5))
        z = np.sort(rng.uniform(0, 0.3, M))[::-1].copy()
        z[-1] = 0.0
        lam = np.cumsum(rng.uniform(0.1, 10, M))
        top = rng.uniform(0, 1, K)
        inconsistent = trial % 3 == 0
        mu = top[:, None] + rng.uniform(-1, 1, (K, M)) * z * (1.5 if inconsistent else 1.0)
        mu[:, -1] = top
        sigma = float(rng.uniform(0.05, 1.0))
        ref = tight_lower_bound(mu, lam, z, 0.05, sigma=sigma, method="cutting-plane")
        fast = tight_lower_bound(mu, lam, z, 0.05, sigma=sigma, method="decomposition")
        assert fast.complexity == pytest.approx(ref.complexity, rel=1e-6), trial
        assert fast.complexity <= _exact_upper(ref, mu, lam, z, sigma) * (1 + 1e-9), trial
        if not inconsistent:
            assert fast.gap <= 1e-6, trial


def test_auto_method_and_time_limit():
    """``method="auto"`` keeps the reference on small instances and uses the decomposition at scale; a time
    limit returns a valid (looser) bound, says so, and is not cached."""
    from mf_sched.sim import tight_bound

    small = Instance.synthetic(20, [1, 10, 100], [1.0, 0.2, 0.0], [0.3, 0.05, 0.0], seed=1)
    assert instance_tight_lower_bound(small, 0.05).method == "cutting-plane"
    big = Instance.synthetic(2000, [1, 10, 100], [1.0, 0.2, 0.0], [0.3, 0.05, 0.0], seed=1)
    full = instance_tight_lower_bound(big, 0.05)
    assert full.method == "decomposition" and full.gap <= 1e-6 and not full.timed_out
    tight_bound._TIGHT_CACHE.clear()
    cut = instance_tight_lower_bound(big, 0.05, time_limit=1e-6)
    assert cut.timed_out and "time limit" in cut.note
    assert 0 < cut.complexity <= full.complexity * (1 + 1e-9)
    assert cut.gap > 1e-6
    assert not tight_bound._TIGHT_CACHE  # a bound cut short is computed again next time
    with pytest.raises(ValueError, match="method"):
        tight_lower_bound([[0.4], [0.5]], [1.0], [0.0], 0.1, sigma=1.0, method="simplex")
    with pytest.raises(ValueError, match="time_limit"):
        tight_lower_bound([[0.4], [0.5]], [1.0], [0.0], 0.1, sigma=1.0, time_limit=0)


def test_long_computations_show_progress(capsys):
    """Defect 3: the bound ran for minutes without a word; at K·M ≥ 10,000 it reports its iterations."""
    from mf_sched.sim import tight_bound

    big = Instance.synthetic(3400, [1, 10, 100], [1.0, 0.2, 0.0], [0.3, 0.05, 0.0], seed=2)
    tight_bound._TIGHT_CACHE.clear()
    lb = instance_tight_lower_bound(big, 0.05, progress=True)
    assert lb.gap <= 1e-6
    assert "tight lower bound (K=3400, M=3)" in capsys.readouterr().err
