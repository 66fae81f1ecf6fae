"""benchmarks._common: what the benchmark scripts share (seeding, process pools, JSON, figures, tables)."""

from __future__ import annotations

import argparse
import doctest
import json

import numpy as np
import pytest

from benchmarks import _common
from benchmarks._common import cost_columns, meta, print_table, run_jobs, save_figure, seeds, write_json
from mf_sched import FidelityLadder, Instance, run_many


def test_docstring_examples():
    res = doctest.testmod(_common, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.attempted > 0 and res.failed == 0


def test_print_table_aligns_headers_to_the_specs_and_prints_none_as_a_dash(capsys):
    print_table([("name", "<6"), ("x", ">8.2f"), ("n", ">4d")], [("a", 1.5, 3), ("long", None, None)], rule=True)
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["name          x    n", "-" * 20, "a          1.50    3", "long          -    -"]


def test_print_table_refuses_rows_of_the_wrong_length():
    with pytest.raises(ValueError):
        print_table([("a", ">3"), ("b", ">3")], [(1,)])


def test_write_json_converts_numpy_and_creates_folders(tmp_path, capsys):
    path = tmp_path / "deep" / "r.json"
    write_json(path, {"a": np.arange(3), "b": np.float64(0.5), "p": tmp_path, "m": meta(argparse.Namespace(k=2))})
    d = json.loads(path.read_text())
    assert d["a"] == [0, 1, 2] and d["b"] == 0.5 and d["p"] == str(tmp_path)
    assert d["m"]["args"] == {"k": 2} and d["m"]["numpy"] == np.__version__
    assert capsys.readouterr().out.strip() == f"wrote {path}"
    assert meta(K=3)["K"] == 3 and "args" not in meta()


def test_seeds_depend_on_the_keys_only():
    r1, p1, o1 = seeds(7, 1, 2)
    r2, p2, o2 = seeds(7, 1, 2)
    assert (p1, o1) == (p2, o2) and r1.random() == r2.random()
    assert seeds(7, 2, 1)[1:] != (p1, o1) and p1 != o1


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_run_jobs_keeps_the_order_in_and_out_of_processes(n_jobs):
    assert run_jobs(abs, [-3, 1, -2, 5], n_jobs, "abs", progress=False) == [3, 1, 2, 5]


def test_save_figure_writes_a_png(tmp_path, capsys):
    plt = _common.pyplot()
    if plt is None:
        pytest.skip("matplotlib is not installed")
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    save_figure(fig, tmp_path / "f.png")
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"
    assert not plt.fignum_exists(fig.number)  # closed
    assert capsys.readouterr().out.strip() == f"wrote {tmp_path / 'f.png'}"


def test_cost_columns_of_a_run_many_summary():
    ladder = FidelityLadder([1.0, 3.0], [0.2, 0.0])
    inst = Instance([[0.3, 0.4], [0.6, 0.8]], ladder, {"kind": "gaussian", "sigma": 0.1})
    s = run_many("se", inst, runs=3, seed=0, progress=False)
    d = cost_columns(s)
    assert list(d) == ["runs", "cost_mean", "cost_ci95", "cost_std", "error_rate", "certified_rate",
                       "pulls_per_fidelity"]  # fmt: skip
    assert d["runs"] == 3 and d["cost_mean"] == pytest.approx(s.cost_mean) and len(d["pulls_per_fidelity"]) == 2
