"""Bad input, fuzzed (issue 19, build item 4): instance JSON, ladders, tell values and saved states.

Whatever a careless or hostile caller passes, the core answers with an error of its own — ``ValueError``
or a subclass defined in :mod:`mf_sched` (``PolicyError`` and its kin, ``StateFormatError``) — never a
``TypeError``/``KeyError``/``IndexError``/``AttributeError`` from deep inside; and a rejected call leaves the
policy exactly as it was (its saved state is unchanged).
"""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mf_sched import FidelityLadder, Instance, Policy, PolicyError, get_policy, list_policies, load_instance, policy_for
from mf_sched._serialize import StateFormatError
from mf_sched.policy import Pull

FINITE = [n for n, c in list_policies().items() if c.finite_armed]

# a fuzzed parameter that asks for a huge allocation fails its test with a MemoryError, not the machine (conftest)
pytestmark = pytest.mark.usefixtures("memory_cap")


def own_error(e: BaseException) -> bool:
    """A ValueError raised by mf_sched itself (builtin ValueError with our message, or one of our subclasses);
    not a JSON/Unicode decoding error leaking out, and never an error of another kind."""
    if not isinstance(e, ValueError):
        return False
    t = type(e)
    return t is ValueError or t.__module__.startswith("mf_sched")


def expect_own_error(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call ``fn``; return its result, or None when it raised one of the project's own errors."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the point is to classify every exception
        assert own_error(e), f"{type(e).__name__} leaked: {e!r}"
        assert str(e), "an error must say what is wrong"
        return None


# ---------------------------------------------------------------------------------------------- values
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=6)
    | st.sampled_from(["0.5", "nan", "inf", "1e400", "", " 1 "])
    | st.complex_numbers(max_magnitude=1e3)
)
json_like = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=10,
)
weird = json_like | st.sampled_from(
    [np.float64("nan"), np.array([0.5]), np.array(0.5), np.bool_(True), b"0.5", object()]
)


# ---------------------------------------------------------------------------------------------- ladders
@settings(max_examples=300, deadline=None)
@given(
    costs=json_like,
    zeta=json_like,
    gamma=json_like,
    resources=json_like,
    names=st.none() | st.lists(st.text(max_size=3), max_size=4) | json_like,
)
def test_fuzzed_ladders_are_valid_or_a_named_error(costs, zeta, gamma, resources, names):
    lad = expect_own_error(FidelityLadder, costs, zeta, gamma, resources, names)
    if lad is not None:
        assert lad.M >= 1 and all(c > 0 and math.isfinite(c) for c in lad.costs)
        assert lad.zeta[-1] == 0.0
        assert FidelityLadder.from_dict(lad.to_dict()) == lad
    expect_own_error(
        FidelityLadder.from_dict, {"costs": costs, "zeta": zeta, "gamma": gamma, "resources": resources, "x": names}
    )
    expect_own_error(
        FidelityLadder.from_dict, {"costs": costs, "zeta": zeta, "gamma": gamma, "resources": resources, "names": names}
    )


# ---------------------------------------------------------------------------------------------- instances
VALID = {
    "means": [[0.4, 0.5], [0.55, 0.65], [0.6, 0.7]],
    "costs": [1, 10],
    "zeta": [0.15, 0.0],
    "gamma": [0.1, 0.0],
    "resources": [1, 10],
    "noise": {"kind": "gaussian", "sigma": 0.1},
    "source": "fuzz",
}


