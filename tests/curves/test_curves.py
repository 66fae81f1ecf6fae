"""The learning-curve table: construction, validation, file formats, reading at rungs."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from mf_sched.curves import LearningCurves, parse_fidelities


def table(**kw):
    base = dict(config=[0, 0, 0, 1, 1, 1], fidelity=[1, 2, 4, 1, 2, 4], metric=[0.5, 0.6, 0.8, 0.4, 0.5, 0.55])
    base.update(kw)
    return LearningCurves(**base)


def test_rows_are_sorted_and_coded_in_first_appearance_order():
    c = LearningCurves(config=["b", "a", "b", "a"], fidelity=[2, 1, 1, 2], metric=[4.0, 1.0, 3.0, 2.0])
    assert c.config_labels == ("b", "a")
    assert c.config.tolist() == [0, 0, 1, 1] and c.fidelity.tolist() == [1, 2, 1, 2]
    assert c.metric.tolist() == [3.0, 4.0, 1.0, 2.0]
    assert not c.metric.flags.writeable


def test_same_config_id_in_two_tasks_is_two_configurations():
    c = LearningCurves(config=[0, 0], fidelity=[1, 1], metric=[0.1, 0.2], task=["x", "y"])
    assert c.n_configs == 2 and c.config_key(1) == ("y", 0)


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(metric=[0.5, np.nan, 0.8, 0.4, 0.5, 0.55]), r"metric\[1\] = nan is not finite .*nonfinite='drop'"),
        (dict(fidelity=[1, 2, -4, 1, 2, 4]), r"fidelity\[2\] = -4.0 is out of range"),
        (dict(fidelity=[1, 2, 2, 1, 2, 4]), "duplicate observation: configuration 0, seed 0, fidelity 2"),
        (dict(config=[0, 0, None, 1, 1, 1]), r"config\[2\] is missing"),
        (dict(config=[0, 0, True, 1, 1, 1]), r"config\[2\] = True must be a string or a number"),
        (dict(metric=[0.5, "0.6", "x", 0.4, 0.5, 0.55]), r"metric\[2\] = 'x' is not a number"),
        (dict(metric=[0.5, True, 0.8, 0.4, 0.5, 0.55]), r"metric\[1\] = True must be a number"),
        (dict(cost=[1, 2, -1, 1, 2, 3]), r"cost\[2\] = -1.0 is out of range"),
        (dict(mode="maximize"), "mode = 'maximize' is unknown"),
        (dict(seed=[0, 0]), "column 'seed' has 2 values but there are 6 rows"),
        (dict(params={7: {"lr": 1}}), "params names configurations that have no rows"),
    ],
)
def test_bad_tables_are_rejected_with_the_row(kw, message):
    with pytest.raises(ValueError, match=message):
        table(**kw)


def test_nonfinite_rows_can_be_dropped_and_are_counted():
    c = table(metric=[0.5, np.nan, 0.8, 0.4, np.inf, 0.55], nonfinite="drop")
    assert c.n_rows == 4 and c.n_dropped == 2
    with pytest.raises(ValueError, match="every metric value is non-finite"):
        table(metric=[np.nan] * 6, nonfinite="drop")


def test_score_orientation_and_bias_sign():
    loss = LearningCurves(config=[0, 0, 0], fidelity=[1, 2, 4], metric=[0.9, 0.5, 0.3], mode="min")
    assert loss.score.tolist() == [-0.9, -0.5, -0.3]
    bias = loss.values_at([1, 2, 4]).bias()[0]
    assert np.allclose(bias, [-0.6, -0.2, 0.0])  # a loss curve underestimates the final score


def test_values_at_previous_interpolate_exact_and_reached():
    c = LearningCurves(config=[0, 0, 0, 1, 1], fidelity=[1, 2, 4, 1, 3], metric=[1.0, 2.0, 4.0, 10.0, 30.0])
    prev = c.values_at([1, 3, 4]).metric[:, 0, :]
    assert prev[0].tolist() == [1.0, 2.0, 4.0]
    assert prev[1, :2].tolist() == [10.0, 30.0] and np.isnan(prev[1, 2])  # run 1 never reached 4
    interp = c.values_at([1, 3, 4], how="interpolate").metric[:, 0, :]
    assert interp[0].tolist() == [1.0, 3.0, 4.0]
    exact = c.values_at([1, 3, 4], how="exact").metric[:, 0, :]
    assert np.isnan(exact[0, 1]) and exact[1, 1] == 30.0
    # with tolerance 0.3 a run stopping at 3 counts as having reached 4 (its last value is used)
    tol = c.values_at([1, 3, 4], tolerance=0.3).metric[:, 0, :]
    assert tol[1, 2] == 30.0
    with pytest.raises(ValueError, match="how = 'nearest' is unknown"):
        c.values_at([1, 2], how="nearest")
    with pytest.raises(ValueError, match="rungs must be strictly increasing"):
        c.values_at([2, 1])


def test_values_at_cost_and_seeds_paired_bias():
    # two seeds; seed 1 lacks the top rung: the bias uses the seeds that have both rungs (paired)
    c = LearningCurves(
        config=[0, 0, 0, 0],
        seed=[0, 0, 1, 1],
        fidelity=[1, 2, 1, 1.5],
        metric=[0.2, 0.6, 0.5, 0.7],
        cost=[10, 20, 11, 15],
    )
    rv = c.values_at([1, 2])
    assert rv.metric.shape == (1, 2, 2)
    assert np.isnan(rv.metric[0, 1, 1])
    assert np.allclose(rv.bias(), [[-0.4, 0.0]])
    assert rv.cost[0, :, 0].tolist() == [10.0, 11.0]
    assert np.allclose(rv.means(), [[0.35, 0.6]])


def test_select_and_to_fraction():
    c = LearningCurves(
        config=[0, 0, 1, 1, 2, 2],
        fidelity=[50, 100, 10, 20, 5, 10],
        metric=np.arange(6.0),
        task=["a", "a", "a", "a", "b", "b"],
    )
    assert c.select(tasks=["b"]).n_configs == 1
    with pytest.raises(ValueError, match="unknown task"):
        c.select(tasks=["zzz"])
    f = c.to_fraction()  # config 1 stops at 20 of its task's 100: dropped; task b's only run is its longest
    assert f.n_configs == 2 and f.fidelities.tolist() == [0.5, 1.0]
    assert c.to_fraction(min_length=0).n_configs == 3


def test_csv_long_round_trip_and_gzip(tmp_path):
    c = table(cost=[1, 2, 4, 1, 2, 4], seed=["s1"] * 6, task=["t"] * 6)
    p = tmp_path / "c.csv"
    c.to_csv(p)
    back = LearningCurves.from_csv(p, metric="metric", mode="max", seed="seed", cost="cost", task="task")
    assert back.metric.tolist() == c.metric.tolist() and back.cost.tolist() == c.cost.tolist()
    gz = tmp_path / "c.csv.gz"
    gz.write_bytes(gzip.compress(p.read_bytes()))
    assert LearningCurves.from_csv(gz, metric="metric", mode="max").n_rows == 6
    only = LearningCurves.from_csv(p, metric="metric", mode="max", where={"config": ["1"]})
    assert only.n_configs == 1


def test_csv_list_layout_like_taskset(tmp_path):
    p = tmp_path / "lists.csv"
    p.write_text(
        "task,config,lr,valid_loss\n"
        't1,0,0.1,"[0.9, 0.6, 0.5]"\n'
        't1,1,0.2,"[0.8, NaN, NaN]"\n'
        't2,0,0.1,"[0.7, 0.65, 0.6]"\n'
    )
    c = LearningCurves.from_csv(
        p, metric="valid_loss", mode="min", task="task", layout="list", nonfinite="drop", fidelity="evaluation"
    )
    assert (c.n_configs, c.n_tasks, c.n_rows, c.n_dropped) == (3, 2, 7, 2)
    assert c.fidelities.tolist() == [1.0, 2.0, 3.0]
    c2 = LearningCurves.from_csv(p, metric="valid_loss", mode="min", task="task", layout="list",
                                 list_fidelities=[10, 20, 30], nonfinite="drop")  # fmt: skip
    assert c2.fidelities.tolist() == [10.0, 20.0, 30.0]


@pytest.mark.parametrize(
    "cell, message",
    [
        ("\"__import__('os').system('true')\"", "is not a JSON list"),
        ('"{""a"": 1}"', "must be a non-empty JSON list"),
        ('"[0.5, true]"', r"valid_loss\[1\] in row 0 = True is not a number"),
        ('"[0.5, ""x""]"', r"valid_loss\[1\] in row 0 = 'x' is not a number"),
        ('"[]"', "must be a non-empty JSON list"),
    ],
)
def test_csv_list_cells_are_parsed_as_json_and_validated(tmp_path, cell, message):
    p = tmp_path / "bad.csv"
    p.write_text(f"config,valid_loss\n0,{cell}\n")
    with pytest.raises(ValueError, match=message):
        LearningCurves.from_csv(p, metric="valid_loss", mode="min", layout="list")


def test_csv_errors_name_the_problem(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("config,epoch,acc\n0,1,0.5\n0,2\n")
    with pytest.raises(ValueError, match="line 3: 2 fields, the header has 3"):
        LearningCurves.from_csv(p, metric="acc", mode="max", fidelity="epoch")
    p.write_text("config,epoch,acc\n0,1,0.5\n")
    with pytest.raises(ValueError, match="has no column 'fidelity'"):
        LearningCurves.from_csv(p, metric="acc", mode="max")
    p.write_text("config,epoch,acc\n0,1,1e400\n")
    with pytest.raises(ValueError, match="is not finite"):
        LearningCurves.from_csv(p, metric="acc", mode="max", fidelity="epoch")
    p.write_text("")
    with pytest.raises(ValueError, match="is empty"):
        LearningCurves.from_csv(p, metric="acc", mode="max")
    with pytest.raises(FileNotFoundError):
        LearningCurves.from_csv(tmp_path / "nope.csv", metric="acc", mode="max")


def test_from_records_and_missing_keys():
    recs = [{"trial": t, "step": s, "value": 1.0 / (s + t + 1)} for t in range(3) for s in (1, 2, 3)]
    c = LearningCurves.from_records(recs, metric="value", mode="min", config="trial", fidelity="step")
    assert (c.n_configs, c.fidelity_name, c.metric_name) == (3, "step", "value")
    with pytest.raises(ValueError, match="record 0 has no key 'seed'"):
        LearningCurves.from_records(recs, metric="value", mode="min", config="trial", fidelity="step", seed="seed")


def test_from_dataframe_with_pandas_long_and_lists():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"cfg": ["a", "a", "b", "b"], "ep": [1, 2, 1, 2], "acc": [0.1, 0.2, 0.3, 0.35]})
    c = LearningCurves.from_dataframe(df, metric="acc", mode="max", config="cfg", fidelity="ep")
    assert c.n_configs == 2 and c.values_at([1, 2]).bias().round(3).tolist() == [[-0.1, 0.0], [-0.05, 0.0]]
    wide = pd.DataFrame({"cfg": ["a", "b"], "curve": [json.dumps([0.1, 0.2]), [0.3, 0.35]]})
    c2 = LearningCurves.from_dataframe(wide, metric="curve", mode="max", config="cfg", layout="list")
    assert c2.n_rows == 4
    with pytest.raises(ValueError, match="has no column 'loss'"):
        LearningCurves.from_dataframe(df, metric="loss", mode="min", config="cfg", fidelity="ep")


def test_parse_fidelities():
    assert parse_fidelities("1,3,9").tolist() == [1.0, 3.0, 9.0]
    for bad, msg in [("1,,3", "comma-separated"), ("1,x", r"fidelities\[1\] = 'x' is not a number"), ("0,1", "> 0")]:
        with pytest.raises(ValueError, match=msg):
            parse_fidelities(bad)


def test_from_dataframe_list_layout_on_a_duck_typed_frame_with_curves_of_different_lengths():
    """A dict-based frame whose list cells differ in length raised numpy's "inhomogeneous shape" error."""

    class Frame(dict):
        columns = property(lambda self: list(self))

    frame = Frame(cfg=["a", "b", "c"], curve=[[0.1, 0.2, 0.3], [0.3], [0.2, 0.25]])
    c = LearningCurves.from_dataframe(frame, metric="curve", mode="max", config="cfg", layout="list")
    assert c.n_rows == 6 and c.n_configs == 3
    same = Frame(cfg=["a", "b"], curve=[[0.1, 0.2], [0.3, 0.35]])  # equal lengths: as before
    assert LearningCurves.from_dataframe(same, metric="curve", mode="max", config="cfg", layout="list").n_rows == 4
