"""iise-rungs: the rung engine as a simulated policy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from mf_sched import FidelityLadder, Instance, Policy, Pull, policy_for, run_policy
from mf_sched._serialize import StateFormatError
from mf_sched.policies.iise_rungs import IISERungs


def _instance(seed: int, K: int = 8) -> Instance:
    rng = np.random.default_rng(seed)
    ladder = FidelityLadder(costs=[1, 3, 9, 27], zeta=[0.2, 0.1, 0.04, 0.0])
    mu = np.sort(rng.uniform(0.2, 0.8, K))
    mu[-1] = mu[-2] + 0.15  # a unique best arm with a gap the top rung resolves
    bias = rng.uniform(-1, 1, (K, 1)) * np.asarray(ladder.zeta)[None, :]
    return Instance(mu[:, None] + bias, ladder, {"kind": "gaussian", "sigma": 0.02})


def test_delta_correct_and_cheaper_than_training_everything() -> None:
    delta, runs = 0.1, 60
    errors = 0
    for s in range(runs):
        inst = _instance(s)
        res = run_policy(policy_for("iise-rungs", inst, delta=delta, seed=s), inst, semantics="resumable", seed=s)
        errors += not res.correct
        assert res.resumable_cost < inst.K * 27
    assert errors <= stats.binom.ppf(0.999, runs, delta)


def test_epsilon_certificate_when_the_top_rung_cannot_separate() -> None:
    ladder = FidelityLadder(costs=[1, 10], zeta=[0.1, 0.0])
    inst = Instance([[0.5, 0.6], [0.51, 0.61], [0.0, 0.1]], ladder, {"kind": "gaussian", "sigma": 0.05})
    p = IISERungs(3, ladder, delta=0.05, noise={"kind": "subgaussian", "sigma": 0.05}, seed=0)
    res = run_policy(p, inst, workers=None, completion="batch", seed=3)
    rec = res.recommendation
    B = p.engine.radius(0, 1)
    assert not rec.certified and rec.reason == "finished"
    assert 0 < rec.details["epsilon"] <= 4 * B and rec.details["guaranteed"]
    assert res.pulls_per_fidelity == [3, 2]


def test_eta_cut_is_reported_as_unguaranteed() -> None:
    inst = _instance(0, K=9)
    p = policy_for("iise-rungs", inst, delta=0.1, seed=0, eta=3)
    res = run_policy(p, inst, semantics="resumable", workers=None, completion="batch", seed=0)
    assert res.pulls_per_fidelity[1] <= 3 and res.recommendation.details["guaranteed"] is False
    assert not res.recommendation.certified


@pytest.mark.parametrize("order_seed", [0, 1, 2])
def test_decisions_do_not_depend_on_completion_order(order_seed: int) -> None:
    inst = _instance(2)
    vals = inst.sampler(np.random.default_rng(9)).draw(*np.meshgrid(np.arange(8), np.arange(4), indexing="ij"))

    def play(shuffle: bool) -> tuple[int, list[int]]:
        p = policy_for("iise-rungs", inst, delta=0.1, seed=0)
        rng = np.random.default_rng(order_seed)
        while not p.done:
            pulls = p.ask_batch()
            if shuffle:
                pulls = [pulls[i] for i in rng.permutation(len(pulls))]
            for q in pulls:
                p.tell(q, float(vals[q.arm, q.fidelity]))
        return p.recommendation().arm, p.counts.sum(axis=0).tolist()

    assert play(True) == play(False)


def _saved(name: str) -> dict:
    return json.loads((Path(__file__).parent / "data" / name).read_text())


def test_engine_state_is_nested_and_round_trips() -> None:
    ladder = FidelityLadder(costs=[1, 3, 9], zeta=[0.2, 0.05, 0.0])
    p = IISERungs(4, ladder, delta=0.05, noise={"kind": "subgaussian", "sigma": 0.02}, seed=1)
    pulls = p.ask_batch()
    p.tell_batch(pulls, [0.1 * q.arm for q in pulls])
    state = json.loads(json.dumps(p.state_dict()))  # JSON-safe
    assert state["state"]["_engine_state"]["format"] == p.engine.state_dict()["format"]
    q = Policy.from_state_dict(state)
    assert q.engine.state_dict() == p.engine.state_dict() and q.state_dict() == p.state_dict()


def test_state_saved_with_the_engine_as_a_json_string_still_loads() -> None:
    """A state written before the engine state was nested (field ``_engine_json``, saved mid-rung with
    pulls outstanding) loads and continues with the same pulls and answer as the policy that saved it."""
    saved = _saved("iise_rungs_state_engine_json.json")
    assert "_engine_json" in saved["state"]["state"]
    p = Policy.from_state_dict(saved["state"])
    means, zeta = saved["means"], p.ladder.zeta

    def val(q: Pull) -> float:  # the values the saving run used
        return means[q.arm] - zeta[q.fidelity] + 0.01 * ((q.arm * 7 + q.fidelity * 3) % 5 - 2)

    log = []
    for q in p.outstanding:
        p.tell(q, val(q))
        log.append([q.arm, q.fidelity])
    while not p.done:
        for q in p.ask_batch():
            p.tell(q, val(q))
            log.append([q.arm, q.fidelity])
    rec = p.recommendation()
    assert log == saved["then_pulls"]
    assert (rec.arm, rec.certified, p.cost) == (saved["then_arm"], saved["then_certified"], saved["then_cost"])
    assert "_engine_state" in p.state_dict()["state"]  # saved again in the new form


def test_malformed_engine_state_is_refused() -> None:
    saved = _saved("iise_rungs_state_engine_json.json")["state"]
    bad = json.loads(json.dumps(saved))
    bad["state"]["_engine_json"] = "{not json"
    with pytest.raises(StateFormatError, match="_engine_json"):
        Policy.from_state_dict(bad)
    p = Policy.from_state_dict(saved)
    new = json.loads(json.dumps(p.state_dict()))
    new["state"]["_engine_state"]["config"]["delta"] = 0.2
    with pytest.raises(StateFormatError, match="another configuration"):
        Policy.from_state_dict(new)
