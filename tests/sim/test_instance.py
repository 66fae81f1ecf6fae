from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import SHARED_DATA, shared_instance

from mf_sched import AssumptionWarning, FidelityLadder, Instance, load_instance, published_instance, published_instances
from mf_sched.cli import main as cli_main
from mf_sched.sim.instance import published_instance_path

VALID = {
    "means": [[0.4, 0.5], [0.5, 0.6]],
    "costs": [0.5, 5.0],
    "zeta": [0.1, 0.0],
    "noise": {"kind": "gaussian", "sigma": 0.1},
}


def write(tmp_path, data, name="inst.json"):
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else json.dumps(data))
    return p


def test_load_valid_instance(tmp_path):
    inst = load_instance(write(tmp_path, VALID))
    assert (inst.K, inst.M, inst.best_arm, inst.name) == (2, 2, 1, "inst")
    assert inst.policy_noise.sigma == 0.1
    assert inst.check_assumptions().ok
    again = Instance.from_dict(inst.to_dict())
    np.testing.assert_array_equal(again.means, inst.means)


@pytest.mark.parametrize(
    "patch, message",
    [
        ({"means": [[0.4, 0.5], [0.5]]}, "same length"),
        ({"means": []}, "non-empty list of lists"),
        ({"means": [[0.4, "x"], [0.5, 0.6]]}, r"means\[0\]\[1\] must be a number"),
        ({"means": [[0.4, 0.5, 0.6], [0.5, 0.6, 0.7]]}, "3 fidelities per arm but the ladder has 2"),
        ({"costs": [5.0, 0.5]}, "strictly increasing"),
        ({"zeta": [0.1, 0.2]}, r"zeta\[-1\] = 0.2 must be 0"),
        ({"noise": {"kind": "poisson"}}, "accepted: gaussian, bernoulli, truncated_gaussian"),
        ({"noise": {"kind": "gaussian"}}, "noise.sigma is required"),
        ({"noise": {"kind": "gaussian", "sigma": -1}}, "noise.sigma = -1 is out of range"),
        ({"noise": {"kind": "bernoulli"}, "means": [[0.4, 1.5], [0.5, 0.6]]}, r"outside \[0, 1\]"),
        ({"exec": "rm -rf /"}, "unknown keys"),
        ({"noise": {"kind": "gaussian", "sigma": 1, "seed": 3}}, "unknown keys"),
    ],
)
def test_invalid_instances_are_rejected(tmp_path, patch, message):
    with pytest.raises(ValueError, match=message):
        load_instance(write(tmp_path, {**VALID, **patch}))


def test_missing_key_and_bad_json(tmp_path):
    bad = dict(VALID)
    del bad["costs"]
    with pytest.raises(ValueError, match="missing the required key 'costs'"):
        load_instance(write(tmp_path, bad))
    with pytest.raises(ValueError, match="not valid JSON"):
        load_instance(write(tmp_path, "{not json"))
    with pytest.raises(ValueError, match="must be a JSON object"):
        load_instance(write(tmp_path, "[1, 2]"))
    with pytest.raises(FileNotFoundError):
        load_instance(tmp_path / "absent.json")


def test_assumption_violations_are_reported(tmp_path):
    # Wang et al. 2023 Table 2 breaks |mu(4) - mu(5)| <= zeta(4) for arms 1 and 3 (their Table 2 as printed)
    data = {
        "means": [
            [0.83, 0.84, 0.85, 0.85, 0.90],
            [0.82, 0.83, 0.85, 0.86, 0.88],
            [0.76, 0.80, 0.80, 0.80, 0.86],
            [0.82, 0.80, 0.82, 0.80, 0.84],
            [0.70, 0.72, 0.74, 0.76, 0.80],
        ],
        "costs": [1, 1.1, 1.2, 1.3, 1.4],
        "zeta": [0.10, 0.08, 0.06, 0.04, 0.0],
        "noise": {"kind": "bernoulli"},
    }
    with pytest.warns(AssumptionWarning, match="worst: arm 2, fidelity 3"):
        inst = load_instance(write(tmp_path, data))
    rep = inst.check_assumptions()
    assert not rep.ok
    assert sorted({(a, m) for a, m, _, _ in rep.violations}) == [(0, 3), (2, 3)]


def test_gamma_and_tie_reports():
    inst = Instance(
        [[0.0, 0.5], [0.6, 0.5]],
        FidelityLadder([1, 2], [1.0, 0.0], gamma=[0.05, 0.0]),
        {"kind": "gaussian", "sigma": 1},
    )
    rep = inst.check_assumptions()
    assert rep.gamma_violations and not rep.unique_best
    assert "not unique" in rep.summary()


