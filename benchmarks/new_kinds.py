"""Learning curves of new kinds of tasks, for measuring how often a racing certificate holds on tasks the curve
bound never saw (it is calibrated on LCBench, TaskSet, DeepOBS and AlgoPerf; see :mod:`benchmarks.curve_bound`).

Every task is a hyper-parameter search: ``--configs`` configurations (40) drawn at random from a search space with
a seeded generator (``SeedSequence([SPACE_SEED, task id])``), each trained for ``--epochs`` epochs (27) with
``--seeds`` seeds (2; a seed sets the initialisation and the order of the training examples, drawn by this script
every epoch), and the validation metric recorded after every epoch. Each task has a fixed train/validation split
(stratified, seeded) of a dataset that ships inside scikit-learn (nothing is downloaded); the features are scaled
on the training part only. The tasks:

* ``mlp-digits-acc`` (``unit``): scikit-learn ``MLPClassifier`` (``partial_fit``, one call per epoch) on
  ``load_digits`` (8×8 images, pixels / 16; 70/30 split) — hidden layers (32,) … (128, 64), ReLU/tanh,
  ``learning_rate_init`` log-uniform 1e-4…1e-1, ``alpha`` log-uniform 1e-6…1e-1, batch 16/32/64/128, solver
  adam, or sgd with momentum 0…0.99 (Nesterov or not); validation accuracy.
* ``sgd-cancer-acc`` and ``sgd-wine-acc`` (``unit``): scikit-learn ``SGDClassifier`` (``partial_fit``, one call
  per epoch) on ``load_breast_cancer`` (70/30) and ``load_wine`` (60/40), standardised — loss
  log_loss/hinge/modified_huber, penalty l2/elasticnet, ``alpha`` log-uniform 1e-6…1e-1, schedule
  constant/optimal/invscaling, ``eta0`` log-uniform 1e-4…1, ``power_t`` 0.1…0.9; validation accuracy.
* ``torch-digits-acc`` (``unit``) and ``torch-digits-logloss`` (``loss``): a small PyTorch network on the
  digits images (``torch.set_num_threads(1)``; an MLP with two hidden layers of ``width``, or a CNN: a 3×3
  convolution with 16 channels and padding 1, ReLU, a 2×2 max-pool and a hidden layer of ``width``) —
  optimiser SGD (momentum 0/0.9/0.99) or Adam, ``lr`` log-uniform 1e-4…3e-1, ``width`` 16…256, dropout 0…0.5,
  weight decay 0 or log-uniform 1e-6…1e-2, batch 16/32/64/128; validation accuracy, and validation
  cross-entropy. The two tasks share the space but not the configurations (each draws its own 40).
* ``mlp-synth-logloss`` (``loss``): ``MLPClassifier`` as above on ``make_classification(n_samples=2000,
  n_features=20, n_informative=6, n_redundant=4, n_classes=3, flip_y=0.05, random_state=11)``, standardised,
  70/30; validation cross-entropy.

The spaces reach on purpose into slow starters (learning rates near 1e-4, no momentum) and into runs that diverge
or plateau (Adam at 0.1–0.3, SGD momentum 0.99 with large steps, the ``optimal`` schedule with a tiny ``alpha``),
as real searches do. Metrics: accuracy is the share of validation examples classified correctly; cross-entropy
is the mean of ``-log p(true class)`` with probabilities clipped to ``[1e-7, 1]`` (at most ln 1e7 ≈ 16.1). A
model whose outputs are not finite (a diverged run) predicts the uniform distribution for those examples
(cross-entropy ln C, class 0), so every recorded value is finite.

Stored in ``benchmarks/data/new_kinds.npz`` (``np.savez_compressed``, no pickles): ``<task>__curves``, float32
``(configs, seeds, epochs)`` in the metric's own orientation (a loss as a loss), and ``meta``, a 0-d unicode array
holding a JSON object (per task: family, metric, description, dataset, configurations; the generator's
arguments). :func:`load_new_kinds` reads it into the maximised orientation the project's bounds use (a loss
negated, ``-loss ≤ 0``; the ``loss`` family is the ``relative`` form with ideal 0 there, see
:data:`benchmarks.curve_bound.FAMILY_FORM`).

    PYTHONPATH=. python -m benchmarks.new_kinds            # ~7 min on 2 busy cores; benchmarks/data/new_kinds.npz
    PYTHONPATH=. python -m benchmarks.new_kinds --jobs 2   # the same file, in two worker processes
    PYTHONPATH=. python -m benchmarks.new_kinds --quick    # 6 configurations, 9 epochs; benchmarks/results/

Prints, per task, the configurations, the best and median final value (seed means), Spearman's ρ between the
values at epoch 3 and the final values, and the share of configuration pairs that epoch 3 orders differently
from the end (ties at either point left out), and the mean spread between the seeds of a configuration's final
value.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from mf_sched._progress import Progress

__all__ = ["DEFAULT_PATH", "FAMILIES", "TASKS", "generate", "load_new_kinds", "main"]

ROOT = Path(__file__).resolve().parents[1]
#: where :func:`main` writes the data and :func:`load_new_kinds` reads it
DEFAULT_PATH = ROOT / "benchmarks" / "data" / "new_kinds.npz"
#: the metric families the project's bounds know
FAMILIES = ("unit", "loss")
#: the root of the configuration draws (task id appended)
SPACE_SEED = 20240611
#: the root of the training seeds (task id, configuration, seed appended)
RUN_SEED = 7
#: probabilities are clipped to ``[P_MIN, 1]`` in the cross-entropy
P_MIN = 1e-7
FORMAT = 1

#: task -> (id, family, metric, dataset, model, description)
TASKS: dict[str, dict[str, Any]] = {
    "mlp-digits-acc": {
        "id": 0, "family": "unit", "metric": "val_accuracy", "dataset": "digits", "model": "sk_mlp",
        "description": "scikit-learn MLPClassifier (partial_fit per epoch) on load_digits, validation accuracy",
    },
    "sgd-cancer-acc": {
        "id": 1, "family": "unit", "metric": "val_accuracy", "dataset": "breast_cancer", "model": "sk_sgd",
        "description": "scikit-learn SGDClassifier (partial_fit per epoch) on load_breast_cancer, standardised, "
        "validation accuracy",
    },
    "sgd-wine-acc": {
        "id": 2, "family": "unit", "metric": "val_accuracy", "dataset": "wine", "model": "sk_sgd",
        "description": "scikit-learn SGDClassifier (partial_fit per epoch) on load_wine, standardised, "
        "validation accuracy",
    },
    "torch-digits-acc": {
        "id": 3, "family": "unit", "metric": "val_accuracy", "dataset": "digits", "model": "torch",
        "description": "PyTorch MLP/CNN on the load_digits 8x8 images, SGD or Adam, validation accuracy",
    },
    "torch-digits-logloss": {
        "id": 4, "family": "loss", "metric": "val_cross_entropy", "dataset": "digits", "model": "torch",
        "description": "PyTorch MLP/CNN on the load_digits 8x8 images, SGD or Adam, validation cross-entropy",
    },
    "mlp-synth-logloss": {
        "id": 5, "family": "loss", "metric": "val_cross_entropy", "dataset": "synth", "model": "sk_mlp",
        "description": "scikit-learn MLPClassifier (partial_fit per epoch) on a seeded make_classification "
        "problem (2000 x 20, 6 informative, 3 classes), validation cross-entropy",
    },
}  # fmt: skip


# ----------------------------------------------------------------------------------------------------- datasets


@cache
def dataset(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(X_train, y_train, X_val, y_val)`` of a task's dataset: a fixed, stratified, seeded split."""
    from sklearn import datasets
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    val, standardise = 0.3, True
    if name == "digits":
        d = datasets.load_digits()
        X, y, standardise = d.data / 16.0, d.target, False
    elif name == "breast_cancer":
        d = datasets.load_breast_cancer()
        X, y = d.data, d.target
    elif name == "wine":
        d = datasets.load_wine()
        X, y, val = d.data, d.target, 0.4
    elif name == "synth":
        X, y = datasets.make_classification(n_samples=2000, n_features=20, n_informative=6, n_redundant=4,
                                            n_classes=3, n_clusters_per_class=2, flip_y=0.05, class_sep=1.0,
                                            random_state=11)  # fmt: skip
    else:
        raise ValueError(f"unknown dataset {name!r}")
    Xt, Xv, yt, yv = train_test_split(X, y, test_size=val, stratify=y, random_state=0)
    if standardise:
        sc = StandardScaler().fit(Xt)
        Xt, Xv = sc.transform(Xt), sc.transform(Xv)
    return Xt.astype(np.float64), yt.astype(np.int64), Xv.astype(np.float64), yv.astype(np.int64)