def _paths(d: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(d, dict):
        for k, v in d.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            out += _paths(v, prefix + (i,))
    return out


def _mutate(doc: Any, data: st.DataObject) -> Any:
    """Replace, delete or add at a random place of a JSON document."""
    doc = copy.deepcopy(doc)
    paths = [p for p in _paths(doc) if p]
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths))
        parent = doc
        try:
            for k in path[:-1]:
                parent = parent[k]
            op = data.draw(st.sampled_from(["replace", "delete", "add"]))
            if op == "replace":
                parent[path[-1]] = data.draw(json_like)
            elif op == "delete":
                del parent[path[-1]]
            elif isinstance(parent, dict):
                parent[data.draw(st.text(max_size=5))] = data.draw(json_like)
            elif isinstance(parent, list):
                parent.append(data.draw(json_like))
        except (KeyError, IndexError, TypeError):
            pass  # the path vanished with an earlier mutation
    return doc


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzzed_instance_dicts_are_valid_or_a_named_error(data):
    doc = _mutate(VALID, data)
    inst = expect_own_error(Instance.from_dict, doc)
    if inst is not None:
        assert inst.K >= 1 and inst.M == inst.ladder.M and np.all(np.isfinite(inst.means))
        assert Instance.from_dict(inst.to_dict()).to_dict() == inst.to_dict()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_instance_files_are_valid_or_a_named_error(tmp_path, data):
    text = json.dumps(_mutate(VALID, data), allow_nan=True, default=repr)
    how = data.draw(st.sampled_from(["as is", "truncated", "garbage", "binary"]))
    raw = text.encode()
    if how == "truncated":
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    elif how == "garbage":
        raw = raw + data.draw(st.binary(max_size=8))
    elif how == "binary":
        raw = data.draw(st.binary(max_size=64))
    path = tmp_path / "fuzz.json"
    path.write_bytes(raw)
    expect_own_error(load_instance, path, warn=False)


# ---------------------------------------------------------------------------------------------- tells
@pytest.fixture(scope="module")
def tiny() -> Instance:
    return Instance.from_dict(VALID)


def _make(name: str, inst: Instance, seed: int = 0) -> Policy:
    params = get_policy(name).example_params(inst)
    return policy_for(name, inst, delta=0.1, budget=500.0, seed=seed, **params)


def _snapshot(p: Policy) -> str:
    return json.dumps(p.state_dict(), sort_keys=True)


def _valid(v: Any) -> bool:
    """What the Gaussian instance's policies accept: a finite real number (not a bool, not a string)."""
    if isinstance(v, (bool, np.bool_, str, bytes, complex)) or v is None:
        return False
    if isinstance(v, np.ndarray):
        return v.ndim == 0 and v.dtype.kind in "iuf" and math.isfinite(float(v))
    try:
        return math.isfinite(float(v))
    except (TypeError, ValueError, OverflowError):
        return False


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(FINITE), value=weird, seed=st.integers(0, 3))
def test_fuzzed_tell_values_are_accepted_only_when_finite_reals(tiny, name, value, seed):
    p = _make(name, tiny, seed)
    pull = p.ask()
    assume(pull is not None)
    before = _snapshot(p)
    try:
        p.tell(pull, value)
    except Exception as e:  # noqa: BLE001
        assert isinstance(e, PolicyError), f"{type(e).__name__} leaked: {e!r}"
        assert _snapshot(p) == before
        assert not _valid(value) or isinstance(e, PolicyError) and "outside the declared reward range" in str(e)
        if isinstance(value, (str, bool)):
            assert repr(value) in str(e)  # the error names the value
        return
    assert _valid(value), f"{value!r} was accepted"


pull_ids = (
    st.integers(-5, 50)
    | st.builds(Pull, st.integers(-2, 20), st.integers(-2, 5), st.integers(-2, 3))
    | st.builds(Pull, st.sampled_from(["0", None, 1.0, True]), st.integers(0, 2), st.integers(0, 1))
    | json_like
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(FINITE), data=st.data())
def test_fuzzed_pull_ids_double_tells_and_batches(tiny, name, data):
    p = _make(name, tiny, data.draw(st.integers(0, 3)))
    pulls = p.ask_batch(3)
    assume(pulls)
    told = pulls[0]
    p.tell(told, 0.5)
    before = _snapshot(p)
    for _ in range(4):
        what = data.draw(st.sampled_from(["tell", "give_back", "batch", "double", "adopt", "ask_batch"]))
        pid = data.draw(pull_ids)
        try:
            if what == "tell":
                p.tell(pid, 0.5)
            elif what == "give_back":
                p.give_back(pid)
            elif what == "double":
                p.tell(told, 0.5)
            elif what == "adopt":
                p.adopt(pid, data.draw(pull_ids))
            elif what == "ask_batch":
                p.ask_batch(pid)
            else:
                p.tell_batch(data.draw(st.lists(pull_ids, max_size=3) | json_like), data.draw(json_like))
        except Exception as e:  # noqa: BLE001
            if what in ("adopt", "ask_batch"):  # argument checks: ValueError naming the argument
                assert own_error(e), f"{what}({pid!r}) leaked {type(e).__name__}: {e!r}"
            else:
                assert isinstance(e, PolicyError), f"{what}({pid!r}) leaked {type(e).__name__}: {e!r}"
            assert _snapshot(p) == before
            continue
        # accepted: it must have been an outstanding pull (then the state moves on)
        before = _snapshot(p)


