"""Replay benchmarks: real curves as instances, both observation semantics, the simulator on them."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from mf_sched import FidelityLadder, load_instance, policy_for, run_many, run_policy
from mf_sched.curves import LearningCurves
from mf_sched.curves.replay import ReplayBenchmark
from mf_sched.sim.simulate import ResumableMeter


def seeded_curves(C=60, S=3, epochs=(1, 3, 9, 27), seed=0):
    rng = np.random.default_rng(seed)
    ep = np.asarray(epochs, dtype=float)
    final = rng.uniform(0.5, 0.9, C)
    recs = []
    for c in range(C):
        for s in range(S):
            off = 0.02 * rng.standard_normal()
            for e in ep:
                recs.append({"config": c, "seed": s, "epoch": e, "acc": final[c] - 0.2 / e + off})
    return LearningCurves.from_records(recs, metric="acc", mode="max", seed="seed", fidelity="epoch")


def tagged_bench(S=5, M=3, K=2, extra=0.0):
    """values[k, s, m] = 100 k + 10 s + m: every draw says which arm, seed and rung it came from."""
    k, s, m = np.meshgrid(np.arange(K), np.arange(S), np.arange(M), indexing="ij")
    values = 100.0 * k + 10.0 * s + m
    ladder = FidelityLadder([1.0, 3.0, 9.0][:M], [0.2, 0.1, 0.0][:M])
    return ReplayBenchmark(values, ladder, sigma=1.0, extra_noise=extra)


def test_means_are_seed_averages_and_incomplete_seeds_are_not_replayed():
    values = np.array([[[0.1, 0.5], [0.3, 0.7], [0.2, np.nan]], [[0.4, 0.4], [np.nan, np.nan], [np.nan, np.nan]]])
    b = ReplayBenchmark(values, FidelityLadder([1, 2], [0.5, 0]), sigma=0.1)
    assert np.allclose(b.means, [[0.2, 0.6], [0.4, 0.4]])
    assert b.seeds_per_arm.tolist() == [2, 1] and b.best_arm == 0
    draws = b.sample(np.zeros(2000, dtype=int), np.zeros(2000, dtype=int), np.random.default_rng(0))
    assert set(np.round(draws, 6).tolist()) == {0.1, 0.3}  # seed 2 lacks the last rung: never replayed
    bad = values.copy()
    bad[1, 0, 1] = np.nan
    with pytest.raises(ValueError, match="arm 1 has no seed with a finite value at every rung"):
        ReplayBenchmark(bad, FidelityLadder([1, 2], [0.5, 0]), sigma=0.1)


def test_independent_pulls_draw_a_fresh_seed_each_time():
    b = tagged_bench()
    s = b.sampler(np.random.default_rng(1), semantics="independent")
    v0 = np.array([s.draw_one(1, 0) for _ in range(3000)])
    v1 = np.array([s.draw_one(1, 1) for _ in range(3000)])
    seeds0, seeds1 = (v0 - 100) // 10, (v1 - 101) // 10
    counts = np.bincount(seeds0.astype(int), minlength=5)
    assert counts.min() > 500  # uniform over the 5 seeds (expected 600 each)
    assert abs(np.mean(seeds0 == seeds1) - 0.2) < 0.04  # consecutive pulls are independent runs
    batch = s.draw(np.array([0, 1, 1]), np.array([2, 0, 1]))
    assert np.all(batch % 10 == [2, 0, 1]) and np.all(batch // 100 == [0, 1, 1])


def test_resumable_pulls_continue_the_same_run_like_the_meter():
    b = tagged_bench()
    rng = np.random.default_rng(2)
    s = b.sampler(rng, semantics="resumable")
    meter = ResumableMeter(b.ladder)
    seq = [(0, 0), (0, 1), (0, 2), (0, 0), (1, 2), (0, 1), (0, 1), (1, 0)]
    vals, costs = [], []
    for arm, m in seq:
        vals.append(s.draw_one(arm, m))
        costs.append(meter.charge(arm, m))
    seed = [int(v % 100 // 10) for v in vals]
    assert [int(v % 10) for v in vals] == [m for _, m in seq]
    assert seed[0] == seed[1] == seed[2]  # one run advanced 0 -> 1 -> 2
    assert seed[5] == seed[3]  # the second replica (started at 0) continued to 1
    assert costs == [1.0, 2.0, 6.0, 1.0, 9.0, 2.0, 3.0, 1.0]  # the meter agrees on which replica moved
    assert [len(r) for r in s.replicas.values()] == [3, 2]


def test_extra_noise_and_run_api():
    b = tagged_bench(extra=[0.5, 0.0, 0.0])
    rng = np.random.default_rng(3)
    e = b.evaluate(1, 0, rng)
    assert e.cost == 1.0 and abs(e.score - (100 + 10 * e.seed)) < 3
    run = b.start_run(0, rng)
    steps = [run.advance(m) for m in (0, 1, 2)]
    assert [x.cost for x in steps] == [1.0, 2.0, 6.0]
    assert steps[1].score == 10 * run.seed + 1 and steps[2].score == 10 * run.seed + 2
    with pytest.raises(ValueError, match="from_m=2 must be below m=1"):
        run.advance(1)
    with pytest.raises(ValueError, match="arm = 5 is out of range"):
        b.evaluate(5, 0, rng)


def test_from_curves_calibrates_on_held_out_configurations():
    curves = seeded_curves(C=80)
    b = ReplayBenchmark.from_curves(curves, [1, 3, 9, 27], n_arms=30, seed=4)
    assert (b.K, b.M) == (30, 4) and b.seeds_per_arm.tolist() == [3] * 30
    assert b.calibration.n_configs[0] == 50  # ζ̂ estimated on the 50 configurations not drawn as arms
    assert "held-out" in b.source and b.ladder.resources == (1.0, 3.0, 9.0, 27.0)
    # coverage on the arms is what check_assumptions reports
    rep = b.check_assumptions()
    viol = np.zeros(b.M)
    for _, m, _, _ in rep.violations:
        viol[m] += 1
    assert np.allclose(b.zeta_coverage, 1 - viol / b.K)
    # σ the policies assume: the largest pooled seed spread (0.02 offsets per seed here)
    assert 0.01 < b.noise.sigma < 0.04
    # scores of a loss source are −loss: the best arm has the smallest final loss
    loss = LearningCurves(config=curves.config, seed=curves.seed, fidelity=curves.fidelity,
                          metric=-curves.metric, mode="min")  # fmt: skip
    bl = ReplayBenchmark.from_curves(loss, [1, 3, 9, 27], n_arms=30, seed=4, calibration="all")
    assert bl.best_arm == b.best_arm and bl.metric_of(float(bl.true_means.max())) < 0


def test_from_curves_requires_noise_for_single_seed_sources():
    curves = seeded_curves(C=40, S=1)
    with pytest.raises(ValueError, match="noiseless"):
        ReplayBenchmark.from_curves(curves, [1, 3, 9, 27])
    b = ReplayBenchmark.from_curves(curves, [1, 3, 9, 27], extra_noise=0.01)
    assert b.noise.sigma == pytest.approx(0.01)
    with pytest.raises(ValueError, match="n_arms = 100 is out of range; accepted: 2..40"):
        ReplayBenchmark.from_curves(curves, [1, 3, 9, 27], n_arms=100, extra_noise=0.01)
    lad = FidelityLadder([1, 3, 9, 27], [0.3, 0.1, 0.03, 0])
    assert ReplayBenchmark.from_curves(curves, [1, 3, 9, 27], calibration=lad, sigma=0.05).ladder is lad


def test_policies_run_on_a_replay_under_both_semantics_and_it_pickles(tmp_path):
    curves = seeded_curves(C=60)
    b = ReplayBenchmark.from_curves(curves, [1, 3, 9, 27], n_arms=20, seed=1)
    r = run_policy(policy_for("se", b, delta=0.05, seed=0), b, seed=0, workers=None, completion="batch")
    assert r.stop_reason == "done" and r.simple_regret >= 0
    res = run_policy(policy_for("sh", b, seed=0), b, semantics="resumable", seed=0)
    assert res.resumable_cost < res.cost
    summary = run_many("sh", b, runs=4, params={"samples_per_rung": 2}, progress=False, seed=7)
    assert summary.runs == 4 and summary.error_rate <= 1
    # process-parallel run_many pickles the instance: the copy replays the same values (without the
    # calibration and its arrays)
    copy = pickle.loads(pickle.dumps(b))
    assert copy.calibration is None and copy.labels == b.labels
    arms, fids = np.arange(20) % b.K, np.arange(20) % b.M
    assert np.array_equal(
        copy.sample(arms, fids, np.random.default_rng(5)), b.sample(arms, fids, np.random.default_rng(5))
    )
    # the saved JSON is the Gaussian approximation that `mf-sched simulate` reads
    b.save(tmp_path / "replay.json")
    inst = load_instance(tmp_path / "replay.json", warn=False)
    assert np.allclose(inst.means, b.means) and inst.ladder.resources == b.ladder.resources
    assert inst.noise.sigma == b.noise.sigma


def test_replay_of_real_deepobs_seeds():
    from conftest import SHARED_DATA

    if not (SHARED_DATA / "deepobs").exists():
        pytest.skip("DeepOBS data not available")
    from mf_sched.curves.datasets import load_deepobs

    curves = load_deepobs(SHARED_DATA / "deepobs" / "deepobs_epoch_curves.csv.gz", problems="fmnist_2c2d")
    b = ReplayBenchmark.from_curves(curves, [1, 3, 10, 30, 100], n_arms=40, seed=0, extra_noise=0.003)
    assert b.K == 40 and set(b.seeds_per_arm.tolist()) <= {1, 9, 10}  # 9-10 seeds at the best learning rates
    assert b.zeta_coverage[-1] == 1.0 and b.zeta_coverage.min() >= 0.85
    r = run_policy(policy_for("sh", b, seed=0), b, seed=0)
    assert 0 <= r.simple_regret < 0.2