# ------------------------------------------------------------------------------------------------ search spaces


def _loguniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _sample(model: str, rng: np.random.Generator) -> dict[str, Any]:
    """One configuration of a model's search space (JSON-serialisable)."""
    if model == "sk_mlp":
        hidden = [[32], [64], [128], [32, 32], [64, 64], [128, 64]][int(rng.integers(6))]
        solver = str(rng.choice(["adam", "sgd"]))
        cfg: dict[str, Any] = {
            "hidden_layer_sizes": hidden,
            "activation": str(rng.choice(["relu", "tanh"])),
            "solver": solver,
            "learning_rate_init": _loguniform(rng, 1e-4, 1e-1),
            "alpha": _loguniform(rng, 1e-6, 1e-1),
            "batch_size": int(rng.choice([16, 32, 64, 128])),
        }
        if solver == "sgd":
            cfg["momentum"] = float(rng.choice([0.0, rng.uniform(0.5, 0.99), 0.99]))
            cfg["nesterovs_momentum"] = bool(rng.random() < 0.5) and cfg["momentum"] > 0
        return cfg
    if model == "sk_sgd":
        cfg = {
            "loss": str(rng.choice(["log_loss", "hinge", "modified_huber"])),
            "penalty": str(rng.choice(["l2", "elasticnet"])),
            "alpha": _loguniform(rng, 1e-6, 1e-1),
            "learning_rate": str(rng.choice(["constant", "optimal", "invscaling"])),
            "eta0": _loguniform(rng, 1e-4, 1.0),
        }
        if cfg["learning_rate"] == "invscaling":
            cfg["power_t"] = float(rng.uniform(0.1, 0.9))
        return cfg
    if model == "torch":
        opt = str(rng.choice(["sgd", "adam"]))
        cfg = {
            "arch": str(rng.choice(["mlp", "cnn"])),
            "width": int(rng.choice([16, 32, 64, 128, 256])),
            "dropout": float(rng.uniform(0.0, 0.5)),
            "optimizer": opt,
            "lr": _loguniform(rng, 1e-4, 3e-1),
            "weight_decay": 0.0 if rng.random() < 0.3 else _loguniform(rng, 1e-6, 1e-2),
            "batch_size": int(rng.choice([16, 32, 64, 128])),
        }
        if opt == "sgd":
            cfg["momentum"] = float(rng.choice([0.0, 0.9, 0.99]))
        return cfg
    raise ValueError(f"unknown model {model!r}")


