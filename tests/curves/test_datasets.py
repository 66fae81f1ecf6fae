"""Loaders of the shared learning-curve data (skipped cleanly when ../shared/data is absent).

Besides shapes, these check the loaders against the facts measured on the files in
``../shared/data/README.md`` (seed counts, the typical bias table, seed noise).
"""

from __future__ import annotations

import csv
import gzip
import json
import math

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


def test_deepobs_seeds_and_bias(deepobs):
    spc = deepobs.seeds_per_config()
    assert deepobs.n_tasks == 2 and spc.max() == 10 and (spc >= 9).sum() == 6  # best lr of 3 optimizers x 2
    cifar = deepobs.select(tasks=["cifar10_3c3d"]).to_fraction()
    cal = calibrate(cifar, FRACTIONS, quantile=0.9, holdout=None)
    # README 90% quantiles for cifar10_3c3d test accuracy: .250, .142, .073, .029
    assert np.allclose(cal.zeta_point[:4], [0.25, 0.142, 0.073, 0.029], rtol=0.2)
    sig = estimate_sigma(cifar.values_at(FRACTIONS))
    assert sig["n_configs"][-1] == 3 and 0.002 < sig["pooled"][-1] < 0.02
    with pytest.raises(ValueError, match="report losses only"):
        load_deepobs(problems="mnist_vae", metric="test_acc")
    with pytest.raises(ValueError, match="metric = 'acc' is unknown"):
        load_deepobs(metric="acc")


def test_algoperf_studies_are_seeds_with_the_readme_noise(algoperf):
    assert algoperf.task_labels == ("imagenet_resnet_jax",) and algoperf.mode == "max"
    assert algoperf.has_cost and algoperf.seed_labels[:2] == ("study_0", "study_1")
    assert (algoperf.seeds_per_config() == 5).sum() >= 20
    frac = algoperf.to_fraction()
    sig = estimate_sigma(frac.values_at(FRACTIONS))
    assert 0.0005 < sig["median"][-1] < 0.003  # README: median seed std of ImageNet accuracy 0.0013
    cal = calibrate(frac, FRACTIONS, quantile=0.9, holdout=None)
    assert cal.cost_source == "time" and np.all(np.diff(cal.costs) > 0)
    # README (ImageNet validation accuracy, 90% quantiles): .380, .271, .162, .074
    assert np.allclose(cal.zeta_point[:4], [0.38, 0.271, 0.162, 0.074], rtol=0.3)


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


def test_lcbench_curves_typical_bias():
    need("lcbench")
    pytest.importorskip("onnxruntime")
    curves = load_lcbench(tasks=["3945", "7593", "34539", "126025"], n_configs=150, seed=1)
    assert curves.n_configs == 600 and curves.has_cost and curves.params[0]["batch_size"] >= 16
    cal = calibrate(curves.to_fraction(), FRACTIONS, quantile=0.9, holdout="tasks", repeats=4)
    # README 90% quantiles for YAHPO-LCBench val accuracy: .181, .096, .049, .021 (all tasks; 4 here)
    assert np.allclose(cal.zeta_point[:4], [0.181, 0.096, 0.049, 0.021], rtol=0.5)
    assert cal.coverage is not None and cal.coverage.split == "tasks"


def test_load_source_dispatch():
    need("taskset")
    c = load_source("taskset", tasks=["FixedTextRNNClassification_imdb_patch32_GRU128_bs128"])
    assert c.metric_name == "valid_loss" and c.n_configs == 1000
    with pytest.raises(ValueError, match="mode must be 'min'"):
        load_source("taskset", mode="max")
    with pytest.raises(ValueError, match="unknown source"):
        load_source("mnist")
