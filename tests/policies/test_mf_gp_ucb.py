"""MF-GP-UCB and GP-UCB: the paper's rules, and the ask/tell contract (the generic finite-armed contract
tests skip continuous-domain policies; these are their equivalents)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import _asktell
import numpy as np
import pytest
from _asktell import snapshot

from mf_sched import Bounded, DuplicateTellError, FidelityLadder, Policy, PolicyError, UnknownPullError, get_policy
from mf_sched.continuous.functions import get_function
from mf_sched.continuous.gp import fit_posterior
from mf_sched.continuous.space import Categorical, Float, Int, SearchSpace
from mf_sched.policies._mf_gp_ucb_rules import hyper_box, initial_scales
from mf_sched.policies.mf_gp_ucb import MFGPUCB, ROLE_NAMES, fidelity_rule, gamma_update, zeta_update

pytest.importorskip("sklearn")
from threadpoolctl import threadpool_limits  # noqa: E402

CURRIN = get_function("currin")
FAST = {"acq_maxfun": 150}  # small DIRECT budget keeps the tests quick


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with threadpool_limits(1):
        yield


def small(cls=MFGPUCB, *, budget=260.0, seed=0, **kw) -> MFGPUCB:
    """Currin with a small initial design (Λ_0 = 30: 20 points at fidelity 0, 1 of them at fidelity 1)."""
    params = {"init_capital": 30.0, **FAST, **kw}
    return cls(CURRIN.space, CURRIN.ladder, budget=budget, seed=seed, **params)


def evaluate(policy: MFGPUCB, pull) -> float:
    return float(CURRIN(policy.x(pull), pull.fidelity))


def drive(policy: MFGPUCB, steps: int, workers: int = 1, rng_seed: int = 0) -> list:
    """Keep up to `workers` pulls outstanding, complete a random one; the trace of decisions."""
    return _asktell.drive(
        policy,
        steps,
        lambda p: evaluate(policy, p),
        np.random.default_rng(rng_seed),
        workers,
        trace_of=lambda p: (p.arm, p.fidelity, tuple(policy.unit_point(p).round(12))),
    )


# ------------------------------------------------------------------------------------------ the paper's rules
def test_initial_design_follows_the_code_counts():
    for name, n1, n2 in (("currin", 40, 5), ("hartmann3", 90, 5), ("hartmann6", 200, 5)):
        f = get_function(name)
        p = MFGPUCB(f.space, f.ladder, seed=0)
        pulls = p.ask_batch()
        fids = np.array([q.fidelity for q in pulls])
        assert (np.sum(fids == 0), np.sum(fids == 1), fids.size) == (n1, n2, n1 + n2)
        # fidelity-1 points are the first n2 fidelity-0 points
        assert [q.arm for q in pulls[n1:]] == [q.arm for q in pulls[:n2]]
        assert p.ask() is None  # the first iteration waits for the whole design
    g = get_policy("gp-ucb")(CURRIN.space, CURRIN.ladder, seed=0)
    assert [q.fidelity for q in g.ask_batch()] == [1] * 10


def test_data_dependent_prior_and_initial_gamma_zeta():
    p = small()
    pulls = p.ask_batch()
    vals = [evaluate(p, q) for q in pulls]
    p.tell_batch(pulls, vals)
    r = max(vals) - min(vals)
    assert p.prior_mean == pytest.approx(max(vals) + 2 * r)
    assert p.y_scale == pytest.approx(r)
    assert p.gp_inputs(0)["noise_var"] == pytest.approx(1e-4 * np.var(vals) / r**2)
    np.testing.assert_allclose(p.gamma_current, [0.01 * r])
    np.testing.assert_allclose(p.zeta_current, [0.01 * r, 0.0])
    assert p.n_refits == 1  # hyper-parameters fitted once the design is in (t = 1)
    q = small(zeta="ladder")
    q.tell_batch(q.ask_batch(), vals)
    np.testing.assert_allclose(q.zeta_current, CURRIN.ladder.zeta)


def test_equal_initial_values_measure_y_in_its_own_units():
    """App. B divides by the range of Y_0; when it is 0 the unit is max(|max Y_0|, 1) (no division by zero)."""
    for value, unit in ((-7.0, 7.0), (0.25, 1.0)):
        mean, r, noise, gamma, zeta = initial_scales(np.full(5, value), 3)
        assert (mean, r, noise) == (value + 2 * unit, unit, 1e-10)
        np.testing.assert_allclose(gamma, [0.01 * unit] * 2)
        np.testing.assert_allclose(zeta, [0.02 * unit, 0.01 * unit, 0.0])
        p = small()
        pulls = p.ask_batch()
        p.tell_batch(pulls, [value] * len(pulls))
        assert (p.prior_mean, p.y_scale) == (mean, r)


def test_the_hyperparameter_box_is_the_codes():
    """Item 6: signal variance in [1, 10] (units of the range), bandwidths in √d·[10⁻³, 10], start s = 1, h = 0.2√d."""
    for kernel, D, fit_noise in (("se", 3, False), ("matern52-ard", 4, True)):
        bounds, theta = hyper_box(kernel, D, fit_noise)
        n_h = D if kernel.endswith("-ard") else 1
        assert bounds.shape == (1 + n_h + fit_noise, 2) and theta.shape == (1 + n_h + fit_noise,)
        np.testing.assert_allclose(np.exp(bounds[0]), [1.0, 10.0])
        np.testing.assert_allclose(np.exp(bounds[1 : 1 + n_h]), [[1e-3 * math.sqrt(D), 10 * math.sqrt(D)]] * n_h)
        np.testing.assert_allclose(np.exp(theta[: 1 + n_h]), [1.0] + [0.2 * math.sqrt(D)] * n_h)
        if fit_noise:
            assert math.exp(theta[-1]) == pytest.approx(1e-4)
    h3 = get_function("hartmann3")
    p = MFGPUCB(h3.space, h3.ladder, kernel="se", seed=0)  # D = 3
    np.testing.assert_array_equal(p.gp_inputs(0)["theta"], hyper_box("se", 3, False)[1])  # the start, before a fit


def test_the_rules_are_importable_from_the_policy_module():
    from mf_sched.policies import _mf_gp_ucb_rules as rules
    from mf_sched.policies import mf_gp_ucb

    for name in ("fidelity_rule", "gamma_update", "zeta_update"):
        assert getattr(mf_gp_ucb, name) is getattr(rules, name) and name in mf_gp_ucb.__all__


def test_fidelity_rule_picks_the_first_cheap_fidelity_still_uncertain():
    """Algorithm 1 step 2: the first m < M with β^½σ^(m)(x) ≥ γ^(m), else M (ties stay)."""
    y_scale, rb = 2.0, 2.0
    gamma = np.array([0.4, 0.2]) / y_scale  # γ in units of y; σ below is in units of y / 2
    assert fidelity_rule([rb * 0.1, rb * 9.0, rb * 9.0], gamma) == 0  # 2·0.1 = 0.2 ≥ 0.4/2
    assert fidelity_rule([rb * 0.09, rb * 0.05, rb * 9.0], gamma) == 1  # 0.18 < 0.2; 0.1 ≥ 0.1
    assert fidelity_rule([rb * 0.09, rb * 0.049, rb * 9.0], gamma) == 2
    with pytest.raises(ValueError, match="widths has 1 values; accepted: at least len"):
        fidelity_rule([0.1], gamma)
    f = get_function("hartmann3")
    g = get_policy("gp-ucb")(f.space, f.ladder, seed=0)
    assert g.fidelities_used == (2,) and {q.fidelity for q in g.ask_batch()} == {2}  # GP-UCB: only the top


def test_fidelity_rule_with_real_gps_switches_where_the_cheap_fidelity_is_known():
    """Fidelity 0 observed at 0.1, 0.5 and 0.9 (bandwidth 0.1; prior mean 3, unit scale). At a data point
    β^½σ^(0) ≈ 0 < γ, so the rule moves to fidelity 1; between data points it stays at fidelity 0,
    and the switch happens exactly where β^½σ^(0)(x) crosses γ."""
    X, y = np.array([[0.1], [0.5], [0.9]]), np.array([0.0, 1.0, 0.5]) - 3.0
    post = fit_posterior(X, y, kernel="se", theta=np.log([1.0, 0.1]), noise_var=1e-8)
    space = SearchSpace([Float("x", 0.0, 1.0)])
    rb = math.sqrt(MFGPUCB(space, FidelityLadder([1.0, 10.0], [0.5, 0.0]), seed=0, init_capital=30.0).beta_t(1))
    assert fidelity_rule([rb * post.predict_one(np.array([0.5]))[1]], [0.05]) == 1
    sd = post.predict_one(np.array([0.3]))[1]
    assert sd > 0.5
    assert fidelity_rule([rb * sd], [rb * sd * (1 - 1e-9)]) == 0
    assert fidelity_rule([rb * sd], [rb * sd * (1 + 1e-9)]) == 1


def test_gamma_grows_after_lambda_ratio_consecutive_low_fidelity_iterations():
    costs = CURRIN.ladder.costs  # λ(2)/λ(1) = 10
    g, c = np.array([0.1]), 0
    for _ in range(9):
        g, c = gamma_update(g, c, 0, costs)
    assert g.tolist() == [0.1] and c == 9
    g, c = gamma_update(g, c, 0, costs)  # the 10th consecutive fidelity-0 iteration
    assert g.tolist() == pytest.approx([0.5]) and c == 0
    for _ in range(5):
        g, c = gamma_update(g, c, 0, costs)
    g, c = gamma_update(g, c, 1, costs)  # a fidelity-M iteration resets the counter
    assert c == 0
    for _ in range(9):
        g, c = gamma_update(g, c, 0, costs)
    assert g.tolist() == pytest.approx([0.5])
    g1, c1 = gamma_update(g, 9, 0, costs, factor=1.0)  # factor 1: no adaptation, the counter kept
    assert g1.tolist() == pytest.approx([0.5]) and c1 == 9
    g, c = np.array([0.1, 0.3]), 0
    for _ in range(10):
        g, c = gamma_update(g, c, 0, get_function("hartmann3").ladder.costs)
    assert g.tolist() == pytest.approx([0.5, 0.5])  # every γ raised to at least the new one


def test_zeta_update_keeps_zeta_strictly_decreasing():
    z0 = np.array([0.3, 0.2, 0.1, 0.0])
    z = zeta_update(z0, 2, y_high=1.0, y_low=0.95)  # gap 0.05 ≤ 0.9·0.1: no change
    assert z.tolist() == pytest.approx([0.3, 0.2, 0.1, 0.0])
    z = zeta_update(z, 1, y_high=1.0, y_low=0.8)  # gap 0.2 > 0.09: increment ← 0.4, all increments ≥ 0.4
    assert z.tolist() == pytest.approx([1.2, 0.8, 0.4, 0.0])
    z = zeta_update(z, 0, y_high=0.0, y_low=1.0)  # a negative gap never shrinks ζ (signed, as the code)
    assert z.tolist() == pytest.approx([1.2, 0.8, 0.4, 0.0])
    assert z0.tolist() == [0.3, 0.2, 0.1, 0.0]  # the input is left alone
    with pytest.raises(ValueError, match="m = 3 is out of range"):
        zeta_update(z0, 3, y_high=1.0, y_low=0.0)


def test_the_policy_follows_the_rules_on_its_own_gps():
    """One worker, so no pending points: every iteration's fidelity is ``fidelity_rule`` on the widths of
    GPs rebuilt from ``gp_inputs`` at the proposed point, ``acquisition`` is min over fidelities of
    µ + β^½σ + ζ, and γ and ζ evolve exactly as ``gamma_update`` and ``zeta_update`` predict."""
    p = small(budget=300, seed=1, gamma=[1e-3])  # a small γ: long runs at fidelity 0 make it grow
    p.tell_batch(pulls := p.ask_batch(), [evaluate(p, q) for q in pulls])
    costs, gam, cnt, zeta = CURRIN.ladder.costs, p.gamma_current, 0, p.zeta_current
    last_y = {}
    seen, gam0, zeta0 = {"iteration": set(), "zeta-check": 0}, gam.copy(), zeta.copy()
    Z = np.random.default_rng(0).random((5, 2))
    while not p.done:
        t = p.describe()["t"]
        inputs = [p.gp_inputs(m) for m in (0, 1)]
        posts = [
            fit_posterior(i["X"], i["y"], kernel=p.kernel, theta=i["theta"], noise_var=i["noise_var"]) for i in inputs
        ]
        rb = math.sqrt(p.beta_t(t + 1))
        mu_sd = [post.predict(Z) for post in posts]
        phi = np.min([mu + rb * sd + zeta[m] / p.y_scale for m, (mu, sd) in enumerate(mu_sd)], axis=0)
        np.testing.assert_allclose(p.acquisition(Z), phi * p.y_scale + p.prior_mean, rtol=1e-12)
        q = p.ask()
        if q is None:
            break
        if p.describe()["t"] == t + 1:  # an iteration
            w = [rb * posts[0].predict_one(p.unit_point(q))[1]]
            assert q.fidelity == fidelity_rule(w, gam / p.y_scale)
        y = evaluate(p, q)
        p.tell(q, y)
        role = ROLE_NAMES[p.observations()["role"][-1]]
        if role == "iteration":
            seen["iteration"].add(q.fidelity)
            gam, cnt = gamma_update(gam, cnt, q.fidelity, costs)
            last_y[q.arm] = y
        elif role == "zeta-check":
            seen["zeta-check"] += 1
            zeta = zeta_update(zeta, q.fidelity, last_y[q.arm], y)
        np.testing.assert_array_equal(p.gamma_current, gam)
        np.testing.assert_array_equal(p.zeta_current, zeta)
    assert seen["iteration"] == {0, 1} and seen["zeta-check"] > 0  # both rules and both fidelities exercised
    assert gam[0] > gam0[0] and zeta[0] > zeta0[0]  # γ and ζ did grow


def test_zeta_check_queries_the_lower_fidelity_at_the_same_point():
    p = small(budget=2000)
    p.tell_batch(pulls := p.ask_batch(), [evaluate(p, q) for q in pulls])
    found, prev = False, None
    for _ in range(60):
        q = p.ask()
        p.tell(q, evaluate(p, q))
        role = ROLE_NAMES[p.observations()["role"][-1]]
        if role == "zeta-check":  # asked right after the fidelity-1 iteration that disagreed, at its point
            assert prev is not None and (prev[1], prev[0].fidelity) == ("iteration", 1)
            assert (q.arm, q.fidelity) == (prev[0].arm, 0)
            found = True
            break
        prev = (q, role)
    assert found
    z = p.zeta_current
    assert np.all(np.diff(z) < 0) and z[-1] == 0


def test_finds_currin_optimum_region_within_a_small_budget():
    f = CURRIN
    p = MFGPUCB(f.space, f.ladder, budget=300, seed=0, acq_maxfun=300)
    while not p.done:
        q = p.ask()
        p.tell(q, f(p.x(q), q.fidelity))
    rec = p.recommendation()
    x = np.array([rec.details["params"]["x0"], rec.details["params"]["x1"]])
    assert f.f_star - rec.details["value"] < 0.05
    assert np.linalg.norm(x - np.array(f.x_star)) < 0.1
    assert rec.details["value"] == pytest.approx(f(x))
    assert p.cost <= 300
    counts = np.bincount(p.observations()["fidelity"], minlength=2)
    assert counts[0] > 40  # it did use the cheap fidelity beyond the design


def test_gp_ucb_uses_only_the_top_fidelity_and_improves():
    g = small(get_policy("gp-ucb"), budget=250)
    while not g.done:
        q = g.ask()
        g.tell(q, evaluate(g, q))
    obs = g.observations()
    assert set(obs["fidelity"].tolist()) == {1}
    init = obs["value"][: np.count_nonzero(obs["role"] == 0)]
    assert obs["value"].max() > init.max()
    assert g.recommendation().details["value"] == obs["value"].max()


# ------------------------------------------------------------------------------------------ contract
def test_state_roundtrip_mid_run_rebuilds_the_gps_and_continues_identically():
    p = small(seed=7)
    drive(p, 30, workers=3)
    assert p.describe()["initialised"] and p.outstanding
    state = json.loads(json.dumps(p.state_dict()))
    q = Policy.from_state_dict(state)
    assert type(q) is MFGPUCB and snapshot(q) == snapshot(p)
    assert q.outstanding == p.outstanding
    Z = np.random.default_rng(0).random((7, 2))
    np.testing.assert_array_equal(q.acquisition(Z), p.acquisition(Z))  # GP state rebuilt exactly
    for pull in p.outstanding:
        v = evaluate(p, pull)
        p.tell(pull, v)
        q.tell(pull, v)
    t1 = drive(p, 12, workers=2, rng_seed=3)
    t2 = drive(q, 12, workers=2, rng_seed=3)
    assert t1 == t2 and len(t1) > 0
    assert snapshot(p) == snapshot(q)
    assert p.recommendation() == q.recommendation()


def test_deterministic_given_seed_and_design_depends_on_it():
    t1 = drive(small(seed=3), 16, workers=2)
    t2 = drive(small(seed=3), 16, workers=2)
    assert t1 == t2
    t3 = drive(small(seed=4), 16, workers=2)
    assert t1 != t3


def test_bad_tells_raise_and_leave_the_policy_unchanged():
    p = small()
    p.tell_batch(pulls := p.ask_batch(), [evaluate(p, q) for q in pulls])
    a, b = p.ask(), p.ask()
    before = snapshot(p)
    with pytest.raises(UnknownPullError):
        p.tell(10_000, 0.5)
    with pytest.raises(PolicyError):
        p.tell(a, math.nan)
    with pytest.raises(PolicyError):
        p.tell(a, -math.inf)
    with pytest.raises(UnknownPullError):
        p.tell(type(a)(a.id, b.arm, a.fidelity), 0.5)
    with pytest.raises(PolicyError):
        p.tell_batch([a, a], [0.1, 0.2])
    with pytest.raises(PolicyError):
        p.tell_batch([a, 10_000], [0.1, 0.2])
    assert snapshot(p) == before
    p.tell(a, evaluate(p, a))
    with pytest.raises(DuplicateTellError):
        p.tell(a, 1.0)
    after = snapshot(p)
    with pytest.raises(DuplicateTellError):
        p.give_back(a)
    assert snapshot(p) == after
    b_ok = Bounded(0.0, 20.0)
    r = small(noise=b_ok)
    x = r.ask()
    with pytest.raises(PolicyError, match="outside the declared reward range"):
        r.tell(x, 25.0)


def test_give_back_reissues_the_same_work():
    p, q = small(seed=5), small(seed=5)
    x = p.ask()
    p.give_back(x)
    assert p.outstanding == () and p.cost == 0.0
    y, z = p.ask(), q.ask()
    assert (y.arm, y.fidelity) == (z.arm, z.fidelity) and y.id != x.id
    # an iteration given back is proposed afresh: the same point and fidelity (the arm is re-used)
    for pol in (p, q):
        rest = pol.ask_batch()
        pol.tell_batch([y if pol is p else z] + rest, [evaluate(pol, r) for r in [y if pol is p else z] + rest])
    a = p.ask()
    n = p.n_points
    p.give_back(a)
    b = p.ask()
    assert (b.arm, b.fidelity) == (a.arm, a.fidelity) and p.n_points == n
    assert p.describe()["t"] == 1  # the given-back iteration is not counted twice


def test_budget_is_never_exceeded():
    budget = 97.0
    p = small(budget=budget, seed=2)
    for _ in range(500):
        if p.done:
            break
        batch = p.ask_batch(3)
        assert p.committed_cost <= budget + 1e-9
        if batch:
            p.tell_batch(batch, [evaluate(p, q) for q in batch])
    assert p.done and p.cost <= budget + 1e-9
    rec = p.recommendation()
    assert rec.reason == "budget"
    assert rec.arm is None or CURRIN(p.x(rec.arm)) == pytest.approx(rec.details["value"])


def test_parallel_proposals_spread_out():
    p = small()
    p.tell_batch(pulls := p.ask_batch(), [evaluate(p, q) for q in pulls])
    batch = p.ask_batch(3)
    pts = np.array([p.unit_point(q) for q in batch])
    assert len(batch) == 3
    assert min(np.linalg.norm(pts[i] - pts[j]) for i in range(3) for j in range(i)) > 1e-3


def test_adopt_point_feeds_the_gp_and_fills_queued_slots():
    p = small()
    x = p.adopt_point({"x0": 0.2, "x1": 0.1}, 1)  # not queued: an extra observation
    p.tell(x, CURRIN([0.2, 0.1], 1))
    obs = p.observations()
    assert ROLE_NAMES[obs["role"][-1]] == "extra" and obs["fidelity"][-1] == 1
    first = small().ask()  # the first design point at fidelity 0: adopting it takes its slot
    y = p.adopt(first.arm, first.fidelity)
    assert first.arm not in [q.arm for q in p.ask_batch() if q.fidelity == 0]
    p.tell(y, evaluate(p, y))
    assert ROLE_NAMES[p.observations()["role"][-1]] == "init"
    with pytest.raises(ValueError, match="fidelity = 5 is out of range"):
        p.adopt_point({"x0": 0.2, "x1": 0.1}, 5)


def test_history_replay_with_outside_points_rebuilds_the_state():
    p = small(seed=2)
    p.record_history()
    x = p.adopt_point({"x0": 0.7, "x1": 0.3}, 0)
    p.tell(x, CURRIN([0.7, 0.3], 0))
    drive(p, 26, workers=2)
    q = small(seed=2)
    q.replay(p.history)
    assert snapshot(q) == snapshot(p)
    bad = [e for e in p.history if e[0] != "point"]  # without the point, the adopted arm is not in the table
    with pytest.raises(PolicyError, match=r"event 0: arm = 20 is out of range; accepted: an integer in 0..19"):
        small(seed=2).replay(bad)


def test_mixed_space_proposals_decode_to_valid_settings_and_the_table_caps_the_run():
    space = SearchSpace([Float("x", -1.0, 2.0), Int("k", 1, 3), Categorical("c", ["a", "b"])])

    def objective(params: dict, fidelity: int) -> float:
        return -((params["x"] - 0.5) ** 2) - 0.3 * (params["k"] - 2) ** 2 + (0.4 if params["c"] == "b" else 0.0)

    ladder = FidelityLadder([1.0, 4.0], [0.3, 0.0])
    p = MFGPUCB(space, ladder, budget=120, n_arms=40, seed=1, init_capital=20.0, **FAST)
    seen = set()
    while not p.done:
        q = p.ask()
        params = p.point(q)
        assert -1.0 <= params["x"] <= 2.0 and params["k"] in (1, 2, 3) and params["c"] in ("a", "b")
        np.testing.assert_array_equal(space.snap(p.unit_point(q)), p.unit_point(q))
        seen.add(q.arm)
        p.tell(q, objective(params, q.fidelity))
    assert p.n_points <= 40 and len(seen) <= 40
    rec = p.recommendation()
    assert rec.reason in ("budget", "exhausted")
    assert rec.details["params"]["c"] == "b" and rec.details["params"]["k"] == 2
    with pytest.raises(ValueError, match="needs a space without categorical"):
        p.x(0)
    tiny = MFGPUCB(SearchSpace([Int("k", 1, 3)]), FidelityLadder([1.0]), n_arms=3, seed=0, init_capital=1.0, **FAST)
    while not tiny.done:
        q = tiny.ask()
        tiny.tell(q, float(tiny.point(q)["k"]))
    assert tiny.recommendation().reason == "exhausted" and tiny.n_points == 3


def test_config_roundtrip_and_validation_messages():
    p = small(kernel="matern52-ard", beta="code", noise_var="fit", gamma=[0.5], init_design="kmeans")
    cfg = json.loads(json.dumps(p.config()))
    q = MFGPUCB.from_config(dict(cfg, ladder=cfg["ladder"], noise=cfg["noise"]))
    assert q.config() == p.config()
    assert snapshot(q) == snapshot(p)
    bad = [
        ({"kernel": "rbf"}, "kernel = 'rbf' is unknown"),
        ({"beta": -1}, "beta = -1 is out of range"),
        ({"init_design": "sobol"}, "init_design = 'sobol'"),
        ({"gamma": [0.1, 0.2]}, "accepted: M − 1 = 1 thresholds"),
        ({"noise_var": "learn"}, "noise_var = 'learn'"),
        ({"zeta": "fixed"}, "zeta = 'fixed'"),
        ({"n_arms": 5}, "n_arms = 5 is out of range; accepted: an integer >= 20"),
        ({"init_capital": 0.5}, "init_capital = 0.5 is out of range"),
        ({"budget": 20.0}, "initial design costs 30 but budget = 20"),
    ]
    for kw, msg in bad:
        with pytest.raises(ValueError, match=msg):
            small(**kw)


def test_recommendation_uses_only_the_top_fidelity():
    p = small()
    pulls = p.ask_batch()
    low = [q for q in pulls if q.fidelity == 0]
    p.tell_batch(low, [100.0] * len(low))  # huge low-fidelity values are never recommended
    assert p.recommendation().arm is None
    top = [q for q in pulls if q.fidelity == 1]
    p.tell_batch(top, [1.0] * len(top))
    rec = p.recommendation()
    assert rec.arm == top[0].arm and rec.details["value"] == 1.0 and not rec.certified


def test_policy_module_imports_without_scikit_learn():
    code = (
        "import sys; sys.modules['sklearn'] = None\n"
        "from mf_sched import list_policies, FidelityLadder\n"
        "from mf_sched.continuous.space import SearchSpace\n"
        "assert {'mf-gp-ucb', 'gp-ucb'} <= set(list_policies())\n"
        "p = list_policies()['gp-ucb'](SearchSpace.box([0], [1]), FidelityLadder([1.0]), init_capital=2.0)\n"
        "pulls = p.ask_batch()\n"
        "try:\n"
        "    p.tell_batch(pulls, [0.0, 1.0])\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pip install 'mf-sched[gp]'" in out.stdout