def configurations(task: str, n: int) -> list[dict[str, Any]]:
    """The task's ``n`` configurations (the first ``n`` of its seeded draw, whatever ``n``)."""
    rng = np.random.default_rng(np.random.SeedSequence([SPACE_SEED, TASKS[task]["id"]]))
    return [_sample(TASKS[task]["model"], rng) for _ in range(n)]


# ----------------------------------------------------------------------------------------------------- metrics


def _metric(metric: str, proba: np.ndarray, y: np.ndarray) -> float:
    """Accuracy or clipped cross-entropy of class probabilities; rows that are not finite count as uniform."""
    p = np.array(proba, dtype=np.float64)
    bad = ~np.isfinite(p).all(axis=1)
    p[bad] = 1.0 / p.shape[1]
    if metric == "val_accuracy":
        return float(np.mean(p.argmax(axis=1) == y))
    return float(-np.mean(np.log(np.clip(p[np.arange(y.size), y], P_MIN, 1.0))))


# ---------------------------------------------------------------------------------------------------- training


def _train_sklearn(task: str, cfg: dict[str, Any], seed: int, epochs: int) -> np.ndarray:
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import SGDClassifier
    from sklearn.neural_network import MLPClassifier

    spec = TASKS[task]
    Xt, yt, Xv, yv = dataset(spec["dataset"])
    classes = np.unique(yt)
    rng = np.random.default_rng(seed)
    if spec["model"] == "sk_mlp":
        kw = dict(cfg, hidden_layer_sizes=tuple(cfg["hidden_layer_sizes"]))
        model: Any = MLPClassifier(**kw, shuffle=False, random_state=seed % 2**31)
    else:
        model = SGDClassifier(**cfg, shuffle=False, random_state=seed % 2**31)
    out = np.empty(epochs)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        for e in range(epochs):
            order = rng.permutation(yt.size)
            model.partial_fit(Xt[order], yt[order], classes=classes)
            if spec["metric"] == "val_accuracy":
                scores = model.decision_function(Xv) if spec["model"] == "sk_sgd" else model.predict_proba(Xv)
                if scores.ndim == 1:  # binary SGD: one margin per example
                    scores = np.stack([-scores, scores], axis=1)
                out[e] = _metric("val_accuracy", scores, yv)
            else:
                out[e] = _metric(spec["metric"], model.predict_proba(Xv), yv)
    return out


