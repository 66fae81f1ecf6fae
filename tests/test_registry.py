"""The policy registry: names, the two renamed policies (old names still work and old states still load)."""

from __future__ import annotations

import copy
import json
import warnings

import pytest

from mf_sched import FidelityLadder, Policy, get_policy, list_policies
from mf_sched._serialize import StateFormatError
from mf_sched.policy import RoundPolicy
from mf_sched.registry import RENAMED, canonical_name

LADDER = FidelityLadder([1.0, 10.0], [0.2, 0.0])


def test_the_renamed_policies_are_listed_under_their_new_names_only():
    names = list_policies()
    assert {"iise-max-exploit", "mf-mab-elimination"} <= set(names)
    assert not set(RENAMED) & set(names)
    assert names["iise-max-exploit"].__name__ == "MFE" and names["mf-mab-elimination"].__name__ == "MFElimination"


@pytest.mark.parametrize(("old", "new"), sorted(RENAMED.items()))
def test_an_old_name_resolves_with_a_deprecation_warning_naming_the_new_one(old, new):
    with pytest.warns(DeprecationWarning, match=f"'{old}' is now called '{new}'"):
        assert get_policy(old) is get_policy(new)
    assert canonical_name(old) == new and canonical_name(new) == new and canonical_name(3) == 3


def _saved(name: str, **kw) -> dict:
    p = get_policy(name)(n_arms=3, ladder=LADDER, seed=0, **kw)
    for _ in range(5):
        pull = p.ask()
        p.tell(pull, 0.5)
    return json.loads(json.dumps(p.state_dict()))


@pytest.mark.parametrize(
    ("old", "new", "kw"),
    [("mfe", "iise-max-exploit", {"delta": 0.1, "c": 0.1}), ("mf-elimination", "mf-mab-elimination", {"budget": 1e4})],
)
def test_a_state_saved_under_the_old_name_loads_silently(old, new, kw):
    state = _saved(new, **kw)
    state["policy"] = old  # what an earlier version wrote
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # loading saved data does not warn
        q = Policy.from_state_dict(state)
        target = get_policy(new)(n_arms=3, ladder=LADDER, seed=0, **kw)
        target.load_state_dict(state)
    assert q.name == new and q.ask() == target.ask()


def test_a_config_that_does_not_fit_the_saved_arrays_is_refused_before_the_policy_is_built():
    # the state fuzz drew a config naming 40 million arms over a 3-arm state: building that policy first took
    # gigabytes; the count table's shape now refuses it up front
    state = _saved("se", delta=0.1)
    bad = copy.deepcopy(state)
    bad["config"]["n_arms"] = 40_268_288
    with pytest.raises(StateFormatError, match="n_arms = 40268288 but its count table has 3 rows"):
        Policy.from_state_dict(bad)
    assert Policy.from_state_dict(state).n_arms == 3


def test_a_policy_class_refuses_a_state_saved_by_another_policy():
    """Issue 24 (8): ``get_policy("iise").from_state_dict(state_saved_by_se)`` returned a SuccessiveElimination."""
    ladder = FidelityLadder(costs=[1, 3, 9], zeta=[0.2, 0.05, 0.0], gamma=[0.1, 0.05, 0.0])
    se = get_policy("se")(n_arms=4, ladder=ladder, delta=0.05, seed=0)
    se.tell(se.ask(), 0.5)
    state = json.loads(json.dumps(se.state_dict()))
    with pytest.raises(StateFormatError, match=r"saved by policy 'se' \(SuccessiveElimination\), not 'iise' \(IISE\)"):
        get_policy("iise").from_state_dict(state)
    with pytest.raises(StateFormatError, match="not 'iise-gamma'"):  # a subclass of IISE is not an SE either
        get_policy("iise-gamma").from_state_dict(state)
    assert type(get_policy("se").from_state_dict(state)).__name__ == "SuccessiveElimination"
    assert type(Policy.from_state_dict(state)).__name__ == "SuccessiveElimination"  # any policy: as before
    iise = get_policy("iise")(n_arms=4, ladder=ladder, delta=0.05, seed=0)
    with pytest.raises(StateFormatError, match="not 'iise'"):  # IISE-γ's state is not an IISE's, though a subclass
        get_policy("iise").from_state_dict(get_policy("iise-gamma")(n_arms=4, ladder=ladder, seed=0).state_dict())
    with pytest.raises(StateFormatError, match="which is not a RoundPolicy"):  # an abstract base checks the kind
        RoundPolicy.from_state_dict(get_policy("ucb1")(n_arms=4, ladder=ladder, seed=0).state_dict())
    assert type(RoundPolicy.from_state_dict(iise.state_dict())).__name__ == "IISE"

    class MyIISE(get_policy("iise")):  # type: ignore[misc,valid-type]
        pass

    assert type(MyIISE.from_state_dict(iise.state_dict())) is MyIISE  # a user's subclass is rebuilt as itself
