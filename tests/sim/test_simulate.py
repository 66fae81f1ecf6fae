from __future__ import annotations

import json

import numpy as np
import pytest

from mf_sched import FidelityLadder, Instance, Policy, get_policy, policy_for, run_many, run_policy
from mf_sched.cli import main
from mf_sched.sim.simulate import PolicyStalledError, ResumableMeter, mean_ci95


class Spy:
    """Wraps a policy and records how many pulls are outstanding after each ask."""

    def __init__(self, policy):
        self.p = policy
        self.max_out = 0

    def __getattr__(self, k):
        return getattr(self.p, k)

    def ask_batch(self, n=None):
        out = self.p.ask_batch(n)
        self.max_out = max(self.max_out, len(self.p.outstanding))
        return out


@pytest.mark.parametrize("workers, completion", [(1, "random"), (4, "random"), (4, "batch"), (None, "batch")])
def test_parallel_workers_bound_outstanding_and_stay_correct(small_instance, workers, completion):
    spy = Spy(policy_for("se", small_instance, delta=0.05, seed=0))
    r = run_policy(spy, small_instance, workers=workers, completion=completion, seed=3)
    assert r.correct and r.stop_reason == "done"
    assert spy.max_out <= (workers or small_instance.K)
    if workers == 4:
        assert spy.max_out > 1


def test_budget_and_max_pulls(small_instance):
    r = run_policy(policy_for("lucb1", small_instance, delta=1e-6, seed=0), small_instance, budget=100, seed=0)
    assert r.stop_reason == "budget" and r.cost <= 100
    r = run_policy(policy_for("lucb1", small_instance, delta=1e-6, seed=0), small_instance, max_pulls=7, seed=0)
    assert r.stop_reason == "max-pulls" and r.n_pulls == 7


def test_policy_budget_stop_is_reported(small_instance):
    r = run_policy(policy_for("lucb1", small_instance, delta=1e-6, budget=90, seed=0), small_instance, seed=0)
    assert r.stop_reason == "budget" and r.recommendation.reason == "budget" and not r.recommendation.certified


def test_stalled_policy_is_detected(small_instance):
    class Stuck(Policy):
        name = "stuck"
        paper = "test double"

        def _propose(self):
            return None

        def _observe(self, arm, fidelity, value):
            pass

        def _is_done(self):
            return False

    with pytest.raises(PolicyStalledError, match="hands out nothing"):
        run_policy(Stuck(small_instance.K, small_instance.ladder), small_instance)


def test_regret_policy_needs_budget(small_instance):
    with pytest.raises(ValueError, match="never stops by itself"):
        run_policy(policy_for("ucb1", small_instance), small_instance)


def test_resumable_meter():
    m = ResumableMeter(FidelityLadder([1, 3, 9], [0.2, 0.1, 0]))
    assert [m.charge(0, 0), m.charge(0, 0), m.charge(0, 2), m.charge(0, 1), m.charge(0, 2)] == [1, 1, 8, 2, 6]
    assert m.total == 18


def test_regret_definitions():
    inst = Instance([[0.1, 0.2], [0.8, 0.9]], FidelityLadder([1, 4], [0.2, 0]), {"kind": "gaussian", "sigma": 0.1})
    p = get_policy("uniform")(
        n_arms=2, ladder=inst.ladder, rounds=1, fidelity=0, noise={"kind": "subgaussian", "sigma": 0.1}
    )
    r = run_policy(p, inst, budget=10, seed=0)
    # one pull of each arm at fidelity 0 (cost 2); capital 10
    assert r.regret_kandasamy == pytest.approx(10 * 0.9 - (1 * 0.2 + 1 * 0.9))
    assert r.regret_wang == pytest.approx(10 / 1 * 0.9 - (0.2 + 0.9))


def test_run_many_is_deterministic_whatever_n_jobs(small_instance):
    a = run_many("lucb1", small_instance, runs=4, seed=5, delta=0.1, n_jobs=1, progress=False)
    b = run_many("lucb1", small_instance, runs=4, seed=5, delta=0.1, n_jobs=2, progress=False)
    assert [r.cost for r in a.results] == [r.cost for r in b.results]
    assert a.to_dict() == b.to_dict()