def _torch_net(cfg: dict[str, Any]) -> Any:
    """The network of a configuration. The CNN's input is the 3×3 patches of each image (``unfold``, padding 1),
    so that its convolution (16 channels) is a ``Linear(9, 16)`` on every patch: the same function as
    ``Conv2d(1, 16, 3, padding=1)``, several times faster on one CPU thread at these sizes."""
    import torch
    from torch import nn

    w, drop = cfg["width"], cfg["dropout"]
    if cfg["arch"] == "mlp":
        return nn.Sequential(nn.Linear(64, w), nn.ReLU(), nn.Dropout(drop), nn.Linear(w, w), nn.ReLU(),
                             nn.Dropout(drop), nn.Linear(w, 10))  # fmt: skip

    class PatchCNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Linear(9, 16)
            self.head = nn.Sequential(nn.Flatten(), nn.Dropout(drop), nn.Linear(16 * 16, w), nn.ReLU(),
                                      nn.Dropout(drop), nn.Linear(w, 10))  # fmt: skip

        def forward(self, patches: torch.Tensor) -> torch.Tensor:  # (N, 64, 9) -> (N, 10)
            h = torch.relu(self.conv(patches))  # (N, 64 positions, 16 channels), positions row-major
            h = torch.nn.functional.max_pool2d(h.transpose(1, 2).reshape(-1, 16, 8, 8), 2)  # (N, 16, 4, 4)
            return self.head(h)

    return PatchCNN()


def _torch_inputs(X: np.ndarray, arch: str) -> Any:
    """Pixels ``(N, 64)`` for the MLP; 3×3 patches ``(N, 64, 9)`` (zero padding) for the CNN."""
    import torch

    x = torch.as_tensor(X, dtype=torch.float32)
    if arch == "mlp":
        return x
    return torch.nn.functional.unfold(x.reshape(-1, 1, 8, 8), 3, padding=1).transpose(1, 2).contiguous()


def _train_torch(task: str, cfg: dict[str, Any], seed: int, epochs: int) -> np.ndarray:
    import torch

    torch.set_num_threads(1)
    spec = TASKS[task]
    Xt, yt, Xv, yv = dataset(spec["dataset"])
    xt, xv = _torch_inputs(Xt, cfg["arch"]), _torch_inputs(Xv, cfg["arch"])
    ytt = torch.as_tensor(yt)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    net = _torch_net(cfg)
    if cfg["optimizer"] == "adam":
        opt: Any = torch.optim.Adam(net.parameters(), lr=cfg["lr"], weight_decay=cfg["weight_decay"])
    else:
        opt = torch.optim.SGD(net.parameters(), lr=cfg["lr"], momentum=cfg["momentum"],
                              weight_decay=cfg["weight_decay"])  # fmt: skip
    loss_fn = torch.nn.CrossEntropyLoss()
    bs = cfg["batch_size"]
    out = np.empty(epochs)
    for e in range(epochs):
        net.train()
        order = torch.as_tensor(rng.permutation(yt.size))
        for i in range(0, yt.size, bs):
            idx = order[i : i + bs]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(net(xt[idx]), ytt[idx])
            if torch.isfinite(loss):  # a diverged network stays diverged; skip the NaN step's arithmetic
                loss.backward()
                opt.step()
        net.eval()
        with torch.no_grad():
            proba = torch.softmax(net(xv).double(), dim=1).numpy()
        out[e] = _metric(spec["metric"], proba, yv)
    return out


def run_one(job: tuple[str, int, dict[str, Any], int, int]) -> np.ndarray:
    """One training run ``(task, configuration index, configuration, seed index, epochs)``: the validation metric
    after every epoch. The run's seed is ``SeedSequence([RUN_SEED, task id, configuration, seed])``."""
    task, k, cfg, s, epochs = job
    seed = int(np.random.SeedSequence([RUN_SEED, TASKS[task]["id"], k, s]).generate_state(1)[0])
    if TASKS[task]["model"] == "torch":
        return _train_torch(task, cfg, seed, epochs)
    return _train_sklearn(task, cfg, seed, epochs)


