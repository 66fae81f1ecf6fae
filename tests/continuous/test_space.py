"""SearchSpace: the unit-cube encoding of floats, integers and categoricals used by the GP policies."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mf_sched.continuous.space import Categorical, Float, Int, SearchSpace


def mixed() -> SearchSpace:
    return SearchSpace(
        [
            Float("lr", 1e-5, 1e-1, log=True),
            Float("mom", 0.0, 0.99),
            Int("layers", 1, 8),
            Int("width", 16, 1024, log=True),
            Categorical("act", ["relu", "tanh", "gelu"]),
            Categorical("flag", [True, False, None, 3]),
        ]
    )


def test_dimension_count_and_masks():
    s = mixed()
    assert s.dim == 1 + 1 + 1 + 1 + 3 + 4
    assert s.continuous.tolist() == [True, True] + [False] * 9
    assert not s.numeric and SearchSpace.box([0], [1]).numeric


def test_encode_decode_roundtrip_every_integer_and_choice():
    s = mixed()
    for layers in range(1, 9):
        for width in (16, 17, 100, 1023, 1024):
            for act in ("relu", "tanh", "gelu"):
                p = {"lr": 3e-3, "mom": 0.5, "layers": layers, "width": width, "act": act, "flag": None}
                z = s.encode(p)
                assert np.all((z >= 0) & (z <= 1))
                q = s.decode(z)
                assert q["layers"] == layers and q["width"] == width and q["act"] == act and q["flag"] is None
                assert math.isclose(q["lr"], 3e-3, rel_tol=1e-12) and math.isclose(q["mom"], 0.5)
                np.testing.assert_array_equal(s.snap(z), z)  # encodings are canonical


def test_integer_bins_have_equal_width_and_cover_the_cube():
    d = Int("k", 1, 4)
    us = np.linspace(0, 1, 4001)
    vals = np.array([d.decode_value(u) for u in us])
    counts = np.bincount(vals, minlength=5)[1:]
    assert counts.min() >= 999 and counts.max() <= 1001
    assert d.decode_value(1.0) == 4 and d.decode_value(0.0) == 1
    lg = Int("w", 1, 1000, log=True)
    assert lg.decode_value(0.5) == round(math.sqrt(0.5 * 1000.5))


def test_snap_is_vectorised_idempotent_and_matches_decode():
    s = mixed()
    Z = np.random.default_rng(0).random((500, s.dim))
    S = s.snap(Z)
    np.testing.assert_array_equal(s.snap(S), S)
    for z, w in zip(Z[:50], S[:50]):
        assert s.decode(z) == s.decode(w)
        e = s.encode(s.decode(z))
        np.testing.assert_array_equal(w[~s.continuous], e[~s.continuous])  # bin centres, exact one-hot
        np.testing.assert_allclose(w[s.continuous], e[s.continuous], rtol=1e-12)  # floats: exp/log round-off
    np.testing.assert_array_equal(S[:, s.continuous], Z[:, s.continuous])


def test_categorical_ties_and_types_are_kept_apart():
    c = Categorical("c", [1, True, "1"])
    assert c.decode_value([0.5, 0.5, 0.1]) == 1 and type(c.decode_value([0.5, 0.5, 0.1])) is int
    assert c.index(True) == 1 and c.index("1") == 2
    with pytest.raises(ValueError, match="not one of its choices"):
        c.index(2)


def test_dict_roundtrip_is_json_safe():
    s = mixed()
    d = json.loads(json.dumps(s.to_dict()))
    assert SearchSpace.from_dict(d) == s


@pytest.mark.parametrize(
    "build, msg",
    [
        (lambda: Float("x", 1.0, 1.0), "high = 1.0 must be greater than low = 1.0"),
        (lambda: Float("x", 0.0, 1.0, log=True), "must be > 0 on a log scale"),
        (lambda: Int("k", 0, 3, log=True), "must be >= 1 on a log scale"),
        (lambda: Int("k", 1.5, 3), "low must be an integer"),
        (lambda: Categorical("c", []), "must not be empty"),
        (lambda: Categorical("c", ["a", "a"]), "distinct"),
        (lambda: Categorical("c", [[1]]), "JSON-safe scalar"),
        (lambda: SearchSpace([Float("x", 0, 1), Int("x", 0, 1)]), "repeated: \\['x'\\]"),
        (lambda: SearchSpace([]), "at least one dimension"),
    ],
)
def test_invalid_dimensions_name_the_problem(build, msg):
    with pytest.raises(ValueError, match=msg):
        build()


def test_encode_rejects_bad_params_and_decode_bad_points():
    s = SearchSpace([Float("x", 0, 1), Int("k", 1, 3)])
    with pytest.raises(ValueError, match=r"missing \['k'\], unknown \['y'\]"):
        s.encode({"x": 0.5, "y": 1})
    with pytest.raises(ValueError, match=r"x = 2.0 is outside its range \[0.0, 1.0\]"):
        s.encode({"x": 2.0, "k": 1})
    with pytest.raises(ValueError, match="k = 2.5 must be an integer"):
        s.encode({"x": 0.5, "k": 2.5})
    with pytest.raises(ValueError, match="unit cube"):
        s.decode([0.5, 1.5])
    with pytest.raises(ValueError, match="2 coordinates"):
        s.snap([0.5])
