"""Property-based tests: random valid instances never crash a policy; random invalid input is a ValueError."""

from __future__ import annotations

import math
import re

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mf_sched import FidelityLadder, Instance, get_policy, list_policies, policy_for, run_policy

FINITE = [n for n, c in list_policies().items() if c.finite_armed]


@st.composite
def instances(draw):
    K = draw(st.integers(2, 6))
    M = draw(st.integers(1, 4))
    costs = np.cumsum(draw(st.lists(st.floats(0.01, 10), min_size=M, max_size=M))) + 0.01
    zeta = sorted(draw(st.lists(st.floats(0, 0.5), min_size=M, max_size=M)), reverse=True)
    zeta[-1] = 0.0
    kind = draw(st.sampled_from(["gaussian", "bernoulli"]))
    top = np.array(draw(st.lists(st.floats(0.05, 0.95), min_size=K, max_size=K, unique=True)))
    frac = np.array(draw(st.lists(st.floats(-1, 1), min_size=K * M, max_size=K * M))).reshape(K, M)
    means = np.clip(top[:, None] + frac * np.asarray(zeta)[None, :], 0, 1)
    means[:, -1] = top
    noise = {"kind": "gaussian", "sigma": draw(st.floats(0.01, 1))} if kind == "gaussian" else {"kind": "bernoulli"}
    return Instance(means, FidelityLadder(costs.tolist(), zeta), noise)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    inst=instances(),
    name=st.sampled_from(FINITE),
    workers=st.sampled_from([1, 3]),
    seed=st.integers(0, 2**16),
    completion=st.sampled_from(["random", "batch"]),
)
def test_random_valid_instances_never_crash(inst, name, workers, seed, completion):
    budget = 60 * float(inst.ladder.costs[-1])
    params = get_policy(name).example_params(inst)
    policy = policy_for(name, inst, delta=0.1, budget=budget, seed=seed, **params)
    r = run_policy(policy, inst, workers=workers, completion=completion, seed=seed, max_pulls=5000)
    assert r.cost <= budget * (1 + 1e-9)
    assert r.recommendation.arm is None or 0 <= r.recommendation.arm < inst.K
    assert sum(r.pulls_per_fidelity) == r.n_pulls
    assert math.isfinite(r.cost)


finite_floats = st.floats(allow_nan=True, allow_infinity=True)


@settings(max_examples=200, deadline=None)
@given(costs=st.lists(finite_floats, min_size=0, max_size=5), zeta=st.lists(finite_floats, min_size=0, max_size=5))
def test_random_ladders_are_valid_or_value_error(costs, zeta):
    try:
        lad = FidelityLadder(costs, zeta)
    except ValueError as e:
        assert _names(str(e), "costs") or _names(str(e), "zeta"), str(e)  # the error names the bad argument
        return
    assert all(c > 0 for c in lad.costs) and all(b > a for a, b in zip(lad.costs, lad.costs[1:]))
    assert lad.zeta[-1] == 0 and all(z >= 0 and math.isfinite(z) for z in lad.zeta)


json_values = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=5),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)


INSTANCE_KEYS = ["means", "costs", "zeta", "gamma", "noise", "source", "x"]
REQUIRED_KEYS = {"means", "costs", "zeta", "noise"}


def _names(message: str, key: str) -> bool:
    return re.search(rf"\b{re.escape(key)}\b", message) is not None


@settings(max_examples=300, deadline=None)
@given(d=st.dictionaries(st.sampled_from(INSTANCE_KEYS), json_values))
def test_random_instance_dicts_are_rejected_naming_a_field(d):
    """A random dict is (almost surely) not an instance: the ValueError names one of its fields or a required
    field it lacks, so that the user knows what to fix. Were one valid, it must survive a JSON round trip."""
    try:
        inst = Instance.from_dict(d)
    except ValueError as e:
        assert any(_names(str(e), k) for k in set(d) | REQUIRED_KEYS), str(e)
    else:
        again = Instance.from_dict(inst.to_dict())
        assert np.array_equal(again.means, inst.means) and again.ladder.costs == inst.ladder.costs


VALID_INSTANCE = {
    "means": [[0.2, 0.3], [0.5, 0.6], [0.4, 0.7]],
    "costs": [1.0, 4.0],
    "zeta": [0.2, 0.0],
    "gamma": [0.3, 0.0],
    "noise": {"kind": "gaussian", "sigma": 0.1},
    "source": "a test",
}


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(INSTANCE_KEYS), value=json_values, drop=st.booleans())
def test_one_bad_field_of_a_valid_instance_is_named(key, value, drop):
    """A valid instance with one field replaced by a random JSON value (or removed): either the ValueError names
    that field, or the instance is valid and holds exactly what the dict says (the optional ``gamma`` and
    ``source`` may be removed; a replacement that happens to be valid is kept as given)."""
    d = dict(VALID_INSTANCE)
    if drop and key in d:
        del d[key]
    else:
        d[key] = value
    try:
        inst = Instance.from_dict(d)
    except ValueError as e:
        assert _names(str(e), key), f"{key} = {value!r} (dropped: {drop}): {e}"
        return
    assert not (drop and key in REQUIRED_KEYS)  # a required field cannot be missing
    assert key != "x"  # an unknown key is never accepted
    assert np.array_equal(inst.means, np.asarray(d["means"], dtype=float))
    assert list(inst.ladder.costs) == [float(c) for c in d["costs"]]
    assert list(inst.ladder.zeta) == [float(z) for z in d["zeta"]]
    assert inst.source == d.get("source")
    assert Instance.from_dict(inst.to_dict()).to_dict() == inst.to_dict()


@settings(max_examples=50, deadline=None)
@given(order_seed=st.integers(0, 10**6))
def test_any_tell_order_gives_the_same_round_decision(order_seed):
    """A round's results may come back in any order: SE's next round does not depend on it."""
    lad = FidelityLadder([1.0])
    vals = [0.1, 0.5, 0.9, 0.85]

    def run(perm_seed):
        p = get_policy("se")(n_arms=4, ladder=lad, delta=0.2, seed=0, noise={"kind": "subgaussian", "sigma": 0.05})
        pulls = p.ask_batch()
        for i in np.random.default_rng(perm_seed).permutation(len(pulls)):
            p.tell(pulls[i], vals[pulls[i].arm])
        return [(x.arm, x.fidelity) for x in p.ask_batch()]

    assert run(order_seed) == run(0)