def generate(
    tasks: list[str], n_configs: int, n_seeds: int, epochs: int, jobs: int = 1, progress: bool = True
) -> tuple[dict[str, np.ndarray], dict[str, list[dict[str, Any]]]]:
    """``({task: curves (configs, seeds, epochs)}, {task: configurations})``, in the metric's own orientation."""
    from mf_sched._parallel import process_pool

    cfgs = {t: configurations(t, n_configs) for t in tasks}
    work = [(t, k, cfgs[t][k], s, epochs) for t in tasks for k in range(n_configs) for s in range(n_seeds)]
    curves = {t: np.full((n_configs, n_seeds, epochs), np.nan) for t in tasks}
    with Progress(len(work), "runs", progress) as bar:
        if jobs <= 1:
            results: Any = map(run_one, work)
            for job, r in zip(work, results):
                curves[job[0]][job[1], job[3]] = r
                bar.note(job[0])
                bar.update()
        else:
            with process_pool(jobs) as ex:
                for job, r in zip(work, ex.map(run_one, work, chunksize=4)):
                    curves[job[0]][job[1], job[3]] = r
                    bar.note(job[0])
                    bar.update()
    return curves, cfgs


# ---------------------------------------------------------------------------------------------------- the file


def save(path: Path, curves: dict[str, np.ndarray], cfgs: dict[str, list[dict[str, Any]]], args: dict) -> None:
    """Write the curves and a JSON ``meta`` entry (no pickles) with ``np.savez_compressed``."""
    meta = {
        "format": FORMAT,
        "orientation": "the metric's own: accuracy as is, a loss as a loss (load_new_kinds negates losses)",
        "generator": "benchmarks/new_kinds.py",
        "args": args,
        "tasks": {
            t: {k: TASKS[t][k] for k in ("family", "metric", "description", "dataset", "model")}
            | {"shape": list(curves[t].shape), "configs": cfgs[t]}
            for t in curves
        },
    }
    arrays: dict[str, np.ndarray] = {f"{t}__curves": c.astype(np.float32) for t, c in curves.items()}
    arrays["meta"] = np.array(json.dumps(meta, sort_keys=True))
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)  # type: ignore[arg-type]


def load_new_kinds(path: str | Path = DEFAULT_PATH) -> dict[str, dict[str, Any]]:
    """The new-kind tasks: ``{task: {"family", "metric", "seeds", "true"}}``.

    ``seeds`` is ``(configs, seeds, epochs)`` float64 in the maximised orientation (accuracy as is, a loss
    negated: ``-loss ≤ 0``); ``true`` is its mean over seeds, ``(configs, epochs)``. Also ``"description"`` and
    ``"configs"`` (the configurations, as dicts). Raises ``ValueError`` naming the file when it is not a valid
    new-kinds file (missing or malformed ``meta``, unknown family, a shape that differs from the recorded one,
    values that are not finite or out of the family's range); ``FileNotFoundError`` when there is no file.
    """
    path = Path(path)

    def bad(why: str) -> ValueError:
        return ValueError(f"{path}: not a valid new-kinds file ({why}); regenerate it with "
                          "`PYTHONPATH=. python -m benchmarks.new_kinds`")  # fmt: skip

    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file; generate it with `PYTHONPATH=. python -m benchmarks.new_kinds`")
    try:
        npz = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        raise bad(f"cannot be read as .npz: {err}") from err
    with npz:
        if "meta" not in npz.files:
            raise bad("no 'meta' entry")
        try:
            meta = json.loads(str(npz["meta"][()]))
            specs = meta["tasks"]
        except (ValueError, KeyError, TypeError) as err:
            raise bad(f"'meta' is not the expected JSON: {err}") from err
        if meta.get("format") != FORMAT:
            raise bad(f"format {meta.get('format')!r}, expected {FORMAT}")
        if not isinstance(specs, dict) or not specs:
            raise bad("no tasks")
        out: dict[str, dict[str, Any]] = {}
        for task, spec in specs.items():
            key = f"{task}__curves"
            if key not in npz.files:
                raise bad(f"task {task!r} has no {key!r} array")
            fam = spec.get("family")
            if fam not in FAMILIES:
                raise bad(f"task {task!r} has family {fam!r}, expected one of {FAMILIES}")
            x = np.asarray(npz[key], dtype=np.float64)
            if x.ndim != 3 or list(x.shape) != list(spec.get("shape", [])) or min(x.shape) < 1:
                raise bad(f"task {task!r}: array of shape {x.shape}, recorded {spec.get('shape')}")
            if not np.isfinite(x).all():
                raise bad(f"task {task!r}: {int((~np.isfinite(x)).sum())} values are not finite")
            if fam == "unit" and (x.min() < 0.0 or x.max() > 1.0):
                raise bad(f"task {task!r}: a unit metric outside [0, 1] ({x.min():g}..{x.max():g})")
            if fam == "loss" and x.min() < 0.0:
                raise bad(f"task {task!r}: a negative loss ({x.min():g})")
            sc = -x if fam == "loss" else x
            out[task] = {
                "family": fam,
                "metric": str(spec.get("metric", "")),
                "seeds": sc,
                "true": sc.mean(axis=1),
                "description": str(spec.get("description", "")),
                "configs": spec.get("configs", []),
            }
        extra = sorted(set(f[: -len("__curves")] for f in npz.files if f.endswith("__curves")) - set(specs))
        if extra:
            raise bad(f"arrays without metadata: {extra}")
    return out


