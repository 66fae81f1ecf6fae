from __future__ import annotations

import math

import pytest

from mf_sched import FidelityLadder


def test_valid_ladder_accessors():
    lad = FidelityLadder(costs=[1, 3, 9], zeta=[0.2, 0.05, 0.0], resources=[1, 3, 9], gamma=[0.1, 0.02, 0])
    assert lad.M == 3 and lad.top == 2
    assert lad.costs == (1.0, 3.0, 9.0)
    assert lad.cost(2) == 9.0
    assert lad.is_zeta_monotone
    assert lad.incremental_cost(2, 0) == 8.0
    assert lad.incremental_cost(1, None) == 3.0
    assert FidelityLadder.from_dict(lad.to_dict()) == lad


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"costs": [1, 1], "zeta": [0.1, 0]}, "costs must be strictly increasing: costs[1] = 1.0"),
        ({"costs": [3, 2], "zeta": [0.1, 0]}, "costs must be strictly increasing: costs[1] = 2.0"),
        ({"costs": [0, 2], "zeta": [0.1, 0]}, "costs[0] = 0.0 must be > 0"),
        ({"costs": [-1, 2], "zeta": [0.1, 0]}, "costs[0] = -1.0 must be > 0"),
        ({"costs": [1, math.inf], "zeta": [0.1, 0]}, "costs[1] = inf is not finite"),
        ({"costs": [], "zeta": []}, "at least one fidelity"),
        ({"costs": [1, 2], "zeta": [-0.1, 0]}, "zeta[0] = -0.1 must be >= 0"),
        ({"costs": [1, 2], "zeta": [math.nan, 0]}, "zeta[0] = nan is not finite"),
        ({"costs": [1, 2], "zeta": [0.1, 0.01]}, "zeta[-1] = 0.01 must be 0"),
        ({"costs": [1, 2], "zeta": [0.1]}, "zeta has length 1 but costs has length 2"),
        ({"costs": [1, 2]}, "zeta is required"),
        ({"costs": [1, 2], "zeta": [0.1, 0], "resources": [1]}, "resources has length 1"),
        ({"costs": [1, 2], "zeta": [0.1, 0], "resources": [3, 3]}, "resources must be strictly increasing"),
        ({"costs": [1, 2], "zeta": [0.1, 0], "gamma": [0.1, 0.2]}, "gamma[-1] = 0.2 must be 0"),
        ({"costs": [1, "x"], "zeta": [0.1, 0]}, "costs[1] must be a number"),
        ({"costs": "12", "zeta": [0.1, 0]}, "costs must be a sequence"),
        ({"costs": [1, True], "zeta": [0.1, 0]}, "costs[1] must be a number"),
    ],
)
def test_invalid_ladders_name_value_and_rule(kwargs, message):
    with pytest.raises(ValueError) as e:
        FidelityLadder(**kwargs)
    assert message in str(e.value)


def test_fidelity_index_is_checked():
    lad = FidelityLadder([1, 2], [0.1, 0])
    with pytest.raises(ValueError, match="accepted: integers 0..1"):
        lad.cost(2)
    with pytest.raises(ValueError, match="from_m=1 must be below m=1"):
        lad.incremental_cost(1, 1)


def test_from_dict_rejects_unknown_keys():
    with pytest.raises(ValueError, match="unknown ladder keys"):
        FidelityLadder.from_dict({"costs": [1], "zeta": [0], "eval": "x"})


def test_non_monotone_zeta_is_allowed_but_reported():
    lad = FidelityLadder([1, 2, 3], [0.1, 0.2, 0.0])
    assert not lad.is_zeta_monotone
