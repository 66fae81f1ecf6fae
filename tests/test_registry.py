"""The policy registry: names, the two renamed policies (old names still work and old states still load)."""

from __future__ import annotations

import copy
import json
import warnings

import pytest

from mf_sched import FidelityLadder, Policy, get_policy, list_policies
from mf_sched._serialize import StateFormatError
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
