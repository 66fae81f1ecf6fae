"""The ask/tell contract, checked for every registered finite-armed policy."""

from __future__ import annotations

import copy
import json
import math

import _asktell
import numpy as np
import pytest
from _asktell import snapshot

from mf_sched import (
    DuplicateTellError,
    FidelityLadder,
    Instance,
    Policy,
    PolicyError,
    ReplayMismatchError,
    UnknownPullError,
    get_policy,
    list_policies,
    policy_for,
)
from mf_sched._serialize import StateFormatError

FINITE = [n for n, c in list_policies().items() if c.finite_armed]


def make(name: str, instance: Instance, seed: int = 0, budget: float | None = 400.0, **kw) -> Policy:
    cls = get_policy(name)
    params = dict(cls.example_params(instance))
    params.update(kw)
    return policy_for(name, instance, delta=0.1, budget=budget, seed=seed, **params)


def drive(policy: Policy, instance: Instance, rng: np.random.Generator, steps: int, workers: int = 1) -> list:
    """Ask up to `workers` pulls, complete a random one; returns the trace of decisions."""

    def sample(p):
        return float(instance.sample(np.array([p.arm]), np.array([p.fidelity]), rng)[0])

    return _asktell.drive(policy, steps, sample, rng, workers)


@pytest.mark.parametrize("name", FINITE)
def test_state_roundtrip_mid_run_continues_identically(name, small_instance):
    p = make(name, small_instance, seed=7)
    drive(p, small_instance, np.random.default_rng(1), 25, workers=3)
    state = json.loads(json.dumps(p.state_dict()))  # must survive real JSON
    q = Policy.from_state_dict(state)
    assert type(q) is type(p)
    assert q.outstanding == p.outstanding
    assert snapshot(q) == snapshot(p)
    # finish the outstanding pulls identically, then continue: identical decisions
    for pull in p.outstanding:
        p.tell(pull, 0.5)
        q.tell(pull, 0.5)
    t1 = drive(p, small_instance, np.random.default_rng(2), 60, workers=2)
    t2 = drive(q, small_instance, np.random.default_rng(2), 60, workers=2)
    assert t1 == t2
    assert snapshot(p) == snapshot(q)
    assert p.recommendation() == q.recommendation()


@pytest.mark.parametrize("name", FINITE)
def test_deterministic_given_seed(name, small_instance):
    t1 = drive(make(name, small_instance, seed=3), small_instance, np.random.default_rng(9), 80, workers=2)
    t2 = drive(make(name, small_instance, seed=3), small_instance, np.random.default_rng(9), 80, workers=2)
    assert t1 == t2 and len(t1) > 0


@pytest.mark.parametrize("name", FINITE)
def test_bad_tells_raise_and_leave_policy_unchanged(name, small_instance):
    p = make(name, small_instance)
    a = p.ask()
    b = p.ask() or a
    before = snapshot(p)
    with pytest.raises(UnknownPullError):
        p.tell(10_000, 0.5)
    with pytest.raises(PolicyError):
        p.tell(a, math.nan)
    with pytest.raises(PolicyError):
        p.tell(a, math.inf)
    with pytest.raises(UnknownPullError):
        p.tell(type(a)(a.id, (a.arm + 1) % p.n_arms, a.fidelity), 0.5)  # id of a, other arm
    with pytest.raises(PolicyError):
        p.tell_batch([a, a], [0.1, 0.2])
    with pytest.raises(PolicyError):
        p.tell_batch([a, 10_000], [0.1, 0.2])
    assert snapshot(p) == before
    p.tell(a, 0.5)
    with pytest.raises(DuplicateTellError):
        p.tell(a, 0.5)
    after = snapshot(p)
    with pytest.raises(DuplicateTellError):
        p.give_back(a)
    assert snapshot(p) == after
    if b is not a:
        p.tell(b, 0.4)


@pytest.mark.parametrize("name", FINITE)
def test_out_of_order_tells_and_outstanding(name, small_instance):
    p = make(name, small_instance, budget=2000)
    pulls = p.ask_batch(5)
    assert len({x.id for x in pulls}) == len(pulls)
    assert set(p.outstanding) == set(pulls)
    for x in reversed(pulls):
        p.tell(x, 0.5)
    assert p.outstanding == ()
    assert p.n_pulls == len(pulls)
    assert p.cost == pytest.approx(sum(small_instance.ladder.costs[x.fidelity] for x in pulls))