def test_the_fast_runners_are_deterministic_whatever_n_jobs(small_instance):
    from mf_sched.constrained.runner import run_many_constrained
    from mf_sched.constrained.tang2024 import tang2024_instance
    from mf_sched.sim.iise_runner import run_many_fast

    inst = tang2024_instance("D1P")
    kw = dict(pull_budget=5_000, runs=3, seed=2, progress=False, fast=True)
    a, b = (run_many_constrained("sfsr", inst, n_jobs=n, **kw) for n in (1, 2))
    assert [(r.seed, r.n_pulls, r.correct, r.regret) for r in a.results] == [
        (r.seed, r.n_pulls, r.correct, r.regret) for r in b.results
    ]
    c, d = (run_many_fast("iise", small_instance, runs=3, delta=0.1, seed=4, n_jobs=n, progress=False) for n in (1, 2))
    assert c.to_dict() == d.to_dict()
    with pytest.raises(ValueError, match="n_jobs = 0 is out of range; accepted: an integer >= 1, or None"):
        run_many_constrained("sfsr", inst, n_jobs=0, **kw)


def test_mean_ci95():
    m, h = mean_ci95(np.ones(10))
    assert (m, h) == (1.0, 0.0)
    assert np.isnan(mean_ci95([3.0])[1])


