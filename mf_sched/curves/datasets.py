"""Loaders for public learning-curve data: LCBench (YAHPO Gym surrogate), TaskSet, DeepOBS, AlgoPerf.

Every loader takes the file (or folder) as `path`; without it, it looks in the data folder named by the
environment variable `MF_SCHED_DATA` (laid out as below), then in `../shared/data` beside the
project. When the data is not there it raises :class:`FileNotFoundError` saying where the data comes
from. None of the data ships with mf-sched.

Where each source's files lie under the data folder, and where they come from:

* **LCBench** — `lcbench/model.onnx`, `config_space.json`, `encoding.json`: the YAHPO Gym v1.0 surrogate,
  repository `slds-lmu/yahpo_data`, folder `lcbench/` (Apache-2.0); LCBench: Zimmer et al. 2021.
* **TaskSet** — `taskset/taskset_imdb_rnn_valid_loss.csv.gz`: TaskSet (Metz et al. 2020) RNN text tasks as
  released in `machinelearningnuremberg/DPL`, `data/taskset/*.json` (Apache-2.0).
* **DeepOBS** — `deepobs/deepobs_epoch_curves.csv.gz`: `fsschneider/DeepOBS_Baselines` (MIT).
* **AlgoPerf** — `algoperf/algoperf_eval_curves.csv.gz`, `algoperf/algoperf_runs_hparams.csv.gz`:
  `mlcommons/submissions_algorithms`, `previous_leaderboards/algoperf_v0{5,6}/logs` (Apache-2.0).

What each loader returns (a :class:`~mf_sched.curves.learning_curves.LearningCurves`):

* :func:`load_taskset` — `valid_loss` (`mode="min"`) at 51 evaluation points spread over training
  (fidelity = evaluation index 1..51), 1,000 optimizer configurations per task, one seed; the 12 tasks are
  the table's tasks. Diverged runs report NaN from some point on: those rows are dropped
  (`nonfinite="drop"`), so a diverged run has no final value and takes no part in ζ estimation.
* :func:`load_deepobs` — per-epoch `test_acc` / `test_loss` / `train_*` of 3 optimizers × a log
  learning-rate grid on 8 problems (the tasks); 9–10 seeds at each optimizer's best learning rate, one
  elsewhere: the source of seed noise σ̂.
* :func:`load_algoperf` — the evaluation curves of one or more workloads (the tasks): a configuration is
  a submission's hyperparameter trial, the 5 studies are its seeds (the same hyperparameters, verified on
  the hparams file), fidelity = `global_step` (or `score`, seconds of submission time), cost =
  `score`. Evaluations are time-triggered: read them with `how="previous"` or use
  :meth:`~mf_sched.curves.learning_curves.LearningCurves.to_fraction`.
* :class:`LCBenchSurrogate` — the YAHPO ONNX model queried in batches with `onnxruntime` (the `bench`
  extra): any configuration of the LCBench search space on any of its 34 tasks, at epochs 1..52.
  Outputs are deterministic surrogate means: no seed noise. :meth:`LCBenchSurrogate.curves` samples
  configurations and returns their curves (`val_accuracy` as a fraction in [0, 1]: the surrogate's
  percent divided by 100; cost = the surrogate's `time`).
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mf_sched._validate import check_int
from mf_sched.curves._readers import _open_text, _Spec, check_mode, read_csv_columns
from mf_sched.curves.learning_curves import LearningCurves

__all__ = [
    "DATA_ENV",
    "data_root",
    "load_taskset",
    "load_deepobs",
    "load_algoperf",
    "LCBenchSurrogate",
    "load_lcbench",
    "SOURCES",
    "load_source",
]

DATA_ENV = "MF_SCHED_DATA"

#: where each source comes from (used in error messages and the README)
ORIGINS = {
    "lcbench": (
        "the YAHPO Gym v1.0 LCBench surrogate: repository slds-lmu/yahpo_data, folder lcbench/ (model.onnx, "
        "config_space.json, encoding.json; Apache-2.0)"
    ),
    "taskset": (
        "TaskSet (Metz et al. 2020) RNN text-classification curves: repository machinelearningnuremberg/DPL, "
        "data/taskset/*.json, as one CSV with columns task, config, <hyperparameters>, valid_loss (a JSON list)"
    ),
    "deepobs": (
        "the DeepOBS baselines: repository fsschneider/DeepOBS_Baselines, as one CSV with columns problem, "
        "optimizer, lr, seed, epoch, test_loss, train_loss, test_acc, train_acc"
    ),
    "algoperf": (
        "the MLCommons AlgoPerf training logs: repository mlcommons/submissions_algorithms, "
        "previous_leaderboards/algoperf_v0{5,6}/logs, as one CSV of evaluations (version, ruleset, submission, "
        "workload, study, trial, global_step, score, ..., validation/<metric>)"
    ),
}

_FILES = {
    "lcbench": "lcbench",
    "taskset": "taskset/taskset_imdb_rnn_valid_loss.csv.gz",
    "deepobs": "deepobs/deepobs_epoch_curves.csv.gz",
    "algoperf": "algoperf/algoperf_eval_curves.csv.gz",
    "algoperf_hparams": "algoperf/algoperf_runs_hparams.csv.gz",
}


def data_root() -> Path | None:
    """The data folder: `$MF_SCHED_DATA`, else `../shared/data` beside the project (if it exists)."""
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env)
    here = Path(__file__).resolve().parents[1]
    for cand in (here.parent / "shared" / "data", Path.cwd().parent / "shared" / "data"):
        if cand.is_dir():
            return cand
    return None


def _resolve(source: str, path: str | os.PathLike[str] | None, *, folder: bool = False) -> Path:
    key = source.split("_")[0]
    if path is not None:
        p = Path(path)
    else:
        root = data_root()
        if root is None:
            raise FileNotFoundError(
                f"no data folder for {key}: set {DATA_ENV} to a folder holding {_FILES[source]} or pass path=. "
                f"The data is {ORIGINS[key]}."
            )
        p = root / _FILES[source]
    ok = p.is_dir() if folder else p.is_file()
    if not ok:
        raise FileNotFoundError(
            f"{key} data not found at {str(p)!r}. It is {ORIGINS[key]}. Download it there, set {DATA_ENV} to "
            f"the folder that holds {_FILES[source]}, or pass path=."
        )
    return p


def _as_list(x: str | Iterable[str] | None) -> list[str] | None:
    if x is None:
        return None
    return [x] if isinstance(x, str) else [str(v) for v in x]


# ------------------------------------------------------------------------------------------ TaskSet
_TASKSET_PARAMS = ("learning_rate", "beta1", "beta2", "epsilon", "l1", "l2", "linear_decay", "exponential_decay")


def load_taskset(
    path: str | os.PathLike[str] | None = None,
    *,
    tasks: str | Iterable[str] | None = None,
    nonfinite: str = "drop",
    params: bool = True,
) -> LearningCurves:
    """TaskSet RNN text-classification validation-loss curves (see the module docstring).

    Args:
        path: the CSV (default `$MF_SCHED_DATA/taskset/taskset_imdb_rnn_valid_loss.csv.gz`).
        tasks: keep only these task names (default: all 12).
        nonfinite: `"drop"` (default) removes the NaN tail of diverged runs; `"error"` rejects it.
        params: attach each configuration's optimizer hyperparameters.
    """
    p = _resolve("taskset", path)
    where = None if tasks is None else {"task": _as_list(tasks) or []}
    names = ["task", "config", "valid_loss"] + (list(_TASKSET_PARAMS) if params else [])
    cols = read_csv_columns(p, names, where=where)
    if not cols["valid_loss"]:
        raise ValueError(f"{p} has no rows for tasks {tasks}")
    ps = None
    if params:
        ps = {}
        for i, key in enumerate(zip(cols["task"], cols["config"])):
            try:
                ps[key] = {k: float(cols[k][i]) for k in _TASKSET_PARAMS}
            except ValueError:
                raise ValueError(f"{p}: bad hyperparameter value in data row {i + 1} (configuration {key})") from None
    try:
        return LearningCurves._from_list_columns(
            cols,
            _Spec("valid_loss", "evaluation", "config", None, None, "task"),
            mode="min",
            fidelity_name="evaluation",
            nonfinite=nonfinite,
            params=ps,
            source=f"TaskSet ({p.name})",
        )
    except ValueError as e:
        raise ValueError(f"{p}: {e}") from None


# ------------------------------------------------------------------------------------------ DeepOBS
def load_deepobs(
    path: str | os.PathLike[str] | None = None,
    *,
    problems: str | Iterable[str] | None = None,
    optimizers: str | Iterable[str] | None = None,
    metric: str = "test_acc",
    mode: str | None = None,
) -> LearningCurves:
    """DeepOBS baseline curves: configuration = (optimizer, learning rate), task = problem, per-epoch metric.

    Args:
        path: the CSV (default `$MF_SCHED_DATA/deepobs/deepobs_epoch_curves.csv.gz`).
        problems: keep only these DeepOBS problems (default: all).
        optimizers: keep only these optimizers (default: all).
        metric: `test_acc`, `test_loss`, `train_acc` or `train_loss`.
        mode: default `"max"` for accuracies, `"min"` for losses.

    Missing values (the VAE and quadratic problems report no accuracy; diverged runs report NaN losses) are
    dropped. Configuration labels are `"<optimizer> lr=<lr>"`.
    """
    metrics = ("test_acc", "test_loss", "train_acc", "train_loss")
    if metric not in metrics:
        raise ValueError(f"metric = {metric!r} is unknown for DeepOBS; accepted: {', '.join(metrics)}")
    mode = check_mode(mode if mode is not None else ("max" if metric.endswith("acc") else "min"))
    p = _resolve("deepobs", path)
    where: dict[str, list[str]] = {}
    if problems is not None:
        where["problem"] = _as_list(problems) or []
    if optimizers is not None:
        where["optimizer"] = _as_list(optimizers) or []
    cols = read_csv_columns(p, ["problem", "optimizer", "lr", "seed", "epoch", metric], where=where)
    if not cols[metric]:
        raise ValueError(f"{p} has no rows for {where}")
    try:
        lrs = [float(x) for x in cols["lr"]]
    except ValueError:
        raise ValueError(f"{p}: a learning rate is not a number") from None
    labels = [f"{o} lr={lr:.6g}" for o, lr in zip(cols["optimizer"], lrs)]
    ps = {
        (pr, lab): {"optimizer": o, "lr": lr} for pr, lab, o, lr in zip(cols["problem"], labels, cols["optimizer"], lrs)
    }
    met = np.asarray([x if x else "nan" for x in cols[metric]], dtype=float)
    if not np.isfinite(met).any():
        raise ValueError(
            f"no finite {metric} values for {where or 'all problems'} (the VAE and quadratic problems report "
            "losses only)"
        )
    try:
        return LearningCurves(
            config=labels,
            fidelity=cols["epoch"],
            metric=met,
            seed=cols["seed"],
            task=cols["problem"],
            metric_name=metric,
            mode=mode,
            fidelity_name="epoch",
            nonfinite="drop",
            params=ps,
            source=f"DeepOBS ({p.name})",
        )
    except ValueError as e:
        raise ValueError(f"{p}: {e}") from None


# ------------------------------------------------------------------------------------------ AlgoPerf
_ALGOPERF_METRICS = {
    "imagenet": "validation/accuracy",
    "wmt": "validation/bleu",
    "librispeech": "validation/wer",
    "ogbg": "validation/mean_average_precision",
    "fastmri": "validation/ssim",
    "criteo1tb": "validation/loss",
}
_LOWER_IS_BETTER = ("loss", "wer", "ctc_loss")


def load_algoperf(
    path: str | os.PathLike[str] | None = None,
    *,
    workloads: str | Iterable[str] = "imagenet_resnet_jax",
    metric: str | None = None,
    mode: str | None = None,
    ruleset: str | None = "external_tuning",
    submissions: str | Iterable[str] | None = None,
    fidelity: str = "global_step",
    hparams: bool = False,
) -> LearningCurves:
    """AlgoPerf evaluation curves of some workloads (tasks); only their rows are parsed.

    Args:
        path: the evaluations CSV (default `$MF_SCHED_DATA/algoperf/algoperf_eval_curves.csv.gz`).
        workloads: one or more workload names (default `imagenet_resnet_jax`).
        metric: a column such as `validation/accuracy`; default: the workload family's target metric
            (ImageNet accuracy, WMT BLEU, LibriSpeech WER, OGBG mAP, fastMRI SSIM, Criteo loss).
        mode: default `"min"` for losses and WER, else `"max"`.
        ruleset: `external_tuning` (default: 5 hyperparameter trials × 5 studies), `self_tuning` or
            None for both.
        submissions: keep only these submissions.
        fidelity: `global_step` (default) or `score` (seconds of submission time).
        hparams: attach each configuration's hyperparameters (reads the small hparams file).

    Configuration labels are `"<version>/<ruleset>/<submission>/<trial>"`; seeds are the studies; cost = score.
    """
    wl = _as_list(workloads) or []
    if not wl:
        raise ValueError("workloads must name at least one AlgoPerf workload, e.g. 'imagenet_resnet_jax'")
    if metric is None:
        fams = {w.split("_")[0] for w in wl}
        metrics = {_ALGOPERF_METRICS.get(f) for f in fams}
        if None in metrics:
            raise ValueError(
                f"no default metric for workload(s) {wl}: known families are {', '.join(_ALGOPERF_METRICS)}; "
                "give metric= (a validation/... column)"
            )
        if len(metrics) != 1:
            raise ValueError(f"give metric= for workloads {wl}: they have no common default metric")
        metric = metrics.pop()
    assert metric is not None
    if mode is None:
        mode = "min" if metric.split("/")[-1] in _LOWER_IS_BETTER else "max"
    mode = check_mode(mode)
    if fidelity not in ("global_step", "score"):
        raise ValueError(f"fidelity = {fidelity!r} is unknown; accepted: 'global_step', 'score'")
    p = _resolve("algoperf", path)
    keep_sub = None if submissions is None else set(_as_list(submissions) or [])
    wanted = set(wl)
    cols: dict[str, list[str]] = {k: [] for k in ("config", "seed", "task", "fidelity", "metric", "cost")}
    with _open_text(p) as fh:
        reader = csv.reader(fh)
        header = next(reader)
        pos = {h: i for i, h in enumerate(header)}
        need = ["version", "ruleset", "submission", "workload", "study", "trial", "global_step", "score", metric]
        absent = [k for k in need if k not in pos]
        if absent:
            raise ValueError(f"{p} has no column(s) {absent}; metrics available: {[h for h in header if '/' in h]}")
        iv, ir, isub, iw, ist, itr = (pos[k] for k in need[:6])
        ifid, icost, im = pos[fidelity], pos["score"], pos[metric]
        seen = set()
        for row in reader:
            w = row[iw]
            if w not in wanted:
                continue
            seen.add(w)
            if ruleset is not None and row[ir] != ruleset:
                continue
            if keep_sub is not None and row[isub] not in keep_sub:
                continue
            if not row[im]:
                continue  # this evaluation has no value of the metric
            cols["config"].append(f"{row[iv]}/{row[ir]}/{row[isub]}/{row[itr]}")
            cols["seed"].append(row[ist])
            cols["task"].append(w)
            cols["fidelity"].append(row[ifid])
            cols["metric"].append(row[im])
            cols["cost"].append(row[icost])
    missing = wanted - seen
    if missing:
        raise ValueError(f"unknown AlgoPerf workload(s) {sorted(missing)} in {p}")
    if not cols["metric"]:
        raise ValueError(f"no {metric} values for workloads {wl} (ruleset {ruleset}, submissions {submissions})")
    curves = LearningCurves(
        config=cols["config"],
        fidelity=cols["fidelity"],
        metric=cols["metric"],
        seed=cols["seed"],
        task=cols["task"],
        cost=cols["cost"],
        metric_name=metric,
        mode=mode,
        fidelity_name=fidelity,
        cost_name="score (s)",
        nonfinite="drop",
        source=f"AlgoPerf ({p.name})",
    )
    if hparams:
        hp = _algoperf_hparams(p.parent / Path(_FILES["algoperf_hparams"]).name, set(wl))
        keys = [(curves.task_labels[t], lab) for t, lab in zip(curves.config_task.tolist(), curves.config_labels)]
        curves.params = tuple(hp.get(key) for key in keys)
    return curves


def _algoperf_hparams(path: Path, workloads: set[str]) -> dict[Any, dict[str, Any]]:
    if not path.is_file():
        raise FileNotFoundError(f"AlgoPerf hyperparameters not found at {str(path)!r}. It is {ORIGINS['algoperf']}.")
    out: dict[Any, dict[str, Any]] = {}
    with _open_text(path) as fh:
        for row in csv.DictReader(fh):
            if row["workload"] not in workloads:
                continue
            try:
                hp = json.loads(row["hparams"]) if row["hparams"] else {}
            except json.JSONDecodeError:
                raise ValueError(f"{path}: hparams of {row['submission']}/{row['trial']} is not JSON") from None
            if not isinstance(hp, dict):
                raise ValueError(f"{path}: hparams of {row['submission']}/{row['trial']} is not a JSON object")
            out[(row["workload"], f"{row['version']}/{row['ruleset']}/{row['submission']}/{row['trial']}")] = hp
    return out


# ------------------------------------------------------------------------------------------ LCBench
class LCBenchSurrogate:
    """The YAHPO Gym LCBench surrogate (ONNX), queried in batches with onnxruntime.

    Args:
        path: the folder holding `model.onnx`, `config_space.json` and `encoding.json` (default
            `$MF_SCHED_DATA/lcbench`).
        threads: onnxruntime intra-op threads (default 1: the surrogate is small; batching is what helps).

    The search space (from `config_space.json`): `batch_size` [16, 512] log int, `learning_rate`
    [1e-4, 0.1] log, `momentum` [0.1, 0.99], `weight_decay` [1e-5, 0.1], `num_layers` [1, 5] int,
    `max_units` [64, 1024] log int, `max_dropout` [0, 1]; the fidelity is `epoch` 1..52; 34 tasks
    (OpenML task ids). Outputs (:attr:`OUTPUTS`): `time` (cumulative seconds), `val_accuracy` (returned
    as a fraction: the model's percent / 100), `val_cross_entropy`, `val_balanced_accuracy`,
    `test_cross_entropy`, `test_balanced_accuracy`. Deterministic: no seed noise.

    Example (needs the data and onnxruntime):

    ```python
    sur = LCBenchSurrogate()
    cfg = sur.sample(5, np.random.default_rng(0))
    sur.predict(cfg, task="3945", epochs=[1, 52])["val_accuracy"].shape   # (5, 2)
    ```
    """

    OUTPUTS = (
        "time",
        "val_accuracy",
        "val_cross_entropy",
        "val_balanced_accuracy",
        "test_cross_entropy",
        "test_balanced_accuracy",
    )
    #: column order of the model's ``x_cont`` input after ``epoch``
    HYPERPARAMETERS = (
        "batch_size",
        "learning_rate",
        "momentum",
        "weight_decay",
        "num_layers",
        "max_units",
        "max_dropout",
    )
    MAX_EPOCH = 52

    def __init__(self, path: str | os.PathLike[str] | None = None, *, threads: int = 1) -> None:
        folder = _resolve("lcbench", path, folder=True)
        for name in ("model.onnx", "config_space.json", "encoding.json"):
            if not (folder / name).is_file():
                raise FileNotFoundError(f"{folder / name} is missing. The folder must hold {ORIGINS['lcbench']}.")
        try:
            import onnxruntime as ort
        except ImportError:
            raise ImportError("the LCBench surrogate needs onnxruntime: pip install 'mf-sched[bench]'") from None
        self.path = folder
        space = json.loads((folder / "config_space.json").read_text(encoding="utf-8"))
        enc = json.loads((folder / "encoding.json").read_text(encoding="utf-8"))
        hps = {h["name"]: h for h in space.get("hyperparameters", []) if isinstance(h, dict) and "name" in h}
        self.space: dict[str, dict[str, Any]] = {}
        for name in self.HYPERPARAMETERS:
            h = hps.get(name)
            if h is None or "lower" not in h or "upper" not in h:
                raise ValueError(f"{folder / 'config_space.json'} lacks the range of {name!r}")
            self.space[name] = {
                "lower": float(h["lower"]),
                "upper": float(h["upper"]),
                "log": bool(h.get("log", False)),
                "int": str(h.get("type", "")).endswith("int"),
            }
        codes = enc.get("OpenML_task_id", {})
        task_hp = hps.get("OpenML_task_id", {})
        self.tasks: tuple[str, ...] = tuple(str(t) for t in task_hp.get("choices", []) if str(t) in codes)
        if not self.tasks:
            raise ValueError(f"{folder}: no task of config_space.json has a code in encoding.json")
        self._codes = {t: int(codes[t]) for t in self.tasks}
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(threads)
        opts.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(folder / "model.onnx"), opts, providers=["CPUExecutionProvider"])

    def __repr__(self) -> str:
        return f"LCBenchSurrogate({str(self.path)!r}, {len(self.tasks)} tasks)"

    def sample(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """`n` configurations drawn uniformly from the search space (log-uniform where the space is log;
        integers rounded), as a dict of arrays.

        Args:
            n: the number of configurations, `≥ 1`.
            rng: the generator they are drawn from.
        """
        check_int("n", n)
        out = {}
        for name, h in self.space.items():
            lo, hi = h["lower"], h["upper"]
            if h["log"]:
                x = np.exp(rng.uniform(math.log(lo), math.log(hi), n))
            else:
                x = rng.uniform(lo, hi, n)
            if h["int"]:
                x = np.clip(np.round(x), lo, hi)
            out[name] = x
        return out

    def _configs(self, configs: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> np.ndarray:
        if isinstance(configs, Mapping):
            cols = configs
        else:
            rows = list(configs)
            if not rows or not all(isinstance(r, Mapping) for r in rows):
                raise ValueError("configs must be a mapping of arrays or a non-empty sequence of mappings")
            cols = {k: [r.get(k) for r in rows] for k in self.HYPERPARAMETERS}
        X = []
        n = None
        for name in self.HYPERPARAMETERS:
            if name not in cols:
                raise ValueError(f"configs lack hyperparameter {name!r}; required: {list(self.HYPERPARAMETERS)}")
            try:
                x = np.asarray(cols[name], dtype=float).ravel()
            except (TypeError, ValueError):
                raise ValueError(f"hyperparameter {name!r} must hold numbers") from None
            n = x.size if n is None else n
            if x.size != n:
                raise ValueError(f"hyperparameter {name!r} has {x.size} values, {n} expected")
            h = self.space[name]
            bad = ~(np.isfinite(x) & (x >= h["lower"] - 1e-9 * abs(h["lower"])) & (x <= h["upper"] * (1 + 1e-9)))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ValueError(f"{name}[{i}] = {x[i]} is out of range; accepted: [{h['lower']:g}, {h['upper']:g}]")
            X.append(x)
        return np.stack(X, axis=1)

    def predict(
        self,
        configs: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        task: str,
        epochs: Sequence[int] | None = None,
        batch: int = 65536,
    ) -> dict[str, np.ndarray]:
        """Surrogate outputs for every configuration at every epoch: a dict of `(n_configs, n_epochs)`
        arrays keyed by :attr:`OUTPUTS` (`val_accuracy` as a fraction).

        Args:
            configs: the configurations: a mapping from every name of :attr:`HYPERPARAMETERS` to equal-length arrays
                (what :meth:`sample` returns) or a non-empty sequence of mappings; each value inside the search space.
            task: an OpenML task id among :attr:`tasks` (e.g. `"3945"`).
            epochs: the epochs to predict at, integers in `1 .. 52`; `None`: all 52.
            batch: the most rows sent to the model in one call (memory against speed).
        """
        task = str(task)
        if task not in self._codes:
            raise ValueError(f"task {task!r} is unknown; accepted: {', '.join(self.tasks)}")
        X = self._configs(configs)
        ep = np.arange(1, self.MAX_EPOCH + 1) if epochs is None else np.asarray(list(epochs), dtype=float)
        if ep.size == 0 or np.any((ep < 1) | (ep > self.MAX_EPOCH) | (ep != np.round(ep))):
            raise ValueError(f"epochs must be integers in 1..{self.MAX_EPOCH}")
        n, E = X.shape[0], ep.size
        cont = np.empty((n * E, 8), dtype=np.float32)
        cont[:, 0] = np.tile(ep, n)
        cont[:, 1:] = np.repeat(X, E, axis=0)
        cat = np.full((n * E, 1), self._codes[task], dtype=np.int32)
        outs = []
        for s in range(0, n * E, batch):
            outs.append(self._session.run(None, {"x_cont": cont[s : s + batch], "x_cat": cat[s : s + batch]})[0])
        Y = np.concatenate(outs, axis=0).astype(float).reshape(n, E, len(self.OUTPUTS))
        res = {name: Y[:, :, i] for i, name in enumerate(self.OUTPUTS)}
        res["val_accuracy"] = res["val_accuracy"] / 100.0
        return res

    def curves(
        self,
        tasks: str | Iterable[str] | None = None,
        *,
        n_configs: int = 200,
        metric: str = "val_accuracy",
        mode: str | None = None,
        epochs: Sequence[int] | None = None,
        seed: int | None = 0,
    ) -> LearningCurves:
        """Learning curves of `n_configs` random configurations per task (the same configurations on
        every task), `cost` = the surrogate's cumulative time. `mode` defaults to `"min"` for
        cross-entropies and `"max"` for accuracies.

        Args:
            tasks: one task id or several; `None`: all of :attr:`tasks`.
            n_configs: the number of random configurations, `≥ 1`.
            metric: one of :attr:`OUTPUTS` except `time`.
            mode: `"max"` or `"min"`; `None`: from the metric (see above).
            epochs: the epochs to read, integers in `1 .. 52`; `None`: all 52.
            seed: seeds the configurations (`None`: fresh entropy).
        """
        if metric not in self.OUTPUTS or metric == "time":
            raise ValueError(f"metric = {metric!r} is unknown; accepted: {', '.join(self.OUTPUTS[1:])}")
        mode = check_mode(mode if mode is not None else ("min" if "entropy" in metric else "max"))
        tl = list(self.tasks) if tasks is None else (_as_list(tasks) or [])
        rng = np.random.default_rng(seed)
        cfg = self.sample(n_configs, rng)
        ep = np.arange(1, self.MAX_EPOCH + 1) if epochs is None else np.asarray(list(epochs))
        cfg_col, fid, met, cost, task_col = [], [], [], [], []
        for t in tl:
            out = self.predict(cfg, task=t, epochs=ep)
            cfg_col.append(np.repeat(np.arange(n_configs), ep.size))
            fid.append(np.tile(ep, n_configs))
            met.append(out[metric].ravel())
            cost.append(out["time"].ravel())
            task_col.extend([t] * (n_configs * ep.size))
        params = {
            (t, k): {name: float(cfg[name][k]) for name in self.HYPERPARAMETERS} for t in tl for k in range(n_configs)
        }
        return LearningCurves(
            config=np.concatenate(cfg_col),
            fidelity=np.concatenate(fid),
            metric=np.concatenate(met),
            cost=np.maximum(np.concatenate(cost), 0.0),
            task=task_col,
            metric_name=metric,
            mode=mode,
            fidelity_name="epoch",
            cost_name="time (s)",
            params=params,
            source=f"LCBench via the YAHPO Gym surrogate ({self.path}), {n_configs} random configurations, seed {seed}",
        )


def load_lcbench(
    path: str | os.PathLike[str] | None = None,
    *,
    tasks: str | Iterable[str] | None = None,
    n_configs: int = 200,
    metric: str = "val_accuracy",
    mode: str | None = None,
    seed: int | None = 0,
) -> LearningCurves:
    """Curves of `n_configs` random LCBench configurations per task from the surrogate (see
    :meth:`LCBenchSurrogate.curves`).

    Args:
        path: the surrogate's folder (default `$MF_SCHED_DATA/lcbench`; see :class:`LCBenchSurrogate`).
        tasks: one OpenML task id or several; `None`: all 34.
        n_configs: the number of random configurations per task, `≥ 1`.
        metric: one of :attr:`LCBenchSurrogate.OUTPUTS` except `time`.
        mode: `"max"` or `"min"`; `None`: `"min"` for cross-entropies, `"max"` for accuracies.
        seed: seeds the configurations (`None`: fresh entropy).
    """
    return LCBenchSurrogate(path).curves(tasks, n_configs=n_configs, metric=metric, mode=mode, seed=seed)


#: the named sources ``mf-sched calibrate`` accepts in place of a CSV file
SOURCES = ("lcbench", "taskset", "deepobs", "algoperf")


def load_source(
    name: str,
    *,
    path: str | os.PathLike[str] | None = None,
    tasks: Sequence[str] | None = None,
    metric: str | None = None,
    mode: str | None = None,
    n_configs: int = 200,
    seed: int | None = 0,
) -> LearningCurves:
    """Load a named source with its defaults (used by the CLI).

    Args:
        name: one of :data:`SOURCES`: `"lcbench"`, `"taskset"`, `"deepobs"` or `"algoperf"`.
        path: the source's file or folder; `None`: its default under `$MF_SCHED_DATA`.
        tasks: the tasks (LCBench, TaskSet), problems (DeepOBS) or workloads (AlgoPerf) to keep; `None`: the
            loader's default (all, or `imagenet_resnet_jax` for AlgoPerf).
        metric: the metric to read; `None`: the source's default (`val_accuracy`, `valid_loss`, `test_acc`, the
            workload's target metric).
        mode: `"max"` or `"min"`; `None`: from the metric.
        n_configs: the number of random configurations per task (LCBench only).
        seed: seeds the configurations (LCBench only).
    """
    if name == "lcbench":
        return load_lcbench(
            path, tasks=tasks, n_configs=n_configs, metric=metric or "val_accuracy", mode=mode, seed=seed
        )
    if name == "taskset":
        if metric not in (None, "valid_loss"):
            raise ValueError("TaskSet has one metric: valid_loss")
        if mode not in (None, "min"):
            raise ValueError("TaskSet's valid_loss is a loss: mode must be 'min'")
        return load_taskset(path, tasks=tasks)
    if name == "deepobs":
        return load_deepobs(path, problems=tasks, metric=metric or "test_acc", mode=mode)
    if name == "algoperf":
        return load_algoperf(path, workloads=tasks or "imagenet_resnet_jax", metric=metric, mode=mode)
    raise ValueError(f"unknown source {name!r}; accepted: {', '.join(SOURCES)}")
