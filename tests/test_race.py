"""The racing rule (mf_sched.racing.engine, rule="race"), its bias (mf_sched.racing.bias) and the `race` policy."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from mf_sched import FidelityLadder, Instance, Policy, policy_for, run_policy
from mf_sched._serialize import StateFormatError
from mf_sched.racing.bias import RaceBias, metric_family, metric_transform, prior_families, race_prior
from mf_sched.racing.engine import RungEliminator
from mf_sched.racing.policy import Race

LADDER = FidelityLadder(costs=[1, 3, 9], zeta=[0.3, 0.1, 0.0], resources=[1, 3, 9])


def engine(bias=(0.2, 0.05, 0.0), **kw) -> RungEliminator:
    kw.setdefault("delta", 0.05)
    kw.setdefault("sigma", 0.01)
    return RungEliminator(LADDER, rule="race", race_bias=list(bias), **kw)


# ------------------------------------------------------------------------------------------ RaceBias
def test_race_bias_forms_and_validation():
    b = RaceBias(upper=[0.3, 0.1, 0.0], typical=[0.1, 0.05, 0.0])
    assert b.optimistic(0.5, 0) == pytest.approx(0.8)
    assert b.estimate(0.5, 1) == pytest.approx(0.55)
    np.testing.assert_allclose(b.optimistic(np.array([0.1, 0.2]), np.array([0, 1])), [0.4, 0.3])
    r = RaceBias(upper=[0.5, 0.0], form="relative", ideal=0.0)  # a loss L is the score -L, ideal 0
    assert r.optimistic(-2.0, 0) == pytest.approx(-1.0)  # at most half of the loss can go
    assert r.optimistic(0.3, 0) == pytest.approx(0.3)  # above the ideal: no room, no improvement
    inf = RaceBias(upper=[math.inf, 0.2, 0.0], typical=[0.4, 0.1, 0.0])
    assert inf.optimistic(0.1, 0) == math.inf
    assert RaceBias.from_dict(json.loads(json.dumps(inf.to_dict()))) == inf
    with pytest.raises(ValueError, match="must be 0"):
        RaceBias(upper=[0.3, 0.1])
    with pytest.raises(ValueError, match=r"upper\[1\]"):
        RaceBias(upper=[0.3, -0.1, 0.0])
    with pytest.raises(ValueError, match="needs ideal"):
        RaceBias(upper=[0.3, 0.0], form="relative")
    with pytest.raises(ValueError, match="fractions"):
        RaceBias(upper=[1.3, 0.0], form="relative", ideal=1.0)
    with pytest.raises(ValueError, match="form"):
        RaceBias(upper=[0.3, 0.0], form="quadratic")
    with pytest.raises(ValueError, match="2 rungs but the ladder has 3"):
        RaceBias.coerce([0.1, 0.0], 3)


def test_shipped_prior_is_conservative_between_grid_points():
    fams = prior_families()
    assert {"unit", "loss"} <= set(fams)
    b = race_prior("unit", [1 / 243, 1 / 27, 1 / 9, 1 / 3, 1.0])
    assert b.upper[-1] == 0.0 and b.form == "absolute"
    assert list(b.upper) == sorted(b.upper, reverse=True)  # never claims a cheaper rung is closer
    assert all(t <= u for t, u in zip(b.typical, b.upper))
    assert b.upper[0] == math.inf  # 1/243 of training is below the first calibrated fraction: no bound there
    # the value at a fraction between grid points is the one of the grid point below (larger, as ζ⁺ decreases)
    grid = json.loads((__import__("importlib").resources.files("mf_sched") / "data" / "race_prior.json").read_text())
    fam = grid["families"]["unit"]
    f = (fam["fractions"][3] + fam["fractions"][4]) / 2
    assert race_prior("unit", [f, 1.0]).upper[0] == fam["upper"][3]
    loss = race_prior("loss", [0.1, 0.5, 1.0])
    assert loss.form == "relative" and loss.ideal == 0.0 and all(0 <= x <= 1 for x in loss.upper)
    assert "holdout_coverage_mean" in loss.details
    with pytest.raises(ValueError, match="no prior"):
        race_prior("reward", [0.5, 1.0])
    with pytest.raises(ValueError, match="end at 1"):
        race_prior("unit", [0.1, 0.5])


def test_metric_family():
    assert metric_family([0.2, 0.97], "max") == "unit"
    assert metric_family([0.2, 0.05], "min") == "unit"
    assert metric_family([3.2, 0.4], "min") == "loss"
    assert metric_family([-1.0, 3.0], "max") is None  # a score of both signs: no family
    assert metric_family([2.0, 30.0], "max") == "unit"  # a percentage
    assert metric_family([-2.3, -0.4], "max") == "loss"  # a negated loss (neg_log_loss)
    assert metric_family([120.0, 30.0], "max") is None  # a maximised score above 100
    assert metric_family([float("nan")], "max") is None
    fam = metric_transform([12.0, 97.5], "max")
    assert (fam.name, fam.offset, fam.scale) == ("unit", 0.0, 100.0)
    fam = metric_transform([0.3, 0.05], "min")  # an error rate: 1 − error reads like an accuracy
    assert (fam.name, fam.offset, fam.scale) == ("unit", -1.0, 1.0)
    assert metric_transform([0.3, 0.05], "min", "loss").name == "loss"  # named: a loss that stays below 1
    with pytest.raises(ValueError, match="metric_family = 'reward' is unknown; accepted: 'accuracy'"):
        metric_transform([1.0], "max", "reward")


# ------------------------------------------------------------------------------------------ engine
def test_race_rule_worked_example_and_freeze_thaw():
    e = engine(n_arms=5, fixed_arms=True)
    for k, v in {"a": 0.5, "b": 0.1, "c": 0.6, "d": 0.3}.items():
        e.report(k, 0, v)
    b0 = e.radius("a", 0)
    assert e.upper_bound("a") == pytest.approx(0.5 + b0 + 0.2)
    assert e.priority("a") == pytest.approx(0.5 + 0.2)  # order "estimate": value + typical (= upper here)
    assert e.ranked(["d", "b", "a", "c"]) == ["c", "a", "d", "b"]
    assert e.eliminate() == []  # no incumbent yet: nothing can be stopped
    e.report("c", 1, 0.7)  # "c" is paused at rung 1: U = min(0.6 + b + 0.2, 0.7 + b + 0.05), the tighter bound
    e.report("a", 1, 0.7)
    e.report("a", 2, 0.8)
    key, lcb = e.incumbent()
    assert key == "a" and lcb == pytest.approx(0.8 - e.radius("a", 2))
    # b (0.1 + b + 0.2) and d (0.3 + b + 0.2) cannot reach 0.767; c's tightest bound is at rung 1: 0.782 > 0.767
    assert e.eliminate() == ["b", "d"]
    assert e.status("c") == "running"
    e.report("e", 0, 0.9)  # a late run is raced too
    e.report("e", 1, 0.95)
    e.report("e", 2, 0.96)  # a better incumbent: "c" is stopped without being resumed (freeze-thaw)
    assert e.eliminate() == ["c"] and e.stop_rung("c") == 1
    cert = e.certificate()
    assert cert.key == "e" and cert.rule == "race" and cert.bias_source == "given"
    # "a" finished (not stopped): "e" is ε-optimal, with ε = max(0, (0.8 + B) − (0.96 − B)) = 0, not identified
    assert cert.epsilon == 0.0 and not cert.identified and cert.counts["finished"] == 2


def test_race_radii_split():
    fixed = engine(n_arms=50, fixed_arms=True)
    per_arm = engine(n_arms=50)
    open_ended = engine()
    for e in (fixed, per_arm, open_ended):
        for k in range(50):
            e.register(k)
    s = 0.01
    assert fixed.radius(0, 0) == pytest.approx(s * math.sqrt(2 * math.log(3 * 3 / 0.05)))
    assert per_arm.radius(0, 0) == pytest.approx(s * math.sqrt(2 * math.log(3 * 3 * 50 / 0.05)))
    assert fixed.radius(0, 2) == per_arm.radius(0, 2) == pytest.approx(s * math.sqrt(2 * math.log(3 * 50 / 0.05)))
    assert open_ended.radius(49, 0) > open_ended.radius(0, 0)  # 6δ/(π²k²): later runs get less of δ


def test_race_argument_errors():
    with pytest.raises(ValueError, match="needs race_bias"):
        RungEliminator(LADDER, rule="race")
    with pytest.raises(ValueError, match="eta"):
        RungEliminator(LADDER, rule="race", race_bias=[0.1, 0.0, 0.0], eta=3)
    with pytest.raises(ValueError, match="rule = 'race' only"):
        RungEliminator(LADDER, race_bias=[0.1, 0.0, 0.0])
    with pytest.raises(ValueError, match="rule"):
        RungEliminator(LADDER, rule="halving")
    with pytest.raises(ValueError, match="racing rule"):
        RungEliminator(LADDER).priority("a")


def test_race_state_roundtrip_keeps_decisions():
    e = engine(n_arms=6)
    rng = np.random.default_rng(1)
    for k in range(6):
        e.report(k, 0, float(rng.random()))
    e.report(0, 1, 0.9)
    e.report(0, 2, 0.95)
    f = RungEliminator.from_state_dict(json.loads(json.dumps(e.state_dict())))
    assert [f.priority(k) for k in range(6)] == [e.priority(k) for k in range(6)]
    assert f.eliminate() == e.eliminate()
    assert f.race_bias == e.race_bias and f.rule == "race"
    bad = e.state_dict()
    bad["config"]["rule"] = "nonsense"
    with pytest.raises(StateFormatError, match="rule"):
        RungEliminator.from_state_dict(bad)


def test_answer_uses_the_best_evidence():
    e = RungEliminator(LADDER, rule="race", race_bias=RaceBias(upper=[0.3, 0.1, 0.0], typical=[0.2, 0.05, 0.0]))
    assert e.answer() == (None, -1, None)
    e.report("done", 0, 0.5)
    e.report("done", 1, 0.6)
    e.report("done", 2, 0.7)
    e.report("climbing", 0, 0.55)
    e.report("climbing", 1, 0.68)  # its estimate 0.68 + 0.05 = 0.73 > 0.70, but it is not better yet
    e.report("early", 0, 0.45)
    assert e.answer() == ("done", 2, 0.7)  # the finished run: nothing is better where it stands
    e.report("climbing", 2, 0.71)
    assert e.answer() == ("climbing", 2, 0.71)


@settings(max_examples=60, deadline=None)
@given(
    K=st.integers(2, 12),
    M=st.integers(2, 5),
    seed=st.integers(0, 10_000),
    order=st.sampled_from(["breadth", "best-first", "random"]),
)
def test_best_arm_is_never_stopped_when_zeta_plus_holds(K, M, seed, order):
    """The theorem of mf_sched.racing.engine on exact values (σ = 0): if the best arm's improvement after every rung
    is within ζ⁺, no order of reports and eliminations stops it, and the answer is the best arm."""
    rng = np.random.default_rng(seed)
    final = rng.uniform(0, 1, K)
    gain = rng.uniform(0, 0.5, (K, M)) * np.linspace(1, 0, M)  # improvement after each rung, 0 at the top
    values = final[:, None] - gain
    best = int(np.argmax(final))
    zeta_plus = np.maximum.accumulate(gain[best][::-1])[::-1]  # exactly the best arm's improvement: tight
    lad = FidelityLadder(costs=np.arange(1, M + 1), zeta=np.r_[np.ones(M - 1), 0.0])
    e = RungEliminator(lad, sigma=0.0, rule="race", race_bias=zeta_plus, n_arms=K)
    for k in range(K):
        e.register(k)
    reached = np.full(K, -1)
    while True:
        live = [k for k in range(K) if e.status(k) == "running" and reached[k] < M - 1]
        if not live:
            break
        if order == "breadth":
            k = min(live, key=lambda a: (reached[a], a))
        elif order == "random":
            k = int(rng.choice(live))
        else:
            k = e.ranked(live)[0]
        reached[k] += 1
        e.report(k, int(reached[k]), float(values[k, reached[k]]))
        if reached[k] == M - 1:
            e.eliminate()
        else:
            e.should_stop(k)
        assert e.status(best) != "stopped"
    assert e.certificate().key == best


def test_the_rule_has_teeth_when_zeta_plus_is_wrong():
    """If the best arm improves more than ζ⁺ says, it is stopped: the calibration matters."""
    e = RungEliminator(LADDER, sigma=0.0, rule="race", race_bias=[0.05, 0.02, 0.0])
    e.report("slow-best", 0, 0.3)  # it will end at 0.9: an improvement of 0.6 > 0.05
    e.report("fast", 0, 0.7)
    e.report("fast", 1, 0.75)
    e.report("fast", 2, 0.8)
    assert e.eliminate() == ["slow-best"]


# ------------------------------------------------------------------------------------------ the policy
def _instance(means, zeta, sigma=0.01):
    M = len(means[0])
    lad = FidelityLadder(costs=[3**m for m in range(M)], zeta=zeta, resources=[3**m for m in range(M)])
    return Instance(means, lad, {"kind": "gaussian", "sigma": sigma})


def test_policy_is_best_first_and_has_no_barrier():
    inst = _instance([[0.2, 0.3, 0.35], [0.5, 0.6, 0.62], [0.55, 0.7, 0.8], [0.5, 0.65, 0.7]], [0.3, 0.12, 0.0])
    p = policy_for("race", inst, delta=0.05, seed=0)
    first = p.ask_batch(4)
    assert sorted(q.arm for q in first) == [0, 1, 2, 3] and {q.fidelity for q in first} == {0}
    for q in first[:3]:
        p.tell(q, inst.means[q.arm, 0])
    # arm 3's rung-0 pull is still out: no barrier, the most optimistic told arm (2) goes up at once
    nxt = p.ask()
    assert (nxt.arm, nxt.fidelity) == (2, 1)
    assert p.ask().arm == 1  # then the next most optimistic; arm 3 is busy
    p.tell(first[3], inst.means[3, 0])
    assert p.ask().arm == 3


def test_policy_races_on_an_instance_and_certifies():
    inst = _instance([[0.2, 0.3, 0.35], [0.5, 0.6, 0.62], [0.55, 0.7, 0.8], [0.5, 0.65, 0.7]], [0.3, 0.12, 0.0])
    res = run_policy(policy_for("race", inst, delta=0.05, seed=0), inst, semantics="resumable", seed=3)
    rec = res.recommendation
    assert rec.arm == 2 and rec.reason in ("identified", "finished") and rec.details["rung"] == 2
    assert res.resumable_cost < 4 * 9  # cheaper than training every arm to the top
    assert rec.details["bias_source"] == "given"


def test_policy_delta_correct_on_random_instances():
    """What the guarantee is about: the best arm is never stopped by the rule with probability ≥ 1 − δ
    (δ = 0.1; ζ⁺ = the instances' ζ, which holds). Over 300 noisy runs it was stopped 0 times, and 0 times in
    3,000 more (``default_rng(17)``, this loop), so the rate's 99% upper confidence bound is
    ``p = 1 − 0.01^(1/3000) ≈ 0.0015`` and the test allows ``binom.isf(1e-3, 300, p) = 4`` (a correct policy
    fails this with probability < 1e-3 on a fresh seed; the guarantee alone would allow 47).

    The recommendation (the best arm, or another one when the noise at the top misleads it): wrong 97 times
    in those 3,000 runs (3.2%) and 19 times in these 300; the 99% upper bound of the rate is
    ``beta.ppf(0.99, 98, 2903) ≈ 0.041``, so at most ``binom.isf(1e-3, 300, 0.041) = 24`` wrong
    recommendations (false-failure rate < 1e-3)."""
    stopped = wrong = 0
    rng = np.random.default_rng(5)
    for i in range(300):
        K = 6
        final = rng.uniform(0.3, 0.9, K)
        final[0] = final.max() + 0.08  # a clear best arm
        gains = rng.uniform(0, 0.25, (K, 1)) * np.array([1.0, 0.4, 0.0])
        inst = _instance((final[:, None] - gains).tolist(), [0.25, 0.1, 0.0], sigma=0.03)
        policy = policy_for("race", inst, delta=0.1, seed=i)
        res = run_policy(policy, inst, semantics="resumable", seed=i)
        stopped += policy.engine.status(0) == "stopped"
        wrong += res.recommendation.arm != 0
    p_stop = 1 - 0.01 ** (1 / 3000)
    assert stats.binom.isf(1e-3, 300, p_stop) == 4 and stats.binom.isf(1e-3, 300, 0.1) == 47
    assert stopped <= 4, f"the best arm was stopped in {stopped} of 300 races (measured: 0 of 3,000)"
    p_wrong = stats.beta.ppf(0.99, 97 + 1, 3000 - 97)
    assert round(p_wrong, 3) == 0.041 and stats.binom.isf(1e-3, 300, p_wrong) == 24
    assert wrong <= 24, f"{wrong} wrong recommendations of 300 (measured: 97 of 3,000)"


def test_policy_drops_an_arm_that_keeps_failing_and_answers_early_under_a_budget():
    inst = _instance([[0.2, 0.3, 0.35], [0.5, 0.6, 0.62], [0.55, 0.7, 0.8]], [0.3, 0.12, 0.0])
    p: Race = policy_for("race", inst, delta=0.05, seed=0, max_failures=2)
    failed = 0
    while failed < 2:  # arm 0's pulls fail; the others are evaluated
        for q in p.ask_batch(3):
            if q.arm == 0:
                p.give_back(q)
                failed += 1
            else:
                p.tell(q, inst.means[q.arm, q.fidelity])
    while not p.done:
        q = p.ask()
        assert q.arm != 0  # dropped: never handed out again
        p.tell(q, inst.means[q.arm, q.fidelity])
    assert p.recommendation().details["dropped"] == [0] and p.recommendation().arm == 2
    b = policy_for("race", inst, delta=0.05, seed=0, budget=6.0)  # rung 0 of 3 arms (3), one promotion (3)
    while not b.done:
        q = b.ask()
        b.tell(q, inst.means[q.arm, q.fidelity])
    rec = b.recommendation()
    assert rec.reason == "budget" and rec.arm == 2 and rec.details["rung"] == 1 and not rec.certified


def test_policy_state_roundtrip_continues_identically():
    inst = _instance([[0.2, 0.3, 0.35], [0.5, 0.6, 0.62], [0.55, 0.7, 0.8], [0.5, 0.65, 0.7]], [0.3, 0.12, 0.0])
    p = policy_for("race", inst, delta=0.05, seed=0)
    for _ in range(5):
        q = p.ask()
        p.tell(q, inst.means[q.arm, q.fidelity] + 0.01)
    out = p.ask()
    state = json.loads(json.dumps(p.state_dict()))
    r = Policy.from_state_dict(state)
    assert r.outstanding == p.outstanding
    p.tell(out, 0.71)
    r.tell(out.id, 0.71)
    while not p.done:
        a, b = p.ask(), r.ask()
        assert a == b
        p.tell(a, inst.means[a.arm, a.fidelity])
        r.tell(b, inst.means[b.arm, b.fidelity])
    assert r.done and r.recommendation() == p.recommendation()


# ------------------------------------------------------------------------------------------ calibration
def _task_curves(n_tasks: int, n_configs: int, seed: int, mode: str = "max"):
    from mf_sched.curves import LearningCurves

    rng = np.random.default_rng(seed)
    rows = []
    for task in range(n_tasks):
        final = rng.uniform(0.5, 0.9, n_configs)
        slow = rng.uniform(0.05, 0.4, n_configs)  # improvement after epoch 1, shrinking like 1 - e/27
        for c in range(n_configs):
            for e in (1, 3, 9, 27):
                acc = final[c] - slow[c] * (1 - e / 27)
                rows.append({"task": task, "config": c, "epoch": e, "m": acc if mode == "max" else 1 - acc})
    return LearningCurves.from_records(rows, metric="m", mode=mode, fidelity="epoch", task="task")


def test_calibrate_race_bounds_the_best_of_k_improvement():
    from mf_sched.curves.calibration import calibrate_race

    cal = calibrate_race(_task_curves(30, 60, 0), [1, 3, 9, 27], n_arms=10, draws=100, bootstrap=300)
    # the improvement after epoch 1 of any configuration is slow·(26/27) with slow ~ U(0.05, 0.4), independent of
    # its final value: the 0.95-quantile is 0.3825·26/27 = 0.368; the bound covers it, the median is below it
    assert 0.36 <= cal.upper[0] <= 0.39 and cal.typical[0] < cal.upper[0]
    assert cal.upper[-1] == 0.0 and list(cal.upper) == sorted(cal.upper, reverse=True)
    assert cal.coverage_mean[:-1].min() >= 0.93  # leave-one-task-out
    assert cal.holdout_upper.shape == (30, 4) and len(cal.tasks) == 30
    b = cal.bias()
    assert b.form == "absolute" and b.details["n_tasks"] == 30 and "0.95-quantile" in b.source
    assert "held-out cov." in cal.table()
    # a loss (mode="min") gives the same improvements in the maximisation orientation
    loss = calibrate_race(_task_curves(30, 60, 0, mode="min"), [1, 3, 9, 27], n_arms=10, draws=100, bootstrap=300)
    np.testing.assert_allclose(loss.upper, cal.upper)


def test_calibrate_race_relative_form_and_errors():
    from mf_sched.curves.calibration import calibrate_race
    from mf_sched.racing.calibration import best_of_k_improvements

    rel = calibrate_race(
        _task_curves(12, 40, 1, mode="min"), [1, 3, 9, 27], form="relative", ideal=0.0, draws=50, bootstrap=100
    )
    assert rel.form == "relative" and rel.ideal == 0.0 and 0 < rel.upper[0] <= 1
    with pytest.raises(ValueError, match="needs ideal"):
        calibrate_race(_task_curves(3, 10, 1), [1, 27], form="relative")
    with pytest.raises(ValueError, match="at least 2"):
        calibrate_race(_task_curves(1, 10, 1), [1, 27])
    with pytest.raises(ValueError, match="n_arms = 1"):
        calibrate_race(_task_curves(3, 10, 1), [1, 27], n_arms=1)
    with pytest.raises(ValueError, match="quantile"):
        calibrate_race(_task_curves(3, 10, 1), [1, 27], quantile=1.2)
    means = np.array([[0.1, 0.5], [0.4, 0.6], [0.3, np.nan]])  # the NaN row is ignored
    out = best_of_k_improvements(means, 5, 3, np.random.default_rng(0))
    np.testing.assert_allclose(out, [[0.2, 0.0]] * 3)
    rel_out = best_of_k_improvements(means, 5, 1, np.random.default_rng(0), form="relative", ideal=1.0)
    np.testing.assert_allclose(rel_out, [[0.2 / 0.6, 0.0]])
