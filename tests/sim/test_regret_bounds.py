"""Regret lower-bound constants (Kandasamy et al. 2016 Thm 4 / Lemma 11; Wang et al. 2023 Thm 4.4) and
MF-UCB's instance calculator, on hand-checked cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mf_sched.sim.bounds import (
    kandasamy_regret_lower_bound,
    mfucb_analysis,
    mfucb_low_fidelity_caps,
    wang_regret_lower_bound,
)


def kl(p: float, q: float) -> float:
    return p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))


# M = 2, lambda = (1, 10), zeta = (0.2, 0); best arm (0.7, 0.8)
MEANS = [[0.7, 0.8], [0.3, 0.4], [0.65, 0.6]]
COSTS, ZETA = [1.0, 10.0], [0.2, 0.0]


def test_kandasamy_lower_bound_by_hand():
    # arm 1: Delta^(1) = 0.8 - 0.3 - 0.2 = 0.3 > 0 -> p = 1, factor 1/(M - p + 1) = 1/2, both fidelities eligible
    a1 = 0.5 * 0.4 * min(1 / kl(0.3, 0.6), 10 / kl(0.4, 0.8))
    # arm 2: Delta^(1) = 0.8 - 0.65 - 0.2 = -0.05 < 0 -> p = 2, factor 1, only fidelity 2 (Delta = 0.2)
    a2 = 1.0 * 0.2 * 10 / kl(0.6, 0.8)
    lb = kandasamy_regret_lower_bound(MEANS, COSTS, ZETA)
    np.testing.assert_allclose(lb.per_arm, [0.0, a1, a2])
    assert lb.fidelity.tolist() == [-1, 0, 1] and lb.coefficient == pytest.approx(a1 + a2)
    assert lb.log_of == "n_Lambda" and lb.at(1e4) == pytest.approx((a1 + a2) * math.log(1000))
    # Lemma 11 as stated: c'_p = 1/(M-p+1) min_{l>=p} (mu* - zeta(l)) (1 - mu* + zeta(l)), with Delta^2
    c1 = 0.5 * min(0.6 * 0.4, 0.8 * 0.2)
    c2 = 1.0 * 0.8 * 0.2
    gap = kandasamy_regret_lower_bound(MEANS, COSTS, ZETA, form="gap")
    np.testing.assert_allclose(gap.per_arm, [0.0, c1 * 0.4 * min(1 / 0.09, 10 / 0.16), c2 * 0.2 * 10 / 0.04])
    assert np.all(gap.per_arm <= lb.per_arm + 1e-12)  # KL(a||b) <= (a-b)^2 / (b(1-b)): the gap form is weaker
    # Gaussian: KL = Delta^2 / (2 sigma^2), both forms coincide
    g = kandasamy_regret_lower_bound(MEANS, COSTS, ZETA, kind="gaussian", sigma=0.5)
    np.testing.assert_allclose(g.per_arm, [0, 0.5 * 0.4 * min(0.5 / 0.09, 5 / 0.16), 0.2 * 5 / 0.04])
    assert "extension" in g.note
    assert "Theorem 4 assumes" not in lb.note  # mu* = 0.8 in (1/2, 1), zeta(1) = 0.2 < 1/2


def test_wang_lower_bound_by_hand():
    # Wang's gaps: best arm vs the second best true mean (0.6); others vs mu_1 = 0.8
    # best arm: Delta^(1) = 0.7 - 0.2 - 0.6 = -0.1, Delta^(2) = 0.2 -> (10 - 1) 0.8 per pull, target 0.6
    b = 9 * 0.8 / kl(0.8, 0.6)
    # arm 1: Delta^(1) = 0.3 (target 0.6, pull cost 0.8 - 0.4), Delta^(2) = 0.4 (target 0.8, cost 8 - 0.4)
    a1 = min(0.4 / kl(0.3, 0.6), 7.6 / kl(0.4, 0.8))
    # arm 2: only fidelity 2 (Delta = 0.2), cost 8 - 0.6
    a2 = 7.4 / kl(0.6, 0.8)
    lb = wang_regret_lower_bound(MEANS, COSTS, ZETA)
    np.testing.assert_allclose(lb.per_arm, [b, a1, a2])
    assert lb.fidelity.tolist() == [1, 0, 1] and lb.log_of == "Lambda"
    assert lb.at(1e4) == pytest.approx((a1 + a2 + b) * math.log(1e4))
    # when fidelity 1 separates the best arm its term is 0 (it is exploited there for free)
    easy = wang_regret_lower_bound([[0.85, 0.8], [0.3, 0.4]], COSTS, ZETA, form="gap")
    assert easy.per_arm[0] == 0.0 and easy.fidelity[0] == 0
    with pytest.raises(ValueError, match="rewards in"):
        wang_regret_lower_bound([[-0.5, -0.2], [-0.6, -0.4]], COSTS, ZETA, kind="gaussian", sigma=1.0)
    with pytest.raises(ValueError, match="Bernoulli means"):
        wang_regret_lower_bound([[1.5, 0.8], [0.3, 0.4]], COSTS, ZETA)


def test_mfucb_constants_by_hand():
    a = mfucb_analysis([[0.4, 0.5], [0.6, 0.7], [0.8, 0.9]], [1, 10], [0.2, 0.0], sigma=1.0)
    # psi(e) = e^2/2. Arm (0.4, 0.5): home 1, Delta^(1) = 0.3 -> 0.4 * 1 / 0.045; arm (0.6, 0.7): home 2 -> 0.2*10/0.02
    assert a.c_mfucb == pytest.approx(0.4 / 0.045 + 100.0)
    assert a.c_ucb == pytest.approx(0.4 * 10 / 0.08 + 100.0)
    assert a.optimal.tolist() == [False, False, True]
    d = a.to_dict()
    assert d["home_fidelity_counts"] == [1, 1] and d["ratio"] == pytest.approx(a.c_mfucb / a.c_ucb)


def test_assumption_1_checker():
    # the paper's example zeta = (1/sqrt2, 1/2, 1/(2 sqrt2), 0) satisfies it for quadratic psi
    ok = mfucb_analysis(
        np.zeros((2, 4)) + [[0, 0, 0, 0.5], [0, 0, 0, 0.4]], [1, 2, 3, 4], [2**-0.5, 0.5, 2**-1.5, 0], 1.0
    )
    assert ok.assumption1_violations == []
    # 1/zeta^2 = 11.1, 11.9, 12.8: 11.1 + 11.9 > 12.8 breaks it at the second fidelity (0-based 1)
    bad = mfucb_analysis(np.zeros((2, 4)) + [[0, 0, 0, 0.5], [0, 0, 0, 0.4]], [1, 2, 3, 4], [0.3, 0.29, 0.28, 0], 1.0)
    assert bad.assumption1_violations == [1]


def test_low_fidelity_caps():
    assert mfucb_low_fidelity_caps(10_000, 2.0, [0.2 * math.sqrt(0.1)], 1.0).tolist() == [9211]
    # sigma enters through psi: the cap is floor(rho log n 2 sigma^2 / gamma^2) + 1, capped at n
    assert mfucb_low_fidelity_caps(1000, 3.0, [0.5, 0.0], 0.5).tolist() == [
        math.floor(3 * math.log(1000) / 0.5) + 1,
        1000,
    ]
    with pytest.raises(ValueError, match="n = 0"):
        mfucb_low_fidelity_caps(0, 2.0, [0.1], 1.0)
