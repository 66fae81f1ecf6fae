from __future__ import annotations

import numpy as np
import pytest
from conftest import shared_instance

from mf_sched import cost_lower_bound, instance_lower_bound, load_instance
from mf_sched.sim.bounds import gaps

# Wang et al. 2023, Table 1 (Fig. 1a) and Table 2 (Fig. 1b); arms in rows
TABLE1 = np.array([[0.70, 0.80, 0.90], [0.75, 0.775, 0.80], [0.50, 0.60, 0.70], [0.50, 0.55, 0.60], [0.30, 0.45, 0.50]])
TABLE1_COSTS, TABLE1_ZETA = [1, 1.1, 1.2], [0.30, 0.15, 0.0]
TABLE2 = np.array(
    [
        [0.83, 0.84, 0.85, 0.85, 0.90],
        [0.82, 0.83, 0.85, 0.86, 0.88],
        [0.76, 0.80, 0.80, 0.80, 0.86],
        [0.82, 0.80, 0.82, 0.80, 0.84],
        [0.70, 0.72, 0.74, 0.76, 0.80],
    ]
)
TABLE2_COSTS, TABLE2_ZETA = [1, 1.1, 1.2, 1.3, 1.4], [0.10, 0.08, 0.06, 0.04, 0.0]


def test_gap_matrix_of_wang_table1_instance():
    d, _, b1, b2 = gaps(TABLE1, np.array(TABLE1_ZETA))
    expected = [[-0.4, -0.15, 0.1], [-0.15, -0.025, 0.1], [0.1, 0.15, 0.2], [0.1, 0.2, 0.3], [0.3, 0.3, 0.4]]
    np.testing.assert_allclose(d, expected, atol=1e-12)
    assert (b1, b2) == (0, 1)


@pytest.mark.parametrize("delta, bern, gauss", [(0.05, 156.36, 308.32), (0.1, 105.24, 207.53), (0.25, 37.67, 74.28)])
def test_wang_table1_lower_bound(delta, bern, gauss):
    lb = cost_lower_bound(TABLE1, TABLE1_COSTS, TABLE1_ZETA, delta, kind="bernoulli")
    assert lb.value == pytest.approx(bern, abs=0.01)
    lg = cost_lower_bound(TABLE1, TABLE1_COSTS, TABLE1_ZETA, delta, kind="gaussian", sigma=0.5)
    assert lg.value == pytest.approx(gauss, abs=0.01)
    # Gaussian form: 2 sigma^2 H log(1/(2.4 delta)) with H = 290.83
    assert lg.complexity / (2 * 0.25) == pytest.approx(290.83, abs=0.01)
    assert lg.fidelity.tolist() == [2, 2, 2, 2, 2]


@pytest.mark.parametrize("delta, bern, gauss", [(0.05, 3344.4, 8292.6), (0.1, 2251.1, 5581.6), (0.25, 805.8, 1997.9)])
def test_wang_table2_lower_bound(delta, bern, gauss):
    lb = cost_lower_bound(TABLE2, TABLE2_COSTS, TABLE2_ZETA, delta, kind="bernoulli")
    assert lb.value == pytest.approx(bern, rel=1e-4)
    lg = cost_lower_bound(TABLE2, TABLE2_COSTS, TABLE2_ZETA, delta, kind="gaussian", sigma=0.5)
    assert lg.value == pytest.approx(gauss, rel=1e-4)
    assert (lg.fidelity + 1).tolist() == [5, 5, 4, 4, 1]


def test_wang_appendix_c_lower_bound():
    # mu_k^(m) = 0.1 (k + 4) + 0.01 (m - 5); zeta = (0.04, ..., 0); lambda(m) = m, lambda(5) = 5 I
    mu = np.array([[0.1 * (k + 4) + 0.01 * (m - 5) for m in range(1, 6)] for k in range(1, 6)])
    z = [0.04, 0.03, 0.02, 0.01, 0.0]
    for case, H, lbb, lbg in [(1, 642.36, 254.67, 458.36), (2, 767.36, 300.98, 547.56)]:
        costs = [1, 2, 3, 4, 5 * case]
        lg = cost_lower_bound(mu, costs, z, 0.1, kind="gaussian", sigma=0.5)
        assert lg.complexity / 0.5 == pytest.approx(H, abs=0.01)
        assert lg.value == pytest.approx(lbg, abs=0.01)
        assert cost_lower_bound(mu, costs, z, 0.1, kind="bernoulli").value == pytest.approx(lbb, abs=0.01)


def test_lower_bound_needs_unique_best_and_valid_delta():
    with pytest.raises(ValueError, match="not unique"):
        cost_lower_bound([[0.5], [0.5]], [1], [0], 0.1, sigma=1)
    with pytest.raises(ValueError, match="delta"):
        cost_lower_bound(TABLE1, TABLE1_COSTS, TABLE1_ZETA, 1.5, sigma=1)
    assert cost_lower_bound(TABLE1, TABLE1_COSTS, TABLE1_ZETA, 0.5, sigma=1).value == 0.0


@pytest.mark.parametrize(
    "name, value, counts",
    [
        ("poiani2022-synthetic-a.json", 4.83e5, [1873, 120, 7, 0]),
        ("poiani2022-synthetic-b.json", 1.93e6, [881, 107, 10, 2, 0]),
        ("poiani2022-yahtzee.json", 2.71e11, [0, 3, 10, 0, 0, 0, 0, 0]),
    ],
)
def test_poiani2022_instances_lower_bound(name, value, counts):
    with pytest.warns(UserWarning) if "synthetic" in name else _nullcontext():
        inst = load_instance(shared_instance(name))
    lb = instance_lower_bound(inst, 0.001)
    assert lb.value == pytest.approx(value, rel=0.01)
    assert np.bincount(lb.fidelity, minlength=inst.M).tolist() == counts
    if "yahtzee" in name:
        assert "proxy" in lb.note


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def test_bounds_exports_every_bound_from_the_module_of_its_paper():
    """`mf_sched.sim.bounds` re-exports each bound as the same object as its home module, and nothing else."""
    import subprocess
    import sys

    from mf_sched.sim import bounds, cost_bound, regret_bounds, tight_bound

    home = {name: mod for mod in (cost_bound, regret_bounds, tight_bound) for name in mod.__all__}
    assert sorted(bounds.__all__) == sorted(home)
    for name in bounds.__all__:
        assert getattr(bounds, name) is getattr(home[name], name), name
    # the old import path stays silent (it is the public face, not a moved module)
    names = ", ".join(bounds.__all__)
    code = f"from mf_sched.sim.bounds import {names}"
    subprocess.run([sys.executable, "-W", "error", "-c", code], check=True)