@pytest.mark.parametrize("name", FINITE)
def test_give_back_reissues_the_work(name, small_instance):
    for seed in range(20):  # several seeds: random tie-breaking must not decide this
        p = make(name, small_instance, seed=seed, budget=2000)
        drive(p, small_instance, np.random.default_rng(seed), 7)
        x = p.ask()
        if x is None:
            continue
        cost = p.cost
        p.give_back(x)
        assert x not in p.outstanding and p.cost == cost
        y = p.ask()
        assert (y.arm, y.fidelity) == (x.arm, x.fidelity), f"seed {seed}"  # the same work again
        assert y.id != x.id


@pytest.mark.parametrize("name", FINITE)
def test_budget_is_never_exceeded(name, small_instance):
    budget = 57.0
    p = make(name, small_instance, budget=budget, seed=2)
    rng = np.random.default_rng(0)
    for _ in range(10_000):
        if p.done:
            break
        batch = p.ask_batch(3)
        assert p.committed_cost <= budget + 1e-9
        if not batch:
            continue
        p.tell_batch(
            batch, small_instance.sample(np.array([b.arm for b in batch]), np.array([b.fidelity for b in batch]), rng)
        )
    assert p.done
    assert p.cost <= budget + 1e-9
    rec = p.recommendation()
    assert rec.arm is None or 0 <= rec.arm < p.n_arms


@pytest.mark.parametrize("name", FINITE)
def test_adopted_pulls_are_recorded_never_lost(name, small_instance):
    p = make(name, small_instance, budget=2000)
    x = p.adopt(0, 0)  # a pull the policy did not choose
    y = p.adopt(1, small_instance.M - 1)
    p.tell(x, 0.25)
    p.tell(y, 0.75)
    assert p.counts[0, 0] == 1 and p.counts[1, small_instance.M - 1] == 1
    assert p.means[0, 0] == 0.25
    assert p.cost == pytest.approx(small_instance.ladder.costs[0] + small_instance.ladder.costs[-1])
    # the policy still works afterwards
    drive(p, small_instance, np.random.default_rng(0), 20)


def test_adopt_fills_a_pending_round_slot():
    lad = FidelityLadder([1.0])
    p = get_policy("se")(n_arms=3, ladder=lad, delta=0.1, seed=0)
    x = p.adopt(2, 0)  # SE's first round pulls arms 0, 1, 2: arm 2's slot is taken by the adopted pull
    issued = [p.ask(), p.ask()]
    assert sorted(q.arm for q in issued) == [0, 1]
    assert p.ask() is None  # round complete once all three are told
    for q in issued + [x]:
        p.tell(q, 0.5)
    assert p.ask() is not None
    z = p.adopt(0, 0)
    assert z.arm == 0


def test_replay_reproduces_state_and_detects_mismatch(small_instance):
    p = make("lucb1", small_instance, seed=4)
    p.record_history()
    drive(p, small_instance, np.random.default_rng(3), 30, workers=2)
    x = p.adopt(1, 2)
    p.give_back(x)
    events = p.history
    q = make("lucb1", small_instance, seed=4)
    q.replay(events)
    assert snapshot(q) == snapshot(p)
    bad = copy.deepcopy(events)
    first_ask = next(i for i, e in enumerate(bad) if e[0] == "ask")
    bad[first_ask] = ("ask", (bad[first_ask][1] + 1) % 3, bad[first_ask][2])
    with pytest.raises(ReplayMismatchError, match=f"event {first_ask}"):
        make("lucb1", small_instance, seed=4).replay(bad)
    with pytest.raises(PolicyError, match="not being recorded"):
        _ = make("lucb1", small_instance).history


def test_load_state_rejects_tampered_or_foreign_state(small_instance):
    p = make("se", small_instance)
    drive(p, small_instance, np.random.default_rng(0), 10)
    s = p.state_dict()
    with pytest.raises(StateFormatError, match="policy 'se', not 'lucb1'"):
        make("lucb1", small_instance).load_state_dict(s)
    bad = copy.deepcopy(s)
    bad["format"] = 99
    with pytest.raises(StateFormatError, match="unsupported state format"):
        Policy.from_state_dict(bad)
    bad = copy.deepcopy(s)
    bad["base"]["_counts"]["__ndarray__"]["b64"] = "AAAA"
    with pytest.raises(StateFormatError, match="bytes"):
        Policy.from_state_dict(bad)
    bad = copy.deepcopy(s)
    bad["base"]["_counts"]["__ndarray__"]["dtype"] = "object"
    with pytest.raises(StateFormatError, match="not allowed"):
        Policy.from_state_dict(bad)
    bad = copy.deepcopy(s)
    bad["state"]["_extra"] = 1
    with pytest.raises(StateFormatError, match="expected"):
        Policy.from_state_dict(bad)
    other = make("se", small_instance, budget=123.0)
    with pytest.raises(StateFormatError, match="another configuration"):
        other.load_state_dict(s)
    # nothing was changed by the failed loads
    q = Policy.from_state_dict(s)
    assert snapshot(q) == snapshot(p)


