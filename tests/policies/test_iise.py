"""IISE, IISE-γ and MFE (Poiani et al. 2022): exact values (thresholds, phase lengths,
noise-free costs on the §7 instances), invariants, correctness rates."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from conftest import shared_instance
from scipy import stats

from mf_sched import FidelityLadder, Instance, PolicyError, get_policy, policy_for, run_policy
from mf_sched.confidence import anytime_radius, lil_radius
from mf_sched.policies.iise import check_assumption1, hull_fidelities, iise_thresholds, phase_length
from mf_sched.sim import iise_runner as fast
from mf_sched.sim.instance import load_instance


def _load(name: str) -> Instance:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_instance(shared_instance(name))


def _noise_free(inst: Instance) -> Instance:
    """Same means, observations equal to the means (the policies keep the instance's σ)."""
    return Instance(inst.means, inst.ladder, {"kind": "gaussian", "sigma": 1e-300})


# ------------------------------------------------------------------------------------------ paper values
PHASES = {
    # file: (IISE α, IISE t_m, IISE-γ α, IISE-γ t_m)  — Poiani et al. 2022, §7 instances, δ = 0.001 (our recomputation)
    "poiani2022-synthetic-a.json": (
        [1.711159, 0.396804, 0.019424, 0],
        [315, 7118, 4046362, None],
        [0.231238, 0.045323, 0.000925, 0],
        [22328, 688007, 2257541490, None],
    ),
    "poiani2022-synthetic-b.json": (
        [2.8, 1.38, 0.378, 0.042, 0],
        [107, 491, 7778, 798024, None],
        [0.4, 0.18, 0.018, 0.002, 0],
        [6898, 37403, 4694834, 453406746, None],
    ),
    "poiani2022-yahtzee.json": (
        [0.13793, 0.097831, 0.07144, 0.053285, 0.040375, 0.030959, 0.023957, 0],
        [13436, 27929, 54469, 101412, 182398, 319575, 548765, None],
        None,
        None,
    ),
}


@pytest.mark.parametrize("file", sorted(PHASES))
def test_thresholds_and_deterministic_phase_lengths(file):
    inst = _load(file)
    a, t, ag, tg = PHASES[file]
    p = policy_for("iise", inst, delta=0.001)
    assert np.round(p.thresholds, 6).tolist() == pytest.approx(a, abs=1e-6)
    assert p.phase_lengths == t
    if ag is not None:
        g = policy_for("iise-gamma", inst, delta=0.001)
        assert np.round(g.thresholds, 6).tolist() == pytest.approx(ag, abs=1e-6)
        assert g.phase_lengths == tg
    # the definition: t_m is the first t with 4 B(t, δ/(KM)) ≤ α_m
    dp = 0.001 / (inst.K * inst.M)
    for alpha, tm in zip(p.thresholds[:-1], p.phase_lengths[:-1]):
        assert 4 * anytime_radius(tm, dp, p.sigma) <= alpha < 4 * anytime_radius(tm - 1, dp, p.sigma)


def test_mfe_phase_lengths_are_the_authors_yahtzee_options():
    inst = _load("poiani2022-yahtzee.json")
    assert policy_for("iise-max-exploit", inst, delta=0.001, c=0.1).phase_lengths[:3] == [392735, 839238, 1818882]
    assert policy_for("iise-max-exploit", inst, delta=0.001, c=0.005).phase_lengths[:3] == [
        208015126,
        440238518,
        945418664,
    ]
    p = policy_for("iise-max-exploit", inst, delta=0.001, c=0.1)
    assert p.thresholds[:-1] == pytest.approx(0.1 * np.asarray(inst.ladder.zeta[:-1]))


# (file, MFE c, SE noise-free cost, % of SE and stop phase (1-based) for IISE / IISE-γ / MFE)
# — our noise-free recomputation of Table 1
NOISE_FREE = {
    "poiani2022-synthetic-a.json": (
        0.1,
        1.499e8,
        {"iise": (10.9, 3), "iise-gamma": (2.42, 2), "iise-max-exploit": (202.5, 3)},
    ),
    "poiani2022-synthetic-b.json": (
        0.1,
        2.721e8,
        {"iise": (26.3, 4), "iise-gamma": (6.13, 3), "iise-max-exploit": (3206, 4)},
    ),
    "poiani2022-yahtzee.json": (
        0.005,
        1.343e17,
        {"iise": (0.532, 5), "iise-gamma": (0.0080, 3), "iise-max-exploit": (342.97, 4)},
    ),
}


@pytest.mark.parametrize(
    "file",
    [
        "poiani2022-yahtzee.json",
        pytest.param("poiani2022-synthetic-a.json", marks=pytest.mark.slow),
        pytest.param("poiani2022-synthetic-b.json", marks=pytest.mark.slow),
    ],
)
def test_noise_free_runs_reproduce_the_recomputation(file):
    """Noise-free runs (µ̂ = µ) are deterministic: elimination times, stop phases and cost ratios are exact."""
    inst = _load(file)
    nf = _noise_free(inst)
    c, se_cost, expect = NOISE_FREE[file]
    se = run_policy(policy_for("se", inst, delta=0.001, seed=0), nf, workers=None, completion="batch", seed=0)
    assert se.cost == pytest.approx(se_cost, rel=1e-3) and se.correct
    for name, (pct, phase) in expect.items():
        p = policy_for(name, inst, delta=0.001, seed=0, **({"c": c} if name == "iise-max-exploit" else {}))
        r = fast.run_iise_fast(p, nf, seed=0)
        assert r.correct and r.recommendation.certified
        assert 100 * r.cost / se.cost == pytest.approx(pct, rel=2e-3, abs=1e-4)
        assert p.phase + 1 == phase


# ------------------------------------------------------------------------------------------ Assumption 1
def test_assumption1_holds_on_the_papers_domains_and_fails_on_a_bent_chain():
    for file in PHASES:
        inst = _load(file)
        assert check_assumption1(inst.ladder.costs, inst.ladder.zeta).holds
        assert check_assumption1(inst.ladder.costs, inst.ladder.gamma, name="gamma").holds
    rep = check_assumption1([1, 2, 100, 1000], [1.0, 0.5, 0.45, 0.0])
    assert not rep.holds and rep.violations == (2,) and rep.hull == (0, 1, 3)
    assert check_assumption1(*[[1, 2, 1000], [1.0, 0.5, 0.0]]).holds
    # a dominated fidelity (bias not decreasing) breaks it and is dropped from the hull
    rep = check_assumption1([1, 4, 9], [0.2, 0.3, 0.0])
    assert not rep.holds and 1 in rep.violations and rep.hull == (0, 2)


def test_assumption1_equals_the_convex_chain_test_on_random_ladders():
    rng = np.random.default_rng(0)
    for _ in range(300):
        M = int(rng.integers(2, 7))
        lam = np.cumsum(rng.uniform(0.1, 5, M))
        xi = np.append(np.sort(rng.uniform(0.01, 2, M - 1))[::-1], 0.0)
        rep = check_assumption1(lam, xi)
        s = np.sqrt(lam)
        slopes = np.diff(s) / -np.diff(xi)
        assert rep.holds == bool(np.all(np.diff(slopes) >= -1e-12 * slopes[1:]))
        # the hull always satisfies the assumption and keeps the last fidelity
        h = list(hull_fidelities(lam, xi))
        assert h[-1] == M - 1 and check_assumption1(lam[h], xi[h]).holds


def test_hull_fidelities_option_runs_on_the_subset():
    ladder = FidelityLadder([1, 2, 100, 1000], [1.0, 0.5, 0.45, 0.0])
    means = [[0.0, 0.1, 0.2, 0.3], [0.5, 0.6, 0.6, 0.7], [1.9, 1.8, 1.7, 1.6]]
    inst = Instance(means, ladder, {"kind": "gaussian", "sigma": 0.1})
    p = policy_for("iise", inst, delta=0.1, fidelities="hull")
    assert p.thresholds[2] == math.inf and p.phase_lengths[2] == 0
    assert p.thresholds[[0, 1]].tolist() == pytest.approx(
        iise_thresholds(ladder.costs, ladder.zeta, fidelities=[0, 1, 3])[[0, 1]]
    )
    assert not p.assumption1.holds and p.describe()["assumption1"]["hull"] == [0, 1, 3]
    r = run_policy(p, inst, seed=0, workers=None, completion="batch")
    assert r.pulls_per_fidelity[2] == 0 and r.correct


# ------------------------------------------------------------------------------------------ mechanics
def _drive_values(p, values):
    """Tell every round of ``p`` the fixed per-arm value until it is done; return pulls per round."""
    sizes = []
    while not p.done:
        pulls = p.ask_batch()
        sizes.append(len(pulls))
        p.tell_batch(pulls, [values[q.arm][q.fidelity] for q in pulls])
    return sizes


def test_eliminations_are_simultaneous_and_use_the_bias_margin():
    ladder = FidelityLadder([1.0, 10.0], [0.2, 0.0])
    p = get_policy("iise")(n_arms=4, ladder=ladder, delta=0.1, noise={"kind": "subgaussian", "sigma": 1e-3})
    vals = [[0.0, 0.0], [0.2, 0.2], [0.65, 0.65], [1.0, 1.0]]
    pulls = p.ask_batch()
    p.tell_batch(pulls, [vals[q.arm][0] for q in pulls])
    b = anytime_radius(1, 0.1 / 8, 1e-3)
    # arms 0 and 1 are more than 2B + 2ξ = 0.4 + 2B below arm 3: both out in the same round; arm 2 stays
    assert 1.0 - 0.65 < 2 * b + 0.4 < 1.0 - 0.2
    assert p.active_arms.tolist() == [2, 3]
    # IISE-γ with γ = 0.1 eliminates arm 2 too (its gap 0.35 ≥ 2B + γ)
    g = get_policy("iise-gamma")(
        n_arms=4, ladder=ladder, gamma=[0.1, 0.0], delta=0.1, noise={"kind": "subgaussian", "sigma": 1e-3}
    )
    pulls = g.ask_batch()
    g.tell_batch(pulls, [vals[q.arm][0] for q in pulls])
    assert g.active_arms.tolist() == [3] and g.done and g.recommendation().certified


def test_statistics_are_per_phase_never_pooled():
    """A phase-1 sample that would eliminate arm 0 if pooled must not influence phase 2 (per-phase statistics, §4)."""
    ladder = FidelityLadder([1.0, 10.0], [0.3, 0.0])
    p = get_policy("iise")(n_arms=2, ladder=ladder, delta=0.1, noise={"kind": "subgaussian", "sigma": 0.01})
    tm = p.phase_lengths[0]
    for _ in range(tm):  # fidelity 0: arm 1 looks far better, but within 2ξ: no elimination
        pulls = p.ask_batch()
        p.tell_batch(pulls, [0.0 if q.arm == 0 else 0.55 for q in pulls])
    assert p.phase == 1 and p.rounds_in_phase == 0 and p.active_arms.tolist() == [0, 1]
    assert p.phase_sums.tolist() == [0.0, 0.0]
    pulls = p.ask_batch()
    assert {q.fidelity for q in pulls} == {1}
    p.tell_batch(pulls, [0.5 if q.arm == 0 else 0.49 for q in pulls])  # fidelity 1 reverses the order
    assert p.phase_sums.tolist() == [0.5, 0.49]


def test_workers_and_completion_order_do_not_change_decisions(small_instance):
    nf = _noise_free(small_instance)
    ref = None
    for workers, completion in [(1, "random"), (2, "random"), (5, "random"), (None, "batch")]:
        p = policy_for("iise", small_instance, delta=0.05, seed=0)
        r = run_policy(p, nf, workers=workers, completion=completion, seed=3)
        out = (r.cost, r.pulls_per_fidelity, r.recommendation.arm)
        assert ref is None or out == ref
        ref = out


def test_resumable_cost_metering():
    """3 arms, noise-free, phases of t_m rounds: resuming replicas costs λ(m) − λ(m') instead of λ(m)."""
    ladder = FidelityLadder([1.0, 3.0], [0.3, 0.0])
    inst = Instance([[0.1, 0.2], [0.4, 0.5], [0.6, 0.9]], ladder, {"kind": "gaussian", "sigma": 1e-300})
    p = get_policy("iise")(n_arms=3, ladder=ladder, delta=0.1, noise={"kind": "subgaussian", "sigma": 0.05})
    r = run_policy(p, inst, semantics="resumable", seed=0)
    n0, n1 = r.pulls_per_fidelity
    assert r.cost == n0 * 1.0 + n1 * 3.0
    # every fidelity-1 pull advances a fidelity-0 replica of the same arm (each arm had ≥ as many)
    assert r.resumable_cost == pytest.approx(n0 * 1.0 + n1 * (3.0 - 1.0))


def test_epsilon_variant_never_queries_fidelity_M_when_epsilon_is_large_enough():
    """§4.3 (reconstruction): two arms, two fidelities, Δ < ε; M is never queried iff ε ≥ 4ξ_1 + α_1."""
    ladder = FidelityLadder([1.0, 16.0], [0.05, 0.0])
    alpha = float(iise_thresholds(ladder.costs, ladder.zeta)[0])  # 4ξ√λ1/(√λ2 − √λ1) = 0.2/3
    inst = Instance([[0.5, 0.52], [0.48, 0.5]], ladder, {"kind": "gaussian", "sigma": 1e-300})
    noise = {"kind": "subgaussian", "sigma": 0.1}
    for eps, uses_m in [(4 * 0.05 + alpha + 1e-9, False), (4 * 0.05 + alpha - 0.02, True)]:
        p = get_policy("iise")(n_arms=2, ladder=ladder, delta=0.1, epsilon=eps, noise=noise, seed=0)
        r = run_policy(p, inst, seed=0, workers=None, completion="batch")
        assert (r.pulls_per_fidelity[1] > 0) == uses_m
        assert r.recommendation.certified and r.recommendation.details["epsilon"] == eps


def test_epsilon_variant_is_epsilon_correct():
    ladder = FidelityLadder([1.0, 10.0], [0.1, 0.0])
    means = [[0.45, 0.50], [0.40, 0.48], [0.30, 0.35], [0.1, 0.2]]  # only arms 0 and 1 are 0.1-optimal
    inst = Instance(means, ladder, {"kind": "gaussian", "sigma": 0.2})
    bad, stopped_early = 0, 0
    for i in range(60):
        p = policy_for("iise", inst, delta=0.1, epsilon=0.1, seed=i)
        r = fast.run_iise_fast(p, inst, seed=100 + i)
        bad += inst.true_means.max() - inst.true_means[r.recommendation.arm] > 0.1
        stopped_early += p.active_arms.size > 1
    assert bad <= 60 * 0.1 + 3 * math.sqrt(60 * 0.1 * 0.9)
    assert stopped_early > 30  # the ε-stop, not the elimination of arm 1, ended most runs


def test_practical_radius_is_the_lil_formula():
    inst = Instance([[0.2, 0.3], [0.5, 0.6]], FidelityLadder([1, 5], [0.1, 0]), {"kind": "gaussian", "sigma": 0.1})
    p = policy_for("iise", inst, delta=0.01, radius="practical")
    for _ in range(3):
        pulls = p.ask_batch()
        p.tell_batch(pulls, [0.25] * len(pulls))
    t = p.rounds_in_phase
    expect = 2 * lil_radius(t + 1, p.n_pulls + 2, 0.01 / 4, 0.1) + 0.2
    assert p.round_thresholds([t + 1])[0] == pytest.approx(expect)
    # the phase switch still uses B(t, δ/(KM)) (same phase lengths as the theory radius)
    assert p.phase_lengths == policy_for("iise", inst, delta=0.01).phase_lengths


# ------------------------------------------------------------------------------------------ simulator hook
def test_record_rounds_equals_round_by_round_tells(small_instance):
    rng = np.random.default_rng(0)
    a = policy_for("iise", small_instance, delta=0.05, seed=1)
    b = policy_for("iise", small_instance, delta=0.05, seed=1)
    idx = a.active_arms
    n = a.phase_lengths[0] - 1
    x = 0.5 + 0.01 * rng.standard_normal((n, idx.size))  # no elimination can fire on these
    for row in x:
        pulls = a.ask_batch()
        a.tell_batch(pulls, [row[list(idx).index(q.arm)] for q in pulls])
    b.record_rounds(n, x.sum(axis=0), (x * x).sum(axis=0))
    for attr in ("_t", "_phase", "_round", "_n_told"):
        assert getattr(a, attr) == getattr(b, attr)
    assert a.cost == b.cost and np.array_equal(a.counts, b.counts)
    assert np.allclose(a.means, b.means, equal_nan=True) and np.allclose(a.phase_sums, b.phase_sums)
    assert [(q.arm, q.fidelity) for q in a.ask_batch()] == [(q.arm, q.fidelity) for q in b.ask_batch()]
    # crossing into the next phase through the hook switches exactly like the tells do
    for pol in (a, b):
        for q in pol.outstanding:
            pol.tell(q, 0.5)
    assert a.phase == b.phase == 1 and a.rounds_in_phase == b.rounds_in_phase == 0


def test_record_rounds_refuses_what_it_cannot_do_exactly(small_instance):
    p = policy_for("iise", small_instance, delta=0.05, seed=1)
    S = p.active_arms.size
    ok = np.full(S, 0.5)
    with pytest.raises(PolicyError, match="crosses the phase switch"):
        p.record_rounds(p.phase_lengths[0] + 1, ok * 1e9, ok)
    with pytest.raises(PolicyError, match="elimination fires"):
        p.record_rounds(2, np.array([0.0, 0.0, 6.0]), ok)
    with pytest.raises(PolicyError, match="one entry per active arm"):
        p.record_rounds(1, ok[:2], ok[:2])
    q = p.ask()
    with pytest.raises(PolicyError, match="round boundary"):
        p.record_rounds(1, ok, ok)
    p.give_back(q)
    p.record_history()
    with pytest.raises(PolicyError, match="history"):
        p.record_rounds(1, ok, ok)
    assert p.cost == 0 and p.rounds_in_phase == 0


def test_fast_runner_has_the_distribution_of_the_round_by_round_run():
    """Two-sample KS test on costs: run_iise_fast vs run_policy (250 runs each, ~150 rounds per run)."""
    ladder = FidelityLadder([1.0, 4.0], [0.15, 0.0])
    inst = Instance([[0.30, 0.40], [0.50, 0.55], [0.70, 0.70]], ladder, {"kind": "gaussian", "sigma": 0.15})
    slow, quick = [], []
    for i in range(250):
        p = policy_for("iise", inst, delta=0.1, seed=i)
        slow.append(run_policy(p, inst, seed=10_000 + i, workers=None, completion="batch").cost)
        quick.append(fast.run_iise_fast(policy_for("iise", inst, delta=0.1, seed=i), inst, seed=20_000 + i).cost)
    assert stats.ks_2samp(slow, quick).pvalue > 1e-3
    assert abs(np.mean(slow) - np.mean(quick)) < 4 * np.std(slow) / math.sqrt(125)


def test_certified_skip_bound():
    """Bounded noise: a phase whose true gaps + 2a stay below 2ξ can never eliminate (bound exactly 0)."""
    inst = _load("poiani2022-yahtzee.json")
    p = policy_for("iise-max-exploit", inst, delta=0.001, c=0.005)
    assert fast.phase_skip_bound(p, inst) == 0.0
    g = Instance(inst.means, inst.ladder, {"kind": "gaussian", "sigma": 0.2})
    assert 0 < fast.phase_skip_bound(p, g) < 1e-12  # σ = 0.2: a Gaussian tail, tiny but not 0
    one = Instance([[0.0], [1.0]], FidelityLadder([1.0]), {"kind": "gaussian", "sigma": 1})
    assert fast.phase_skip_bound(policy_for("iise", one), one) == math.inf  # the final phase is never skipped


# ------------------------------------------------------------------------------------------ δ-correctness
# low fidelities rank arm 1 above the best arm 2 (within ζ and γ): a policy that ignores the bias errs
DELTA_INST = Instance(
    [[0.40, 0.45, 0.50], [0.72, 0.68, 0.62], [0.60, 0.64, 0.70], [0.30, 0.35, 0.40]],
    FidelityLadder([1.0, 4.0, 16.0], [0.12, 0.08, 0.0], gamma=[0.2, 0.12, 0.0]),
    {"kind": "gaussian", "sigma": 0.5},
)


@pytest.mark.parametrize("name", ["iise", "iise-gamma", "iise-max-exploit"])
def test_delta_correct_on_a_small_instance(name):
    """Error rate ≤ δ + 3 binomial standard deviations (δ = 0.2, 200 runs); all answers certified."""
    assert DELTA_INST.check_assumptions().ok
    delta, n = 0.2, 200
    s = fast.run_many_fast(name, DELTA_INST, runs=n, delta=delta, seed=7, progress=False)
    assert s.error_rate <= delta + 3 * math.sqrt(delta * (1 - delta) / n)
    assert s.certified_rate == 1.0


def test_an_underestimated_bias_bound_breaks_correctness():
    """The test above can fail: with ζ too small for the instance, IISE errs far more often than δ."""
    lying = FidelityLadder([1.0, 4.0, 16.0], [0.0001, 0.00005, 0.0])
    inst = Instance(DELTA_INST.means, lying, {"kind": "gaussian", "sigma": 0.05})
    s = fast.run_many_fast("iise", inst, runs=60, delta=0.2, seed=7, progress=False)
    assert s.error_rate > 0.5


# ------------------------------------------------------------------------------------------ arguments
def test_arguments_are_validated_with_clear_messages():
    lad = FidelityLadder([1.0, 2.0, 4.0], [0.3, 0.1, 0.0])
    iise = get_policy("iise")
    with pytest.raises(ValueError, match=r"thresholds\[-1\] = 0.5 must be 0"):
        iise(n_arms=2, ladder=lad, thresholds=[1, 1, 0.5])
    with pytest.raises(ValueError, match=r"thresholds\[1\] = 0.0 is out of range"):
        iise(n_arms=2, ladder=lad, thresholds=[1, 0, 0])
    with pytest.raises(ValueError, match="one value per fidelity"):
        iise(n_arms=2, ladder=lad, thresholds=[1, 0])
    with pytest.raises(ValueError, match="must include the highest fidelity 2"):
        iise(n_arms=2, ladder=lad, fidelities=[0, 1])
    with pytest.raises(ValueError, match="not both"):
        iise(n_arms=2, ladder=lad, fidelities="hull", thresholds=[1, 1, 0])
    with pytest.raises(ValueError, match="radius = 'lil' is unknown"):
        iise(n_arms=2, ladder=lad, radius="lil")
    with pytest.raises(ValueError, match="epsilon = -1 is out of range"):
        iise(n_arms=2, ladder=lad, epsilon=-1)
    with pytest.raises(ValueError, match="iise-gamma needs the maximum bias variation"):
        get_policy("iise-gamma")(n_arms=2, ladder=lad)
    with pytest.raises(ValueError, match=r"gamma\[-1\] = 0.1 must be 0"):
        get_policy("iise-gamma")(n_arms=2, ladder=lad, gamma=[0.3, 0.2, 0.1])
    with pytest.raises(ValueError, match="c = 0 is out of range; accepted: a finite number > 0"):
        get_policy("iise-max-exploit")(n_arms=2, ladder=lad, c=0)
    # an unbiased cheaper fidelity makes its phase the final one (α = 0), and +inf skips a fidelity
    p = iise(n_arms=2, ladder=FidelityLadder([1.0, 2.0, 4.0], [0.3, 0.0, 0.0]))
    assert p.thresholds[1] == 0 and p.phase_lengths[1] is None
    q = iise(n_arms=2, ladder=lad, thresholds=[math.inf, 0.5, 0])
    assert q.phase == 1 and q.ask().fidelity == 1
    assert phase_length(math.inf, 0.01, 1.0) == 0 and phase_length(0.0, 0.01, 1.0) is None


def test_config_round_trip_rebuilds_equal_policies():
    lad = FidelityLadder([1.0, 2.0, 4.0], [0.3, 0.1, 0.0], gamma=[0.2, 0.1, 0.0])
    for name, kw in [
        ("iise", {"epsilon": 0.1, "radius": "practical"}),
        ("iise-gamma", {"gamma": [0.1, 0.05, 0]}),
        ("iise-max-exploit", {"c": 0.2, "fidelities": "hull"}),
    ]:
        p = get_policy(name)(n_arms=3, ladder=lad, delta=0.1, seed=2, **kw)
        q = type(p).from_config(p.config())
        assert q.config() == p.config() and np.array_equal(q.thresholds, p.thresholds)


def test_rounding_level_thresholds_make_the_final_phase() -> None:
    """Eq. 8 gives α ~ 1e-15 when two biases differ by rounding error: that phase is the final one."""
    from mf_sched import FidelityLadder
    from mf_sched.policies.iise import IISE, phase_length

    assert phase_length(2.2e-15, 1e-4, 1.0) is None
    ladder = FidelityLadder([1.0, 4.0, 9.0], [0.3, 0.3 - 1e-16, 0.0])
    p = IISE(3, ladder, delta=0.1, thresholds=[2.2e-15, 0.1, 0.0], seed=0)
    assert p.phase_lengths[0] is None