# ----------------------------------------------------------------------------------------------------- summary


def summary_rows(data: dict[str, dict[str, Any]], early_epoch: int = 3) -> list[tuple]:
    """Per task: ``(task, family, configs, best final, median final, ρ(epoch e, final), discordant share,
    seed spread)``, finals in the metric's own orientation, from the seed means."""
    from scipy.stats import spearmanr

    rows = []
    for task, d in data.items():
        tr = d["true"]
        e = min(early_epoch, tr.shape[1]) - 1
        sign = -1.0 if d["family"] == "loss" else 1.0
        fin = sign * tr[:, -1]
        best = fin.min() if d["family"] == "loss" else fin.max()
        a, b = tr[:, e], tr[:, -1]
        rho = float(spearmanr(a, b).statistic) if np.ptp(a) > 0 and np.ptp(b) > 0 else float("nan")
        i, j = np.triu_indices(tr.shape[0], 1)
        da, db = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
        both = (da != 0) & (db != 0)
        disc = float(np.mean(da[both] != db[both])) if both.any() else float("nan")
        spread = float(np.mean(np.abs(np.ptp(d["seeds"][:, :, -1], axis=1))))
        rows.append((task, d["family"], tr.shape[0], float(best), float(np.median(fin)), rho, disc, spread))
    return rows


def print_summary(rows: list[tuple], early_epoch: int = 3) -> None:
    head = (f"{'task':<22}{'family':<7}{'configs':>8}{'best final':>12}{'median final':>14}"
            f"{f'rho(e{early_epoch},end)':>14}{'discordant':>12}{'seed spread':>13}")  # fmt: skip
    print(head)
    print("-" * len(head))
    for t, fam, n, best, med, rho, disc, spread in rows:
        print(f"{t:<22}{fam:<7}{n:>8}{best:>12.4f}{med:>14.4f}{rho:>14.3f}{disc:>12.3f}{spread:>13.4f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", type=int, default=40, help="configurations per task")
    ap.add_argument("--seeds", type=int, default=2, help="training seeds per configuration")
    ap.add_argument("--epochs", type=int, default=27, help="epochs per run (one value recorded after each)")
    ap.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS), metavar="TASK")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (1: in this process)")
    ap.add_argument("--out", default=None, help=f"the .npz to write (default {DEFAULT_PATH.relative_to(ROOT)}; "
                    "--quick: benchmarks/results/new_kinds_quick.npz)")  # fmt: skip
    ap.add_argument("--quick", action="store_true", help="6 configurations, 9 epochs (a smoke test)")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.configs, args.epochs = min(args.configs, 6), min(args.epochs, 9)
    if min(args.configs, args.seeds, args.epochs) < 1:
        ap.error("--configs, --seeds and --epochs must be >= 1")
    out = Path(args.out) if args.out else (ROOT / "benchmarks/results/new_kinds_quick.npz" if args.quick
                                            else DEFAULT_PATH)  # fmt: skip
    t0 = time.perf_counter()
    curves, cfgs = generate(args.tasks, args.configs, args.seeds, args.epochs, args.jobs, not args.no_progress)
    wall = time.perf_counter() - t0
    save(out, curves, cfgs, {k: v for k, v in vars(args).items() if k != "no_progress"})
    data = load_new_kinds(out)
    print_summary(summary_rows(data))
    print(f"\n{sum(c.size for c in curves.values())} values in {wall:.0f} s; wrote {out} "
          f"({out.stat().st_size / 1024:.0f} KiB)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