def test_bounded_noise_rejects_out_of_range_values():
    p = get_policy("se")(n_arms=2, ladder=FidelityLadder([1.0]), delta=0.1)
    x = p.ask()
    with pytest.raises(PolicyError, match=r"outside the declared reward range \[0.0, 1.0\]"):
        p.tell(x, 1.5)
    p.tell(x, 1.0)


def test_constructor_validation_messages():
    lad = FidelityLadder([1.0, 2.0], [0.1, 0.0])
    with pytest.raises(ValueError, match="n_arms = 0 is out of range; accepted: an integer >= 1"):
        get_policy("se")(n_arms=0, ladder=lad)
    with pytest.raises(ValueError, match="delta = 1.5 is out of range; accepted: 0 < delta < 1"):
        get_policy("se")(n_arms=2, ladder=lad, delta=1.5)
    with pytest.raises(ValueError, match="budget = -1"):
        get_policy("se")(n_arms=2, ladder=lad, budget=-1)
    with pytest.raises(ValueError, match="eta = 1 is out of range; accepted: a finite number > 1"):
        get_policy("sh")(n_arms=2, ladder=lad, eta=1)
    with pytest.raises(ValueError, match="needs a way to stop"):
        get_policy("uniform")(n_arms=2, ladder=lad)


def test_done_lookahead_does_not_change_decisions(small_instance):
    """Asking `done` between calls caches the next proposal; decisions stay the same."""
    p = make("ucb1", small_instance, seed=1, budget=200)
    q = make("ucb1", small_instance, seed=1, budget=200)
    rng1, rng2 = np.random.default_rng(0), np.random.default_rng(0)
    t1, t2 = [], []
    while not p.done:
        x = p.ask()
        _ = p.done
        t1.append((x.arm, x.fidelity))
        p.tell(x, float(small_instance.sample(np.array([x.arm]), np.array([x.fidelity]), rng1)[0]))
    while True:
        x = q.ask()
        if x is None:
            break
        t2.append((x.arm, x.fidelity))
        q.tell(x, float(small_instance.sample(np.array([x.arm]), np.array([x.fidelity]), rng2)[0]))
    assert t1 == t2 and q.done


def test_vector_valued_observations_hook():
    """value_width > 1 (SFSR: reward + L costs): validation, shared stats on the reward, atomic batches."""
    from mf_sched.policies.uniform import Uniform

    class Vec(Uniform):
        name = "uniform"  # not registered: a test double
        value_width = 3

        def _observe_round_one(self, arm, fidelity, value):
            assert value.shape == (3,)
            self.seen.append(value.tolist())

        def _observe_round(self, arms, fidelities, values):
            assert values.shape == (arms.size, 3)
            self.seen.extend(values.tolist())

    p = Vec(n_arms=2, ladder=FidelityLadder([1.0]), rounds=3)
    p.seen = []
    a, b = p.ask_batch()
    with pytest.raises(PolicyError, match="3 components"):
        p.tell(a, 0.5)
    with pytest.raises(PolicyError, match="not finite"):
        p.tell(a, [0.5, math.nan, 1.0])
    with pytest.raises(PolicyError, match="reward range"):
        p.tell(a, [1.5, 0.0, 1.0])
    with pytest.raises(PolicyError, match="shape"):
        p.tell_batch([a, b], [0.1, 0.2])
    assert p.n_pulls == 0
    p.tell(a, [0.25, 3.0, 4.0])
    p.tell(b, np.array([0.75, 1.0, 2.0]))
    assert p.means[:, 0].tolist() == [0.25, 0.75]
    assert p.seen == [[0.25, 3.0, 4.0], [0.75, 1.0, 2.0]]
    c, d = p.ask_batch()
    p.tell_batch([c, d], [[0.5, 1, 1], [0.5, 2, 2]])
    assert p.seen[-2:] == [[0.5, 1, 1], [0.5, 2, 2]]