def test_cli_simulate_json(tmp_path, small_instance, capsys):
    path = tmp_path / "small.json"
    small_instance.save(path)
    rc = main(
        [
            "simulate",
            "--policy",
            "se",
            "--instance",
            str(path),
            "--delta",
            "0.05",
            "--runs",
            "5",
            "--seed",
            "1",
            "--workers",
            "2",
            "--json",
            "--no-progress",
        ]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    for key in (
        "policy",
        "runs",
        "delta",
        "error_rate",
        "cost",
        "lower_bound",
        "cost_over_lower_bound",
        "tight_lower_bound",
        "cost_over_tight_lower_bound",
        "recommendations",
    ):
        assert key in out
    assert set(out["cost"]) >= {"mean", "ci95", "median"}
    assert out["policy"] == "se" and out["runs"] == 5 and out["error_rate"] == 0.0
    assert out["cost_over_lower_bound"] == pytest.approx(out["cost"]["mean"] / out["lower_bound"])
    assert out["cost_over_tight_lower_bound"] == pytest.approx(out["cost"]["mean"] / out["tight_lower_bound"])


def test_cli_params_and_errors(tmp_path, small_instance, capsys):
    path = tmp_path / "small.json"
    small_instance.save(path)
    assert (
        main(
            [
                "simulate",
                "--policy",
                "sh",
                "--instance",
                str(path),
                "--runs",
                "2",
                "--param",
                "eta=2",
                "--param",
                "samples_per_rung=3",
                "--no-progress",
            ]
        )
        == 0
    )
    table = capsys.readouterr().out
    assert "cost mean" in table and "cost / lower bound" in table and "cost / tight lower bound" in table
    assert main(["simulate", "--policy", "sh", "--instance", str(path), "--param", "bogus=1", "--no-progress"]) == 2
    assert "does not accept parameter(s) ['bogus']" in capsys.readouterr().err
    assert main(["simulate", "--policy", "nope", "--instance", str(path)]) == 2
    assert "unknown policy 'nope'" in capsys.readouterr().err
    assert main(["simulate", "--policy", "se", "--instance", str(tmp_path / "missing.json")]) == 2
    (tmp_path / "bad.json").write_text('{"means": 1}')
    assert main(["simulate", "--policy", "se", "--instance", str(tmp_path / "bad.json")]) == 2
    assert "missing the required key" in capsys.readouterr().err


def test_cli_policies(capsys):
    assert main(["policies"]) == 0
    out = capsys.readouterr().out
    for name in ("uniform", "ucb1", "lucb1", "se", "sh", "hyperband"):
        assert name in out
    assert main(["policies", "--json"]) == 0
    assert "Kalyanakrishnan" in json.loads(capsys.readouterr().out)["lucb1"]["paper"]


def test_summary_reports_cost_against_both_lower_bounds(small_instance, bernoulli_instance):
    """``lower_bound`` keeps its meaning (Wang et al. 2023 Thm 3.1); ``tight_lower_bound`` is Poiani et al.
    2024's C*(µ)·kl(δ, 1−δ), larger on this instance, and is None for Bernoulli noise."""
    from mf_sched.sim.bounds import instance_lower_bound, instance_tight_lower_bound

    s = run_many("se", small_instance, runs=3, delta=0.05, progress=False)
    d = s.to_dict()
    assert d["lower_bound"] == pytest.approx(instance_lower_bound(small_instance, 0.05).value)
    assert d["tight_lower_bound"] == pytest.approx(instance_tight_lower_bound(small_instance, 0.05).value)
    assert d["tight_lower_bound"] > d["lower_bound"] > 0
    assert d["cost_over_tight_lower_bound"] == pytest.approx(s.cost_mean / d["tight_lower_bound"])
    assert d["cost_over_tight_lower_bound"] < d["cost_over_lower_bound"]
    b = run_many("se", bernoulli_instance, runs=2, delta=0.05, progress=False).to_dict()
    assert b["lower_bound"] > 0 and b["tight_lower_bound"] is None and b["cost_over_tight_lower_bound"] is None
    assert "Gaussian" in b["tight_lower_bound_note"]
    # no δ given: the policy's default δ = 0.05 is what it used, and the summary reports it with its bounds
    # (issue 19, defect 9: it printed "delta None" and "n/a" bounds)
    default = run_many("se", small_instance, runs=2, progress=False).to_dict()
    assert default["delta"] == 0.05
    assert default["tight_lower_bound"] == pytest.approx(instance_tight_lower_bound(small_instance, 0.05).value)
    no_delta = run_many("sh", small_instance, runs=2, budget=200.0, progress=False).to_dict()
    assert no_delta["delta"] is None and no_delta["tight_lower_bound"] is None
    assert "δ" in no_delta["tight_lower_bound_note"]
    skipped = run_many("se", small_instance, runs=2, delta=0.05, bounds=False, progress=False).to_dict()
    assert skipped["lower_bound"] is None and skipped["tight_lower_bound"] is None
    assert "skipped" in skipped["tight_lower_bound_note"]


def test_run_policy_hands_its_semantics_to_the_instance_sampler(small_instance):
    seen = []

    class Recording(Instance):
        def sampler(self, rng, block=4096, *, semantics="independent"):
            seen.append(semantics)
            return super().sampler(rng, block, semantics=semantics)

    inst = Recording(small_instance.means, small_instance.ladder, small_instance.noise)
    for semantics in ("independent", "resumable"):
        run_policy(policy_for("sh", inst, seed=0), inst, semantics=semantics, seed=0)
    assert seen == ["independent", "resumable"]


@pytest.mark.parametrize(
    "name, workers, completion", [("ucb1", 1, "random"), ("ucb1", 3, "random"), ("sh", None, "batch")]
)
def test_trace_and_regret_curve_agree_with_the_run(small_instance, name, workers, completion):
    from mf_sched.sim.simulate import regret_curve

    budget = 333.0
    pol = policy_for(name, small_instance, seed=1)
    r = run_policy(pol, small_instance, budget=budget, workers=workers, completion=completion, seed=2, trace=True)
    arms, fids = r.trace
    assert arms.size == r.n_pulls
    counts = np.zeros((small_instance.K, small_instance.M), dtype=int)
    np.add.at(counts, (arms, fids), 1)
    assert counts.tolist() == pol.counts.tolist()  # issue order holds exactly the told pulls
    c = regret_curve(small_instance, arms, fids, [0.0, 50.0, budget])
    assert c["kandasamy"][-1] == pytest.approx(r.regret_kandasamy)
    assert c["wang"][-1] == pytest.approx(r.regret_wang)
    assert c["plays"][0] == 0 and c["kandasamy"][0] == 0.0
    # N(50) is the longest prefix whose cost fits in 50
    cum = np.cumsum(np.asarray(small_instance.ladder.costs)[fids])
    assert c["plays"][1] == int(np.sum(cum <= 50.0)) and c["cost"][1] <= 50.0
    assert run_policy(policy_for("ucb1", small_instance, seed=1), small_instance, budget=50, seed=2).trace is None


def test_regret_curve_validates_input(small_instance):
    from mf_sched.sim.simulate import regret_curve

    with pytest.raises(ValueError, match="same length"):
        regret_curve(small_instance, [0, 1], [0], [1.0])
    with pytest.raises(ValueError, match="arms must lie in 0..2"):
        regret_curve(small_instance, [3], [0], [1.0])
    with pytest.raises(ValueError, match="capitals"):
        regret_curve(small_instance, [0], [0], [-1.0])