# ---------------------------------------------------------------------------------------------- states
@pytest.fixture(scope="module")
def saved(tiny) -> dict[str, dict]:
    out = {}
    rng = np.random.default_rng(0)
    for name in FINITE:
        p = _make(name, tiny, 1)
        for _ in range(6):
            pull = p.ask()
            if pull is None:
                break
            p.tell(pull, float(np.clip(tiny.sample(np.array([pull.arm]), np.array([pull.fidelity]), rng)[0], 0, 1)))
        p.ask()  # leave one pull outstanding
        out[name] = p.state_dict()
    return out


def _mutate_arrays(state: dict, data: st.DataObject) -> dict:
    """Replace saved arrays by well-formed arrays of another shape, dtype or content."""
    from mf_sched._serialize import encode

    doc = copy.deepcopy(state)
    paths = [p for p in _paths(doc) if p and p[-1] == "__ndarray__"]
    for path in data.draw(st.lists(st.sampled_from(paths), min_size=1, max_size=2)):
        parent = doc
        for k in path[:-2]:
            parent = parent[k]
        shape = tuple(data.draw(st.lists(st.integers(0, 4), max_size=3)))
        dtype = data.draw(st.sampled_from(["float64", "int64", "bool", parent[path[-2]]["__ndarray__"]["dtype"]]))
        fill = data.draw(st.sampled_from([0, 1, -1, 7, np.nan, np.inf, 1e300]))
        with np.errstate(invalid="ignore"):
            arr = (
                np.full(shape, fill).astype(dtype)
                if not (dtype != "float64" and not np.isfinite(fill))
                else np.zeros(shape, dtype)
            )
        parent[path[-2]] = encode(arr)
    return doc


def _mutate_numbers(state: dict, data: st.DataObject) -> dict:
    """Change plain numbers of the saved state (counters, costs, ids) to other numbers or types."""
    doc = copy.deepcopy(state)
    paths = [p for p in _paths(doc) if p and isinstance(_get(doc, p), (int, float)) and "rng" not in p]
    for path in data.draw(st.lists(st.sampled_from(paths), min_size=1, max_size=3)):
        parent = _get(doc, path[:-1])
        old = parent[path[-1]]
        if isinstance(old, bool) or not isinstance(old, (int, float)):
            continue  # changed by an earlier draw
        parent[path[-1]] = data.draw(
            st.sampled_from([-1, 0, old + 1, old * 2, -old, 10**6, 0.5, True, None, "1", [old]])
        )
    return doc


