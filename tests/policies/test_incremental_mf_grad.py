"""MF-GRAD's incremental machinery: the kept closest alternative, the kept GLR upper bound, exact restores."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import shared_instance

from mf_sched import Policy, load_instance
from mf_sched.policies.grad import Grad
from mf_sched.policies.mf_grad import MFGrad
from mf_sched.sim.alternative import IncrementalResponse, ResponseUpperBound, best_response, response_upper_bound


def _random_problem(rng: np.random.Generator):
    K = int(rng.choice([2, 3, 5, 20, 60]))
    M = int(rng.integers(1, 4))
    z = np.sort(rng.uniform(0, 0.3, M))[::-1].copy()
    z[-1] = 0.0
    x = rng.normal(0, 0.3, (K, M))
    w = rng.uniform(0.1, 2, (K, M))
    if rng.random() < 0.3:  # some zero weights below the top fidelity (interval projections)
        w[rng.random((K, M)) < 0.2] = 0.0
        w[:, -1] = np.maximum(w[:, -1], 0.05)
    return w, x, z


@pytest.mark.parametrize("seed", range(40))
def test_incremental_response_matches_best_response(seed):
    """Growing weights (kept values are lower bounds), new means and other changes, one call at a time."""
    rng = np.random.default_rng(seed)
    w, x, z = _random_problem(rng)
    K, M = x.shape
    ir = IncrementalResponse(w, x, z, 0.5)
    for _ in range(40):
        r, s = ir.solve(), best_response(w, x, z, 0.5)
        assert (r.answer, r.challenger) == (s.answer, s.challenger)
        assert r.value == pytest.approx(s.value, rel=1e-9, abs=1e-12)
        assert r.eta_answer == pytest.approx(s.eta_answer, abs=1e-9)
        assert r.eta_challenger == pytest.approx(s.eta_challenger, abs=1e-9)
        u = rng.random()
        if u < 0.6:
            rows = rng.choice(K, size=min(2, K), replace=False)
            w[rows] *= rng.uniform(1.0, 1.5, (rows.size, M))
            ir.set_rows(rows, w=w[rows], grow=True)
        elif u < 0.9:
            j = int(rng.integers(K))
            x[j, rng.integers(M)] += rng.normal(0, 0.1)
            ir.set_rows([j], x=x[j])
        else:
            j = int(rng.integers(K))
            w[j] *= rng.uniform(0.5, 1.0, M)
            x[j] += rng.normal(0, 0.05, M)
            ir.set_rows([j], w=w[j], x=x[j])


def test_incremental_response_is_a_function_of_the_current_weights_and_means():
    """What was kept only saves work: a fresh solver on the same (w, x) answers the same numbers."""
    rng = np.random.default_rng(7)
    w, x, z = _random_problem(rng)
    ir = IncrementalResponse(w, x, z, 0.5)
    for _ in range(30):
        rows = rng.choice(x.shape[0], size=min(2, x.shape[0]), replace=False)
        w[rows] *= rng.uniform(1.0, 1.3, (rows.size, x.shape[1]))
        ir.set_rows(rows, w=w[rows], grow=True)
        r, f = ir.solve(), IncrementalResponse(w, x, z, 0.5).solve()
        assert (r.value, r.answer, r.challenger, r.eta_answer, r.eta_challenger) == (
            f.value,
            f.answer,
            f.challenger,
            f.eta_answer,
            f.eta_challenger,
        )


@pytest.mark.parametrize("seed", range(10))
def test_kept_upper_bound_equals_the_function(seed):
    rng = np.random.default_rng(seed)
    w, x, z = _random_problem(rng)
    ub = ResponseUpperBound(w, x, z, 0.3, best_response(w, x, z, 0.3))
    for _ in range(20):
        j = int(rng.integers(x.shape[0]))
        w[j] += rng.uniform(0, 1, x.shape[1])
        x[j] += rng.normal(0, 0.05, x.shape[1])
        ub.update([j])
        assert ub.value() == response_upper_bound(w, x, z, 0.3, ub.stale)
        assert ub.value() >= best_response(w, x, z, 0.3).value * (1 - 1e-12)


def _run(policy: Policy, inst, rng: np.random.Generator, steps: int, workers: int, restore_every: int):
    """Drive the policy; every ``restore_every`` calls it is replaced by its restored copy. Returns the pulls."""
    out, outstanding = [], []
    for step in range(steps):
        if policy.done:
            break
        if len(outstanding) < workers:
            p = policy.ask()
            if p is not None:
                outstanding.append(p)
                out.append((p.arm, p.fidelity))
                continue
        if not outstanding:
            break
        p = outstanding.pop(int(rng.integers(len(outstanding))))
        if rng.random() < 0.02:
            policy.give_back(p)
        else:
            policy.tell(p, float(inst.sample(np.array([p.arm]), np.array([p.fidelity]), rng)[0]))
        if restore_every and step % restore_every == restore_every - 1:
            policy = Policy.from_state_dict(json.loads(json.dumps(policy.state_dict())))
    return out, policy


@pytest.mark.parametrize("cls,name,workers", [(MFGrad, "4x5", 1), (MFGrad, "5x2", 3), (Grad, "5x2", 1)])
def test_restored_policy_continues_exactly(cls, name, workers):
    """The kept weights, offsets and alternatives are rebuilt exactly from the saved state."""
    inst = load_instance(shared_instance(f"poiani2024-{name}.json"))
    runs = []
    for restore_every in (0, 7):
        p = cls(n_arms=inst.K, ladder=inst.ladder, noise=inst.policy_noise, delta=0.01, seed=1)
        runs.append(_run(p, inst, np.random.default_rng(5), 1500, workers, restore_every))
    (a, pa), (b, pb) = runs
    assert a == b
    assert pa.recommendation() == pb.recommendation()
