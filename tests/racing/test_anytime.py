"""The anytime schedule (mf_sched.racing.schedule), the engine's curve-aware racing and the `race` policy."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mf_sched import FidelityLadder
from mf_sched.racing.bias import RaceBias
from mf_sched.racing.curve_bound import CurveBound
from mf_sched.racing.engine import RungEliminator
from mf_sched.racing.fit import fit_curve_bound
from mf_sched.racing.policy import Race
from mf_sched.racing.schedule import next_job

LADDER = FidelityLadder(costs=[1, 3, 9, 27], zeta=[1.0, 1.0, 1.0, 0.0], resources=[1, 3, 9, 27])
FR = np.array([1 / 27, 1 / 9, 1 / 3, 1.0])


def curves(n: int, rng: np.random.Generator) -> np.ndarray:
    final, speed = rng.uniform(0.5, 0.9, n), rng.uniform(0.3, 3.0, n)
    return final[:, None] * (1 - np.exp(-FR[None] * 12 * speed[:, None])) + rng.normal(0, 0.01, (n, 4))


@pytest.fixture(scope="module")
def bound() -> CurveBound:
    rng = np.random.default_rng(0)
    fit = fit_curve_bound({f"t{i}": curves(100, rng) for i in range(10)}, FR, family="toy", n_arms=(8,),
                          ladders=[FR[:-1].tolist()], alphas=(0.05,), tolerances=(0.0,), draws=100)  # fmt: skip
    return fit.select(n_arms=8, fractions=FR[:-1])


def simple_bound(lam: float = 0.0) -> CurveBound:
    """Hand-made: the improvement bound is 0.3 at 1/27, 0.1 at 1/9, 0.05 at 1/3 (interpolated in log f), plus
    half the slope per log-epoch; median half of that."""
    grid = np.array([1 / 9, 1 / 3])
    grid0 = np.array([1 / 27, 1 / 9, 1 / 3])
    return CurveBound(
        family="toy", form="absolute", ideal=None, n_arms=8, alpha=0.05, tolerance=0.0, grid=grid,
        grid_first=grid0, hi=np.array([[0.1, 0.0, 0.5], [0.05, 0.0, 0.5]]),
        med=np.array([[0.05, 0.0, 0.25], [0.025, 0.0, 0.25]]), hi_first=np.array([[0.3, 0.0], [0.1, 0.0], [0.05, 0.0]]),
        med_first=np.array([[0.15, 0.0], [0.05, 0.0], [0.025, 0.0]]), lam=lam, w_min=0.005, slope_clip=2.0,
        source="hand-made",
    )  # fmt: skip


# ------------------------------------------------------------------------------------------ engine
def brute_promotable(
    vals: np.ndarray, reached: np.ndarray, alive: np.ndarray, eta: float, keep_one: bool = True
) -> list[int]:
    """ASHA's promotions by their definition: at rung m, the runs paused there whose value is among the best
    n_m // eta values recorded at m (at least one with `keep_one`); highest rung first, then the best value, then
    the lowest index."""
    out = []
    for m in range(vals.shape[1] - 2, -1, -1):
        have = [i for i in range(len(vals)) if not math.isnan(vals[i, m])]
        if not have:
            continue
        keep = len(have) // int(eta)
        if keep_one:
            keep = max(1, keep)
        if keep == 0:
            continue
        top_values = sorted((vals[i, m] for i in have), reverse=True)[:keep]
        cand = [i for i in have if reached[i] == m and alive[i] and vals[i, m] >= top_values[-1]]
        out += sorted(cand, key=lambda i: (-vals[i, m], i))
    return out


@pytest.mark.parametrize("keep_one", [True, False])
def test_promotable_is_asha_rule(keep_one):
    rng = np.random.default_rng(1)
    for _ in range(30):
        K = int(rng.integers(2, 20))
        eng = RungEliminator(LADDER, rule="race", race_bias=[math.inf, math.inf, math.inf, 0.0])
        vals = np.full((K, 4), np.nan)
        reached = rng.integers(-1, 4, K)
        for i in range(K):
            eng.register(i)
            for m in range(reached[i] + 1):
                vals[i, m] = round(float(rng.random()), 1)  # ties happen
                eng.report(i, m, vals[i, m])
        alive = reached < 3
        assert eng.promotable(3, keep_one=keep_one) == brute_promotable(vals, reached, alive, 3, keep_one)


def test_answer_is_the_best_latest_value_and_prefers_finished_runs_on_ties():
    eng = RungEliminator(LADDER, rule="race", race_bias=[0.5, 0.3, 0.1, 0.0], sigma=0.0)
    eng.report("a", 0, 0.3)
    eng.report("a", 1, 0.5)
    eng.report("b", 0, 0.55)
    assert eng.answer() == ("b", 0, 0.55)  # no run finished: the best latest value
    for m, v in enumerate([0.2, 0.4, 0.5, 0.55]):
        eng.report("c", m, v)
    assert eng.answer() == ("c", 3, 0.55)  # a tie goes to the finished run
    eng.report("b", 1, 0.6)
    assert eng.answer() == ("b", 1, 0.6)  # already better where it stands than the finished one
    eng.report("d", 0, 0.01)
    eng.eliminate()
    assert eng.status("d") == "stopped" and eng.answer()[0] == "b"


def test_curve_bound_engine_matches_the_bound_and_round_trips(bound):
    eng = RungEliminator(LADDER, rule="race", race_bias=bound)
    rng = np.random.default_rng(2)
    x = curves(6, rng)
    for i in range(6):
        for m in range(3):
            eng.report(i, m, x[i, m])
    for i in range(6):
        expected = min(
            x[i, m] + bound.gain(x[i, m], x[i, m - 1] if m else math.nan, FR[m], FR[m - 1] if m else math.nan)
            for m in range(3)
        )
        assert eng.upper_bound(i) == pytest.approx(expected, rel=1e-9)
        assert eng.radius(i, 0) == 0.0 and eng.radius(i, 3) == 0.0  # calibrated on observed values: no radius
    again = RungEliminator.from_state_dict(json.loads(json.dumps(eng.state_dict())))
    assert [again.upper_bound(i) for i in range(6)] == [eng.upper_bound(i) for i in range(6)]
    # bulk rebuild (what the adapters do) gives the same bounds
    bulk = RungEliminator(LADDER, rule="race", race_bias=bound)
    bulk.report_many(list(range(6)), np.c_[x[:, :3], np.full(6, np.nan)])
    assert [bulk.upper_bound(i) for i in range(6)] == pytest.approx([eng.upper_bound(i) for i in range(6)])


def test_a_curve_that_exceeds_the_bound_raises_it_and_voids_the_certificate():
    eng = RungEliminator(LADDER, rule="race", race_bias=simple_bound(), refine=True)
    for m, v in enumerate([0.6, 0.8, 0.85, 0.86]):
        eng.report("fast", m, v)
    for m, v in enumerate([0.2, 0.25, 0.3]):
        eng.report("slow", m, v)
    eng.eliminate()
    assert eng.status("slow") == "stopped" and eng.certificate().epsilon is not None
    assert eng.upper_bound("slow") == pytest.approx(0.3 + 0.05 + 0.5 * 0.05 / math.log(3))
    lam = eng.curve_bound.lam
    for m, v in enumerate([0.1, 0.12, 0.15, 0.95]):  # a slow starter that ends best: far beyond the bound
        eng.report("sigmoid", m, v)
    cert = eng.certificate()
    assert eng.curve_bound.lam > lam and cert.violated_by == ("sigmoid",)
    assert cert.epsilon is None and not cert.guaranteed and not cert.identified
    assert "raised" in cert.bias_source and cert.to_dict()["violated_by"] == ["sigmoid"]


def test_next_job_orders_promote_start_resume():
    eng = RungEliminator(LADDER, rule="race", race_bias=[0.3, 0.2, 0.1, 0.0])
    for k, v in enumerate([0.5, 0.2, 0.4]):
        eng.report(k, 0, v)
    assert next_job(eng, eta=3, fresh=[3], busy=()) == ("promote", 0, 1)
    assert next_job(eng, eta=3, fresh=[3], busy=[0]) == ("start", 3, 0)  # the promotable run is busy
    eng.report(0, 1, 0.6)  # one value at rung 1: fewer than eta, so none goes on from there (Algorithm 2)
    assert next_job(eng, eta=3, fresh=[3], busy=()) == ("start", 3, 0)
    assert eng.promotable(3) == [0] and eng.promotable(3, keep_one=False) == []
    assert next_job(eng, eta=3, fresh=[3], busy=[0], promote=False) == ("start", 3, 0)
    assert next_job(eng, eta=3, fresh=[], busy=[0]) == ("resume", 2, 1)  # best estimate of the others
    assert next_job(eng, eta=3, fresh=[], busy=()) == ("resume", 0, 2)  # the deepest run first
    assert next_job(eng, eta=3, fresh=[], busy=[0, 1, 2]) is None
    assert next_job(eng, eta=3, fresh=[3], busy=(), schedule="best-first") == ("start", 3, 0)
    with pytest.raises(ValueError, match="schedule"):
        next_job(eng, eta=3, fresh=[], busy=(), schedule="fifo")


# ------------------------------------------------------------------------------------------ the race policy
def run(policy: Race, x: np.ndarray, budget: float | None = None) -> list[tuple[int, int]]:
    pulls = []
    while not policy.done:
        p = policy.ask()
        if p is None:
            break
        if budget is not None and policy.cost + LADDER.costs[p.fidelity] > budget:
            break
        pulls.append((p.arm, p.fidelity))
        policy.tell(p, float(x[p.arm, p.fidelity]))
    return pulls


@pytest.mark.parametrize("seed", range(5))
def test_policy_follows_next_job_step_by_step(bound, seed):
    rng = np.random.default_rng(seed)
    K = int(rng.integers(5, 30))
    x = curves(K, rng)
    pol = Race(n_arms=K, ladder=LADDER, race_bias=bound, seed=seed)
    start = pol._start_order.tolist()
    while not pol.done:
        eng = pol.engine
        fresh = [a for a in start if eng.reached(a) < 0]
        job = next_job(eng, eta=3, fresh=fresh, busy=())
        p = pol.ask()
        assert (p is None) == (job is None)
        if p is None:
            break
        assert (p.arm, p.fidelity) == (job[1], job[2])
        pol.tell(p, float(x[p.arm, p.fidelity]))
    rec = pol.recommendation()
    assert rec.arm == int(np.argmax(np.where(np.isnan(x[:, 3]), -np.inf, x[:, 3])))  # nothing better was stopped


def test_start_order_is_seeded_and_not_the_written_order():
    orders = {tuple(Race(n_arms=12, ladder=LADDER, seed=s)._start_order.tolist()) for s in range(6)}
    assert len(orders) == 6 and tuple(range(12)) not in orders
    assert (
        Race(n_arms=12, ladder=LADDER, seed=3)._start_order.tolist()
        == Race(n_arms=12, ladder=LADDER, seed=3)._start_order.tolist()
    )


def test_anytime_policy_does_ashas_work_first(bound):
    """Until every arm has started, the pulls are ASHA's (Li et al. 2020, Algorithm 2) on the same start order:
    a direct implementation of that algorithm gives the same sequence."""
    rng = np.random.default_rng(7)
    K = 27
    x = curves(K, rng)
    pol = Race(n_arms=K, ladder=LADDER, race_bias=[math.inf, math.inf, math.inf, 0.0], seed=1)
    order = pol._start_order.tolist()
    got = run(pol, x)
    vals = np.full((K, 4), np.nan)
    reached = np.full(K, -1)
    ref, nxt = [], 0
    while nxt < K or brute_promotable(vals, reached, reached < 3, 3, keep_one=False):
        promo = brute_promotable(vals, reached, reached < 3, 3, keep_one=False)
        a = promo[0] if promo else order[nxt]
        if not promo:
            nxt += 1
        m = reached[a] + 1
        ref.append((a, m))
        vals[a, m], reached[a] = x[a, m], m
    assert got[: len(ref)] == ref


def test_stopping_early_answers_at_least_as_well_as_asha(bound):
    """The anytime property on simulated curves: at the budget where ASHA's work ends, racing's answer is
    ASHA's (no bound stops anything then: ASHA's runs are racing's)."""
    rng = np.random.default_rng(8)
    regrets = []
    for rep in range(10):
        x = curves(24, rng)
        best = x[:, 3].max()
        pol = Race(n_arms=24, ladder=LADDER, race_bias=bound, seed=rep)
        asha = Race(n_arms=24, ladder=LADDER, race_bias=[math.inf] * 3 + [0.0], seed=rep)
        b = 0.12 * 24 * 27
        run(pol, x, budget=b)
        run(asha, x, budget=b)
        ours, theirs = pol.recommendation().arm, asha.recommendation().arm
        regrets.append((best - x[ours, 3], best - x[theirs, 3]))
    r = np.array(regrets)
    assert r[:, 0].mean() <= r[:, 1].mean() + 1e-12


def test_state_round_trip_continues_identically(bound):
    rng = np.random.default_rng(9)
    x = curves(10, rng)
    a = Race(n_arms=10, ladder=LADDER, race_bias=bound, seed=2)
    for _ in range(15):
        p = a.ask()
        a.tell(p, float(x[p.arm, p.fidelity]))
    b = Race.from_state_dict(json.loads(json.dumps(a.state_dict())))
    assert run(a, x) == run(b, x)
    assert a.recommendation().arm == b.recommendation().arm


def test_race_bias_forms_accepted_by_the_policy(bound):
    Race(n_arms=3, ladder=LADDER, race_bias=bound.to_dict())
    Race(n_arms=3, ladder=LADDER, race_bias=RaceBias(upper=[0.3, 0.2, 0.1, 0.0]))
    with pytest.raises(ValueError, match="schedule"):
        Race(n_arms=3, ladder=LADDER, schedule="fifo")
    with pytest.raises(ValueError, match="eta"):
        Race(n_arms=3, ladder=LADDER, eta=1.0)