def _get(doc: Any, path: tuple) -> Any:
    for k in path:
        doc = doc[k]
    return doc


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(FINITE), data=st.data())
def test_fuzzed_states_load_exactly_or_fail_with_state_format_error(tiny, saved, name, data):
    state = saved[name]
    how = data.draw(st.sampled_from(["mutate", "arrays", "numbers", "truncate", "other policy", "rename"]))
    if how == "mutate":
        bad: Any = _mutate(state, data)
    elif how == "arrays":
        bad = _mutate_arrays(state, data)
    elif how == "numbers":
        bad = _mutate_numbers(state, data)
    elif how == "truncate":
        text = json.dumps(state)
        cut = text[: data.draw(st.integers(0, len(text) - 1))]
        try:
            bad = json.loads(cut)
        except json.JSONDecodeError:
            return  # not JSON any more: the caller's json.load reports it
    elif how == "other policy":
        bad = saved[data.draw(st.sampled_from(FINITE))]
    else:
        bad = dict(state, policy=data.draw(st.sampled_from([*FINITE, "nope", 3, None])))
    target = _make(name, tiny, 1)
    before = _snapshot(target)
    try:
        target.load_state_dict(bad)
    except Exception as e:  # noqa: BLE001
        assert isinstance(e, StateFormatError), f"load_state_dict leaked {type(e).__name__}: {e!r}"
        assert _snapshot(target) == before
    try:
        q = Policy.from_state_dict(bad)
    except Exception as e:  # noqa: BLE001
        assert isinstance(e, StateFormatError), f"from_state_dict leaked {type(e).__name__}: {e!r}"
        return
    # a state that loads is a working policy: it runs on
    q.describe()
    q.recommendation()
    for pull in list(q.outstanding):
        q.tell(pull, 0.5)
    for _ in range(30):
        pull = q.ask()
        if pull is None:
            break
        q.tell(pull, 0.5)
    q.recommendation()


def test_from_state_dict_wrong_name_or_missing_rng_is_a_state_format_error(saved):
    """Defect 9: a wrong policy name gave ValueError('unknown policy'), a missing rng a KeyError."""
    state = saved["se"]
    with pytest.raises(StateFormatError, match="not registered"):
        Policy.from_state_dict(dict(state, policy="no-such-policy"))
    with pytest.raises(StateFormatError, match="rng"):
        Policy.from_state_dict({k: v for k, v in state.items() if k != "rng"})
    with pytest.raises(StateFormatError, match="config"):
        Policy.from_state_dict({k: v for k, v in state.items() if k != "config"})
    with pytest.raises(StateFormatError, match="cannot build policy 'se'"):
        Policy.from_state_dict(dict(saved["lucb1"], policy="se"))  # lucb1's configuration
    with pytest.raises(StateFormatError, match="policy 'lucb1', not 'se'"):
        get_policy("se")(n_arms=3, ladder=FidelityLadder([1.0, 10.0], [0.15, 0.0])).load_state_dict(saved["lucb1"])


def test_tell_rejects_strings_bools_and_names_the_value(tiny):
    """Defect 9: ``tell(pull, "0.5")`` and ``tell(pull, True)`` were accepted."""
    p = _make("se", tiny)
    pull, other = p.ask(), p.ask()
    before = _snapshot(p)
    for v in ("0.5", True, np.bool_(False), None, [0.5], np.array([0.5]), 1j):
        with pytest.raises(PolicyError, match="real number"):
            p.tell(pull, v)
    with pytest.raises(PolicyError, match=r"values\[1\] must be a real number, got True"):
        p.tell_batch([pull, other], [0.5, True])
    assert _snapshot(p) == before
    p.tell(pull, np.float32(0.5))  # numpy numbers are numbers


# ---------------------------------------------------------------------------------------------- parameters
def _params(name: str) -> list[str]:
    import inspect

    sig = inspect.signature(get_policy(name).__init__)
    return [p for p in sig.parameters if p not in ("self", "n_arms", "ladder", "noise", "kwargs")]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(FINITE), data=st.data())
def test_fuzzed_policy_parameters_build_or_name_the_problem(tiny, name, data):
    """``--param KEY=VALUE`` values of any JSON type: a policy, or a ValueError (``epsilon=abc`` used to be a
    bare conversion error, a list a TypeError)."""
    key = data.draw(st.sampled_from(_params(name)))
    value = data.draw(json_like)
    params = dict(get_policy(name).example_params(tiny))
    params[key] = value
    problem = tiny.problem(delta=0.1, budget=500.0, seed=0)
    from mf_sched.registry import build_policy

    p = expect_own_error(build_policy, name, problem, **params)
    if p is not None:
        for _ in range(3):
            pull = p.ask()
            if pull is None:
                break
            p.tell(pull, 0.5)