def test_sampling_moments():
    rng = np.random.default_rng(0)
    inst = Instance([[0.2, 0.7]], FidelityLadder([1, 2], [0.5, 0]), {"kind": "gaussian", "sigma": 0.3})
    x = inst.sample(np.zeros(200_000, dtype=int), np.ones(200_000, dtype=int), rng)
    assert abs(x.mean() - 0.7) < 0.003 and abs(x.std() - 0.3) < 0.003
    b = Instance([[0.25]], FidelityLadder([1]), {"kind": "bernoulli"})
    y = b.sample(np.zeros(100_000, dtype=int), np.zeros(100_000, dtype=int), rng)
    assert set(np.unique(y)) <= {0.0, 1.0} and abs(y.mean() - 0.25) < 0.01
    t = Instance(
        [[0.0]],
        FidelityLadder([1]),
        {"kind": "truncated_gaussian", "sigma": 0.05, "truncate_at": 0.08, "sigma_proxy": 0.5},
    )
    z = t.sample(np.zeros(50_000, dtype=int), np.zeros(50_000, dtype=int), rng)
    assert np.abs(z).max() <= 0.08 and abs(z.mean()) < 0.002
    assert t.policy_noise.sigma == 0.5


@pytest.mark.parametrize(
    "name",
    [
        "poiani2022-synthetic-a.json",
        "poiani2022-synthetic-b.json",
        "poiani2022-yahtzee.json",
        "poiani2024-4x5.json",
        "poiani2024-5x2.json",
        "poiani2024-lucb-nonstop.json",
        "poiani2024-mu2.json",
        "poiani2024-mu3.json",
    ],
)
def test_all_shared_instances_load(name):
    import warnings

    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        inst = load_instance(shared_instance(name))
    assert inst.K >= 2 and inst.has_unique_best


def test_the_published_instances_ship_with_the_package_with_their_source_and_licence(capsys):
    """Issue 24 (10): the docs loaded ../shared/data/instances/poiani2024-5x2.json, absent from a fresh clone."""
    names = published_instances()
    assert names == [
        "poiani2022-synthetic-a",
        "poiani2022-synthetic-b",
        "poiani2022-yahtzee",
        "poiani2024-4x5",
        "poiani2024-5x2",
        "poiani2024-lucb-nonstop",
        "poiani2024-mu2",
        "poiani2024-mu3",
    ]
    for name in names:
        inst = published_instance(name, warn=False)
        assert inst.name == name and "MIT" in inst.source and "riccardopoiani/" in inst.source
    notice = (published_instance_path("poiani2024-5x2").parent / "README.md").read_text()
    assert notice.count("Permission is hereby granted") == 2  # both repositories' MIT notices
    assert published_instance("poiani2024-5x2.json").best_arm == 4
    with pytest.raises(ValueError, match="is not a published instance; accepted: poiani2022-synthetic-a"):
        published_instance("poiani2099")
    assert cli_main(["simulate", "--policy", "se", "--instance", "poiani2024-5x2", "--runs", "2", "--no-bounds",
                     "--no-progress", "--json"]) == 0  # fmt: skip
    assert '"runs": 2' in capsys.readouterr().out


def test_synthetic_a_arm1_violation_is_flagged():
    """Poiani et al. 2022: the authors' released generator makes arm 1 break the bias bound."""
    with pytest.warns(AssumptionWarning):
        inst = load_instance(shared_instance("poiani2022-synthetic-a.json"))
    assert 1 in inst.check_assumptions().violating_arms
    assert inst.best_arm == 1607


def test_shared_data_readme_exists_or_skip():
    if not SHARED_DATA.exists():
        pytest.skip("no shared data")
    assert (SHARED_DATA / "README.md").is_file()


def test_resources_round_trip_through_json(tmp_path):
    ladder = FidelityLadder([1.0, 3.0, 9.0], [0.2, 0.1, 0.0], resources=[1, 3, 9])
    inst = Instance([[0.1, 0.2, 0.3], [0.3, 0.3, 0.4]], ladder, {"kind": "gaussian", "sigma": 0.1})
    path = tmp_path / "r.json"
    inst.save(path)
    assert load_instance(path).ladder.resources == (1.0, 3.0, 9.0)


def test_sampler_accepts_the_simulation_semantics(small_instance):
    for semantics in ("independent", "resumable"):
        s = small_instance.sampler(np.random.default_rng(0), semantics=semantics)
        assert np.isfinite(s.draw_one(0, 0))
    with pytest.raises(ValueError, match="semantics = 'bogus' is unknown"):
        small_instance.sampler(np.random.default_rng(0), semantics="bogus")
