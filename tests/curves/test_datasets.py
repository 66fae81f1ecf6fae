"""Loaders of the learning-curve data sets (TaskSet, DeepOBS, AlgoPerf, LCBench), skipped with the reason when the
data (`MF_SCHED_DATA`) is absent.

Besides shapes and errors, every quantity these tests check (seed counts, ζ̂, σ, costs) is recomputed from the raw
files with the standard library, independently of this package's code.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import statistics
from collections import defaultdict

import numpy as np
import pytest
from conftest import SHARED_DATA

from mf_sched.curves import datasets
from mf_sched.curves.calibration import calibrate, estimate_sigma
from mf_sched.curves.datasets import (
    LCBenchSurrogate,
    load_algoperf,
    load_deepobs,
    load_lcbench,
    load_source,
    load_taskset,
)

FRACTIONS = [0.1, 0.25, 0.5, 0.75, 1.0]


def need(sub: str) -> None:
    if not (SHARED_DATA / sub).exists():
        pytest.skip(f"{SHARED_DATA / sub} is not available (set MF_SCHED_DATA to the shared data folder)")


@pytest.fixture(autouse=True)
def data_env(monkeypatch):
    monkeypatch.setenv(datasets.DATA_ENV, str(SHARED_DATA))


@pytest.fixture(scope="module")
def taskset():
    need("taskset")
    return load_taskset(SHARED_DATA / "taskset" / "taskset_imdb_rnn_valid_loss.csv.gz")


@pytest.fixture(scope="module")
def deepobs():
    need("deepobs")
    return load_deepobs(
        SHARED_DATA / "deepobs" / "deepobs_epoch_curves.csv.gz", problems=["cifar10_3c3d", "fmnist_2c2d"]
    )


@pytest.fixture(scope="module")
def algoperf():
    need("algoperf")
    return load_algoperf(SHARED_DATA / "algoperf" / "algoperf_eval_curves.csv.gz")


def test_missing_data_says_where_it_comes_from(tmp_path, monkeypatch):
    monkeypatch.setenv(datasets.DATA_ENV, str(tmp_path))
    for loader, origin in [
        (load_taskset, "machinelearningnuremberg/DPL"),
        (load_deepobs, "fsschneider/DeepOBS_Baselines"),
        (load_algoperf, "mlcommons/submissions_algorithms"),
        (LCBenchSurrogate, "slds-lmu/yahpo_data"),
    ]:
        with pytest.raises(FileNotFoundError, match=origin) as e:
            loader()
        assert str(tmp_path) in str(e.value) and "MF_SCHED_DATA" in str(e.value)
    with pytest.raises(FileNotFoundError, match="DPL"):
        load_taskset(tmp_path / "elsewhere.csv.gz")


def test_taskset_shape_and_divergence(taskset):
    assert (taskset.n_tasks, taskset.n_configs, taskset.n_seeds) == (12, 12000, 1)
    assert taskset.fidelities.tolist() == list(range(1, 52)) and taskset.mode == "min"
    assert taskset.n_dropped == 43802  # the NaN tails of 917 diverged runs
    assert set(taskset.params[0]) == {
        "learning_rate", "beta1", "beta2", "epsilon", "l1", "l2", "linear_decay", "exponential_decay"
    }  # fmt: skip
    one = load_taskset(tasks=[taskset.task_labels[0]], params=False)
    assert one.n_configs == 1000 and one.params is None


def _taskset_gaps_from_the_file(path) -> dict[float, np.ndarray]:
    """|loss(fraction f) − loss(end)| per run, recomputed from the CSV with the standard library: each row's
    ``valid_loss`` is a JSON list of 51 epochs, NaN after a divergence; a run counts when it has at least 90% of
    the 51 epochs (``to_fraction``'s rule), and its value at fraction ``f`` is that of epoch ``⌊f·n⌋`` of its
    ``n`` finite epochs (the last epoch at or before ``f``: ``how="previous"``)."""
    gaps: dict[float, list[float]] = {f: [] for f in FRACTIONS[:4]}
    with gzip.open(path, "rt") as fh:
        for row in csv.DictReader(fh):
            vals = json.loads(row["valid_loss"])
            n = next((i for i, x in enumerate(vals) if not math.isfinite(x)), len(vals))
            if n < 0.9 * 51:
                continue
            for f in gaps:
                gaps[f].append(abs(vals[math.floor(f * n + 1e-9) - 1] - vals[n - 1]))
    return {f: np.asarray(g) for f, g in gaps.items()}


def test_taskset_typical_bias_matches_a_recomputation_from_the_file(taskset):
    """ζ̂ (the point quantile) is the 0.9 inverted-CDF quantile (the order statistic of rank ⌈0.9 n⌉) of the
    gaps recomputed from the raw file without this package: equal to rounding (``atol=1e-9``). The number of runs
    kept (11,086 of 12,000) is the same; the median gap stays below 0.003 (0.0020 at 10% of the run, recomputed)."""
    cal = calibrate(taskset.to_fraction(), FRACTIONS, quantile=0.9, holdout=None)
    gaps = _taskset_gaps_from_the_file(SHARED_DATA / "taskset" / "taskset_imdb_rnn_valid_loss.csv.gz")
    assert cal.n_configs[:4].tolist() == [len(g) for g in gaps.values()] == [11086] * 4
    truth = [np.quantile(g, 0.9, method="inverted_cdf") for g in gaps.values()]
    assert np.allclose(cal.zeta_point[:4], truth, rtol=0, atol=1e-9)
    assert np.allclose(cal.gap_median[:4], [np.median(g) for g in gaps.values()], rtol=0, atol=1e-9)
    assert np.all(cal.gap_median[:4] < 0.003)


# ------------------------------------------------------------------------------------------ raw-file recomputation
# The checks below recompute what the loaders, `to_fraction`, `values_at(how="previous")`, `calibrate` and
# `estimate_sigma` return from the raw CSV files with the standard library only (csv, gzip, json, statistics),
# following the documented definitions rather than this package's code:
#   - a run is one (configuration, seed); a run is kept when its last fidelity is > 0 and at least 0.9 times the
#     longest run of its task (`to_fraction`'s rule); its value at fraction f is its last report at a fidelity
#     x with x / last <= f (what a pruner at the rung has seen);
#   - a configuration's bias at f is the mean over its kept seeds of score(f) - score(1), score = the metric
#     oriented so that higher is better; ζ̂ (`zeta_point`) is the 0.9 quantile of |bias| by the inverted CDF, i.e.
#     the order statistic of rank ⌈0.9 n⌉;
#   - σ at a fraction is the seed standard deviation (n - 1 in the denominator) of the configurations with two
#     seeds or more: pooled with their degrees of freedom, or their median.
# The two sides sum the same numbers in different orders: for values of magnitude ≤ 1 (accuracies) the results
# agree to a few ulps, hence atol=1e-12; costs (seconds, up to ~1e5) are medians of the very same numbers, exact
# up to the mean of the two middle values, hence rtol=1e-12.


def _runs_from_csv(path, *, keep, config, seed, fidelity, metric, cost=None) -> dict[tuple, list[tuple]]:
    """{(configuration, seed): [(fidelity, value, cost), ...]} of the rows `keep(row)` accepts that have a finite
    metric, read with the standard library."""
    runs: dict[tuple, list[tuple]] = defaultdict(list)
    with gzip.open(path, "rt", newline="") as fh:
        for row in csv.DictReader(fh):
            if not keep(row) or not row[metric]:
                continue
            v = float(row[metric])
            if math.isfinite(v):
                c = float(row[cost]) if cost else math.nan
                runs[config(row), seed(row)].append((float(row[fidelity]), v, c))
    return runs


def _at_fractions(runs, task_of=lambda config: 0) -> dict[tuple, list[tuple | None]]:
    """Each kept run's (value, cost) at every fraction of FRACTIONS (None where it has no report at or before)."""
    longest: dict = defaultdict(float)
    for (cfg, _), pts in runs.items():
        longest[task_of(cfg)] = max(longest[task_of(cfg)], max(x for x, _, _ in pts))
    out = {}
    for (cfg, s), pts in runs.items():
        pts = sorted(pts)
        last = pts[-1][0]
        if last > 0 and last >= 0.9 * longest[task_of(cfg)]:
            out[cfg, s] = [
                next(((v, c) for x, v, c in reversed(pts) if x / last <= f * (1 + 1e-9)), None) for f in FRACTIONS
            ]
    return out


def _gap_quantiles(at, sign: int, q: float = 0.9) -> tuple[list[float], list[int]]:
    """ζ̂ per fraction (all but the last) and the number of configurations it was taken over."""
    by_config: dict = defaultdict(list)
    for (cfg, _), vals in at.items():
        by_config[cfg].append(vals)
    zeta, n = [], []
    for j in range(len(FRACTIONS) - 1):
        gaps = []
        for runs in by_config.values():
            d = [sign * (r[j][0] - r[-1][0]) for r in runs if r[j] is not None]
            if d:
                gaps.append(abs(sum(d) / len(d)))
        gaps.sort()
        zeta.append(gaps[math.ceil(q * len(gaps)) - 1])
        n.append(len(gaps))
    return zeta, n


def _seed_sds(at, j: int) -> list[tuple[int, float]]:
    """(seeds, standard deviation) at fraction index j of every configuration with two seeds or more."""
    by_config: dict = defaultdict(list)
    for (cfg, _), vals in at.items():
        if vals[j] is not None:
            by_config[cfg].append(vals[j][0])
    return [(len(v), statistics.stdev(v)) for v in by_config.values() if len(v) >= 2]


def _deepobs_config(row) -> tuple[str, str, str]:
    # DeepOBS_Baselines writes the best learning rate of the seed runs with fewer digits than the same grid point
    # in the grid search ('0.00039810717055' vs '0.000398107170553497'); grid points are 1/6 decade apart, so 9
    # significant digits identify a point.
    return row["problem"], row["optimizer"], f"{float(row['lr']):.9g}"


def test_deepobs_seeds_and_bias_match_a_recomputation_from_the_file(deepobs):
    path = SHARED_DATA / "deepobs" / "deepobs_epoch_curves.csv.gz"
    runs = _runs_from_csv(
        path,
        keep=lambda r: r["problem"] in ("cifar10_3c3d", "fmnist_2c2d"),
        config=_deepobs_config,
        seed=lambda r: r["seed"],
        fidelity="epoch",
        metric="test_acc",
    )
    seeds: dict = defaultdict(set)
    for cfg, s in runs:
        seeds[cfg].add(s)
    # every configuration and its number of seeds: 2 problems x 3 optimizers x 36 learning rates, 10 seeds at the
    # best learning rate of each (problem, optimizer), 1 elsewhere
    assert deepobs.n_tasks == 2 and deepobs.n_configs == len(seeds) == 216
    assert sorted(deepobs.seeds_per_config().tolist()) == sorted(len(s) for s in seeds.values()) == [1] * 210 + [10] * 6
    cifar = deepobs.select(tasks=["cifar10_3c3d"]).to_fraction()
    cal = calibrate(cifar, FRACTIONS, quantile=0.9, holdout=None)
    at = _at_fractions({k: v for k, v in runs.items() if k[0][0] == "cifar10_3c3d"})
    zeta, n = _gap_quantiles(at, sign=+1)
    assert cal.n_configs[:4].tolist() == n == [108] * 4
    assert np.allclose(cal.zeta_point[:4], zeta, rtol=0, atol=1e-12)
    sds = _seed_sds(at, len(FRACTIONS) - 1)
    pooled = math.sqrt(sum((k - 1) * sd**2 for k, sd in sds) / sum(k - 1 for k, _ in sds))
    sig = estimate_sigma(cifar.values_at(FRACTIONS))
    assert sig["n_configs"][-1] == len(sds) == 3 and sig["pooled"][-1] == pytest.approx(pooled, rel=0, abs=1e-12)
    with pytest.raises(ValueError, match="report losses only"):
        load_deepobs(problems="mnist_vae", metric="test_acc")
    with pytest.raises(ValueError, match="metric = 'acc' is unknown"):
        load_deepobs(metric="acc")


def test_algoperf_studies_seeds_costs_and_bias_match_a_recomputation_from_the_file(algoperf):
    assert algoperf.task_labels == ("imagenet_resnet_jax",) and algoperf.mode == "max"
    assert algoperf.has_cost and algoperf.seed_labels[:2] == ("study_0", "study_1")
    runs = _runs_from_csv(
        SHARED_DATA / "algoperf" / "algoperf_eval_curves.csv.gz",
        keep=lambda r: r["workload"] == "imagenet_resnet_jax" and r["ruleset"] == "external_tuning",
        config=lambda r: f"{r['version']}/{r['ruleset']}/{r['submission']}/{r['trial']}",
        seed=lambda r: r["study"],
        fidelity="global_step",
        metric="validation/accuracy",
        cost="score",
    )
    seeds: dict = defaultdict(set)
    for cfg, s in runs:
        seeds[cfg].add(s)
    assert sorted(algoperf.config_labels) == sorted(seeds)
    spc = dict(zip(algoperf.config_labels, algoperf.seeds_per_config().tolist()))
    assert spc == {cfg: len(s) for cfg, s in seeds.items()}
    assert sum(k == 5 for k in spc.values()) == 25  # of 30 configurations: 5 studies each, bar a few
    frac = algoperf.to_fraction()
    at = _at_fractions(runs)
    sig = estimate_sigma(frac.values_at(FRACTIONS))
    sds = _seed_sds(at, len(FRACTIONS) - 1)
    assert sig["n_configs"][-1] == len(sds) == 21
    assert sig["median"][-1] == pytest.approx(statistics.median(sd for _, sd in sds), rel=0, abs=1e-12)
    cal = calibrate(frac, FRACTIONS, quantile=0.9, holdout=None)
    # λ(f): the median elapsed submission time (`score`) of the kept runs at each fraction
    costs = [statistics.median(r[j][1] for r in at.values() if r[j] is not None) for j in range(len(FRACTIONS))]
    assert cal.cost_source == "time" and np.allclose(cal.costs, costs, rtol=1e-12, atol=0)
    zeta, n = _gap_quantiles(at, sign=+1)
    assert cal.n_configs[:4].tolist() == n == [22] * 4
    assert np.allclose(cal.zeta_point[:4], zeta, rtol=0, atol=1e-12)


def test_algoperf_selection_and_errors():
    need("algoperf")
    wmt = load_algoperf(workloads="wmt_jax", hparams=True)
    assert wmt.metric_name == "validation/bleu" and wmt.mode == "max"
    assert all(isinstance(p, dict) and p for p in wmt.params)  # every trial's hyperparameters, by (workload, trial)
    amos = wmt.params[wmt.config_labels.index("algoperf_v05/external_tuning/amos/trial_1")]
    assert amos["optimizer"] == "amos" and amos["beta1"] == 0.9
    libri = load_algoperf(workloads="librispeech_deepspeech_jax", ruleset=None, hparams=True)
    assert libri.mode == "min" and libri.metric_name == "validation/wer"
    # both rulesets: the self-tuning baseline is another configuration than the external-tuning one
    base = [
        k for k, lab in enumerate(libri.config_labels) if lab.startswith("algoperf_v05/") and "/baseline/trial_1" in lab
    ]
    assert len(base) == 2 and {libri.config_labels[k].split("/")[1] for k in base} == {"external_tuning", "self_tuning"}
    assert libri.params[[k for k in base if "self_tuning" in libri.config_labels[k]][0]] == {}
    with pytest.raises(ValueError, match="no default metric for workload"):
        load_algoperf(workloads="mnist_jax")
    with pytest.raises(ValueError, match="unknown AlgoPerf workload"):
        load_algoperf(workloads="mnist_jax", metric="validation/accuracy")
    with pytest.raises(ValueError, match="no common default metric"):
        load_algoperf(workloads=["wmt_jax", "ogbg_jax"])


def test_lcbench_surrogate_batches_match_single_queries():
    need("lcbench")
    pytest.importorskip("onnxruntime")
    sur = LCBenchSurrogate()
    assert len(sur.tasks) == 34 and "3945" in sur.tasks
    cfg = sur.sample(7, np.random.default_rng(0))
    for name, h in sur.space.items():
        assert np.all((cfg[name] >= h["lower"]) & (cfg[name] <= h["upper"]))
    out = sur.predict(cfg, task="3945", epochs=[1, 10, 52])
    assert out["val_accuracy"].shape == (7, 3)
    assert np.all((out["val_accuracy"] > 0) & (out["val_accuracy"] <= 1))
    assert np.all(np.diff(out["time"], axis=1) > 0)  # cumulative time
    one = sur.predict([{k: float(v[3]) for k, v in cfg.items()}], task="3945", epochs=[10])
    assert one["val_accuracy"][0, 0] == pytest.approx(out["val_accuracy"][3, 1], rel=1e-5)
    with pytest.raises(ValueError, match=r"learning_rate\[0\] = 5.0 is out of range"):
        sur.predict({**{k: v[:1] for k, v in cfg.items()}, "learning_rate": [5.0]}, task="3945")
    with pytest.raises(ValueError, match="task '1' is unknown"):
        sur.predict(cfg, task="1")


def test_lcbench_curves_match_the_onnx_model_queried_directly():
    """The curves are the model's outputs for the configurations they name, queried here with onnxruntime alone
    from the model's documented input layout (x_cont = epoch, batch_size, learning_rate, momentum, weight_decay,
    num_layers, max_units, max_dropout as float32; x_cat = the task's code in encoding.json; output column 1 =
    validation accuracy in percent), and ζ̂ is the order statistic of the gaps of those outputs."""
    need("lcbench")
    ort = pytest.importorskip("onnxruntime")
    folder = SHARED_DATA / "lcbench"
    tasks = ["3945", "7593", "34539", "126025"]
    curves = load_lcbench(tasks=tasks, n_configs=150, seed=1)
    assert curves.n_configs == 600 and curves.has_cost and sorted(curves.task_labels) == sorted(tasks)
    space = {h["name"]: h for h in json.loads((folder / "config_space.json").read_text())["hyperparameters"]}
    code = json.loads((folder / "encoding.json").read_text())["OpenML_task_id"]
    columns = ["batch_size", "learning_rate", "momentum", "weight_decay", "num_layers", "max_units", "max_dropout"]
    for p in curves.params:  # every configuration lies in the search space; integer parameters are integers
        assert set(p) == set(columns)
        for name, x in p.items():
            h = space[name]
            assert h["lower"] <= x <= h["upper"] and (h["type"] != "uniform_int" or x == round(x)), (name, x)
    session = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    epochs = list(range(1, 53))
    ends = [math.floor(f * 52 + 1e-9) for f in FRACTIONS]  # the last epoch at or before each fraction: 5, 13, 26, 39
    gaps: list[list[float]] = [[] for _ in FRACTIONS[:4]]
    worst = 0.0
    for k, p in enumerate(curves.params):
        x_cont = np.asarray([[e] + [p[c] for c in columns] for e in epochs], dtype=np.float32)
        x_cat = np.full((52, 1), code[curves.task_labels[curves.config_task[k]]], dtype=np.int32)
        acc = [float(v) / 100 for v in session.run(None, {"x_cont": x_cont, "x_cat": x_cat})[0][:, 1]]
        rows = curves.config == k
        assert curves.fidelity[rows].tolist() == epochs
        worst = max(worst, float(np.max(np.abs(curves.metric[rows] - acc))))
        for j, e in enumerate(ends[:4]):
            gaps[j].append(abs(acc[e - 1] - acc[51]))
    # A percent near 90 in float32 has an ulp of 7.6e-6 %, 7.6e-8 as a fraction; onnxruntime may change the last
    # bits of a product with the batch size (observed: 0 here), so 1e-6 allows ~13 ulps.
    assert worst <= 1e-6
    cal = calibrate(curves.to_fraction(), FRACTIONS, quantile=0.9, holdout="tasks", repeats=4)
    zeta = [sorted(g)[math.ceil(0.9 * len(g)) - 1] for g in gaps]
    # an order statistic moves at most as far as its inputs (1-Lipschitz in the sup norm); a gap is the difference
    # of two outputs, hence 2 x worst
    assert np.allclose(cal.zeta_point[:4], zeta, rtol=0, atol=2 * worst + 1e-12)
    assert cal.n_configs[:4].tolist() == [600] * 4
    assert cal.coverage is not None and cal.coverage.split == "tasks"


def test_load_source_dispatch():
    need("taskset")
    c = load_source("taskset", tasks=["FixedTextRNNClassification_imdb_patch32_GRU128_bs128"])
    assert c.metric_name == "valid_loss" and c.n_configs == 1000
    with pytest.raises(ValueError, match="mode must be 'min'"):
        load_source("taskset", mode="max")
    with pytest.raises(ValueError, match="unknown source"):
        load_source("mnist")
