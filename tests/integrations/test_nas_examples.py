"""The PyTorch NAS examples (examples/nas): model and data, checkpoints and resuming, both scripts end to end."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the 'torch' extra is not installed")
pytest.importorskip("optuna", reason="the 'optuna' extra is not installed")
pytest.importorskip("sklearn", reason="the 'gp' extra (scikit-learn) is not installed")

from examples.nas import nas_common as nc  # noqa: E402

TINY_DATA = dict(image_size=8, n_train=200, n_val=200, n_test=200)
TINY_ARGS = [
    "--dataset", "digits", "--image-size", "8", "--n-train", "200", "--n-val", "200", "--n-test", "200",
    "--candidates", "4", "--epochs", "1", "2",
]  # fmt: skip


@pytest.fixture(scope="module")
def digits() -> nc.Splits:
    nc.configure_torch("cpu")
    return nc.load_data("digits", **TINY_DATA)


@pytest.fixture(scope="module")
def cands() -> list[dict]:
    return nc.candidates(8, seed=0)


# ------------------------------------------------------------------------------------------- model and space
def test_docstring_examples_run() -> None:
    import doctest

    result = doctest.testmod(nc, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 8 and result.failed == 0


def test_candidates_are_valid_and_build_networks(cands, digits) -> None:
    assert len(cands) == 8 and len({nc.config_key(c) for c in cands}) == 8
    assert nc.candidates(8, seed=0) == cands and nc.candidates(8, seed=1) != cands
    for c in cands:
        assert nc.check_params(c) == c
        out = nc.Net(c, digits.in_channels, digits.n_classes)(digits.x_val[:3])
        assert out.shape == (3, 10)
    with pytest.raises(ValueError, match="op_1_0 = 'conv' is out of range"):
        nc.check_params({**cands[0], "op_1_0": "conv"})
    with pytest.raises(ValueError, match=r"lr = 2.0 is out of range; accepted: a number in"):
        nc.check_params({**cands[0], "lr": 2.0})
    with pytest.raises(ValueError, match="differ from the search space"):
        nc.check_params({"lr": 0.01})


def test_cell_operations_follow_nas_bench_201() -> None:
    x = torch.randn(2, 3, 5, 5)
    assert torch.allclose(
        nc.make_op("avg_pool_3x3", 3)(x), torch.nn.functional.avg_pool2d(x, 3, 1, 1, count_include_pad=False), atol=1e-6
    )
    assert torch.equal(nc.make_op("skip_connect", 3)(x), x)
    assert torch.count_nonzero(nc.make_op("none", 3)(x)) == 0
    # a cell whose edges into the last node are all "none" passes nothing on
    cell = nc.Cell(["nor_conv_3x3", "none", "none"], 3)
    assert torch.count_nonzero(cell(x)) == 0
    with pytest.raises(ValueError, match="operation 'max_pool' is unknown"):
        nc.make_op("max_pool", 3)


# ------------------------------------------------------------------------------------------- resume and budget
def test_a_run_that_climbs_resumes_and_trains_no_epoch_twice(tmp_path: Path, cands, digits) -> None:
    p = cands[0]
    store, meter = nc.CheckpointStore(tmp_path / "climb"), nc.EpochMeter()
    first = nc.train_to(p, 1, digits, store, meter=meter)
    second = nc.train_to(p, 3, digits, store, meter=meter)
    assert (first.trained, first.resumed_from) == (1, 0)
    assert (second.trained, second.resumed_from) == (2, 1) and meter.spent == 3
    again = nc.train_to(p, 3, digits, store, meter=meter)  # already there: nothing to train
    assert again.trained == 0 and again.curve == second.curve and meter.spent == 3
    straight = nc.train_to(p, 3, digits, nc.CheckpointStore(tmp_path / "straight"))
    assert second.curve == straight.curve  # deterministic: resuming changes nothing
    m1, o1 = nc.build(p, digits, 0)
    m2, o2 = nc.build(p, digits, 0)
    store.load(nc.config_key(p), 3, m1, o1)
    nc.CheckpointStore(tmp_path / "straight").load(nc.config_key(p), 3, m2, o2)
    for a, b in zip(m1.state_dict().values(), m2.state_dict().values()):
        assert torch.allclose(a, b)


def test_the_epoch_budget_is_enforced_exactly_and_callbacks_can_stop(tmp_path: Path, cands, digits) -> None:
    meter = nc.EpochMeter(budget=2)
    res = nc.train_to(cands[1], 3, digits, nc.CheckpointStore(tmp_path), meter=meter)
    assert (res.ended, res.epoch, res.trained, meter.spent, meter.exhausted) == ("budget", 2, 2, 2, True)
    seen: list[int] = []
    res = nc.train_to(cands[2], 3, digits, nc.CheckpointStore(tmp_path), on_epoch=lambda e, v: seen.append(e) or e == 2)
    assert res.ended == "stopped" and res.epoch == 2 and seen == [1, 2]
    # replay shows the recorded curve first (no training), then trains on
    seen.clear()
    store = nc.CheckpointStore(tmp_path / "r")
    nc.train_to(cands[3], 1, digits, store)
    res = nc.train_to(cands[3], 2, digits, store, on_epoch=lambda e, v: seen.append(e) or False, replay=True)
    assert seen == [1, 2] and res.trained == 1
    with pytest.raises(ValueError, match="budget = -1 is out of range"):
        nc.EpochMeter(-1)


def test_checkpoints_are_validated_on_load(tmp_path: Path, cands, digits) -> None:
    store = nc.CheckpointStore(tmp_path)
    a, b = cands[0], cands[1]
    nc.train_to(a, 1, digits, store)
    model, opt = nc.build(b, digits, 0)
    ka, kb = nc.config_key(a), nc.config_key(b)
    os.replace(store.path(ka, 1), store.path(kb, 1))  # a's weights under b's name
    with pytest.raises(ValueError, match="holds .* at epoch 1, not"):
        store.load(kb, 1, model, opt)

    class Evil:
        def __reduce__(self):
            return (print, ("never runs",))

    torch.save({"key": kb, "payload": Evil()}, store.path(kb, 2))
    with pytest.raises(ValueError, match="cannot be read as weights"):
        store.load(kb, 2, model, opt)
    torch.save({"key": kb, "epoch": 3}, store.path(kb, 3))
    with pytest.raises(ValueError, match="unexpected content"):
        store.load(kb, 3, model, opt)
    with pytest.raises(ValueError, match="not a config_key"):
        store.path("../../etc", 1)


# ------------------------------------------------------------------------------------------- data
def _folder(root: Path, classes: dict[str, int], mode: str = "RGB", size: tuple[int, int] = (9, 7)) -> None:
    from PIL import Image

    for c, n in classes.items():
        (root / c).mkdir(parents=True)
        for i in range(n):
            Image.new(mode, size, 30 * i if mode == "L" else (30 * i, 10, 200)).save(root / c / f"{i}.png")


def test_image_folder_loader(tmp_path: Path) -> None:
    _folder(tmp_path / "rgb" / "train", {"cat": 6, "dog": 5, "emu": 6})
    _folder(tmp_path / "rgb" / "test", {"cat": 2, "dog": 2, "emu": 2}, size=(20, 20))
    x, y, xt, yt, classes = nc.load_image_folder(tmp_path / "rgb", image_size=6)
    assert x.shape == (17, 3, 6, 6) and x.dtype == np.uint8 and classes == ["cat", "dog", "emu"]
    assert np.bincount(y).tolist() == [6, 5, 6] and xt.shape == (6, 3, 6, 6) and yt.tolist() == [0, 0, 1, 1, 2, 2]
    x, y, *_ = nc.load_image_folder(tmp_path / "rgb", image_size=6, max_per_class=2)
    assert len(y) == 6
    s = nc.load_data(data_path=tmp_path / "rgb", image_size=6, n_train=None, n_val=6, n_test=6)
    assert (len(s.y_train), len(s.y_val), len(s.y_test), s.n_classes, s.in_channels) == (11, 6, 6, 3, 3)
    assert torch.allclose(s.x_train.mean(dim=(0, 2, 3)), torch.zeros(3), atol=1e-4)  # training statistics
    _folder(tmp_path / "gray", {"a": 4, "b": 4}, mode="L")  # no train/ folder: one pool, split here
    s = nc.load_data(data_path=tmp_path / "gray", image_size=5, n_train=None, n_val=2, n_test=2)
    assert s.in_channels == 1 and len(s.y_train) == 4


def test_image_folder_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a directory"):
        nc.load_image_folder(tmp_path / "missing")
    _folder(tmp_path / "one", {"a": 2})
    with pytest.raises(ValueError, match="1 class folder"):
        nc.load_image_folder(tmp_path / "one")
    _folder(tmp_path / "empty", {"a": 2})
    (tmp_path / "empty" / "b").mkdir()
    with pytest.raises(ValueError, match="holds no image file"):
        nc.load_image_folder(tmp_path / "empty")
    _folder(tmp_path / "bad", {"a": 2, "b": 2})
    (tmp_path / "bad" / "b" / "x.png").write_bytes(b"not an image")
    with pytest.raises(ValueError, match="cannot read image .*x.png"):
        nc.load_image_folder(tmp_path / "bad")
    _folder(tmp_path / "split" / "train", {"a": 2, "b": 2})
    _folder(tmp_path / "split" / "test", {"a": 2, "c": 2})
    with pytest.raises(ValueError, match="differ from the training folder"):
        nc.load_image_folder(tmp_path / "split")
    with pytest.raises(ValueError, match="image_size = 2 is out of range"):
        nc.load_image_folder(tmp_path / "bad", image_size=2)


def test_builtin_datasets_split_without_overlap() -> None:
    s = nc.load_data("digits", **TINY_DATA)
    assert s.describe() == "digits: 200 train / 200 validation / 200 test images, 1×8×8, 10 classes"
    rows = {tuple(r.flatten().tolist()) for r in s.x_test}
    assert not rows & {tuple(r.flatten().tolist()) for r in s.x_train}
    with pytest.raises(ValueError, match="dataset = 'cifar' is unknown"):
        nc.load_data("cifar")
    with pytest.raises(ValueError, match="device = 'tpu' is unknown"):
        nc.configure_torch("tpu")


# ------------------------------------------------------------------------------------------- the Optuna example
def test_optuna_nas_runs_compares_and_reports(tmp_path: Path, capsys) -> None:
    import optuna

    from examples.nas import optuna_nas

    # a stored full search for these settings whose curves are not this run's: --compare says so
    settings = {**TINY_SETTINGS, "data_path": None, "max_per_class": None, "seed": 0, "device": "cpu", "threads": 1}
    ref = _reference(nc.candidates(4, seed=0), settings, [[0.5, 0.6], [0.4, 0.9], [0.1, 0.2], [0.3, 0.3]])
    stored = optuna_nas.write_reference(ref, tmp_path / "ref.json")
    out = optuna_nas.main([*TINY_ARGS, "--compare", "--results", str(tmp_path), "--reference", str(stored)])
    printed = capsys.readouterr().out
    assert "recommended: |" in printed and "\ncertificate: " in printed and "TEST accuracy" in printed
    assert "a full-fidelity search of these 4 candidates (computed above, 8 epochs) answers candidate" in printed
    assert "note: the stored full search" in printed and "(answer 1 vs " in printed
    page = (tmp_path / "nas_race.html").resolve()  # it ends by writing the race's report and printing its path
    assert printed.strip().splitlines()[-1].endswith(str(page)) and "Race report: nas-mf-" in page.read_text()
    saved = json.loads((tmp_path / "nas_optuna.json").read_text())
    assert saved == json.loads(json.dumps(out))
    assert (tmp_path / "nas_optuna.png").stat().st_size > 1000
    mf, tpe, full = saved["methods"]
    assert [m["method"] for m in saved["methods"]] == ["MFSampler+MFPruner", "TPE+Hyperband", "full fidelity"]
    for m in saved["methods"]:
        assert 0 <= m["answer"] < 4 and 0 <= m["test_acc"] <= 1 and 0 <= m["val_acc"] <= 1
        assert m["anytime"] and m["anytime"][-1][1] <= m["val_acc"] + 1e-12
    assert saved["full_fidelity_epochs"] == 8 and full["epochs"] == 8 and full["trials"] == 4
    assert mf["epochs"] <= 8 and saved["saved_fraction"] == pytest.approx(1 - mf["epochs"] / 8)
    assert tpe["budget"] == mf["epochs"] + mf["finish_epochs"] and tpe["epochs"] <= tpe["budget"]
    assert tpe["epochs"] == tpe["budget"] or not tpe["budget_exhausted"]
    # the full-fidelity answer is the best validation accuracy at the last rung
    assert full["val_acc"] == max(c[-1] for c in full["curves"])
    fs = saved["full_search"]
    assert fs["source"] == "computed" and fs["answer"] == full["answer"] and fs["test_acc"] == full["test_acc"]
    assert fs["same_answer"] == (mf["answer"] == full["answer"]) and saved["full_search_unavailable"] is None
    assert fs["val_gap"] == pytest.approx(full["val_acc"] - mf["val_acc"])
    # MF trials resumed: per configuration, the epochs trained over its trials add up to the furthest epoch
    study = optuna.load_study(study_name=mf["study"], storage=saved["storage"])
    per_config: dict[str, list[int]] = {}
    for t in study.trials:
        key = nc.config_key(t.params)
        per_config.setdefault(key, [0, 0])
        per_config[key][0] += t.user_attrs["epochs_trained"]
        per_config[key][1] = max(per_config[key][1], max(t.intermediate_values, default=0))
    assert all(trained == furthest for trained, furthest in per_config.values())
    assert sum(v[0] for v in per_config.values()) == mf["epochs"]
    seen: set[str] = set()
    for t in sorted(study.trials, key=lambda x: x.number):  # a configuration's later trials resume its checkpoint
        key = nc.config_key(t.params)
        assert (t.user_attrs["resumed_from"] > 0) == (key in seen)
        seen.add(key)


TINY_SETTINGS = {"candidates": 4, "epochs": [1, 2], "dataset": "digits", "image_size": 8, "n_train": 200,
                 "n_val": 200, "n_test": 200}  # fmt: skip


def _reference(cands: list[dict], settings: dict, curves: list[list[float]]) -> dict:
    from types import SimpleNamespace

    from examples.nas import optuna_nas

    answer = max(range(len(curves)), key=lambda i: curves[i][-1])
    return optuna_nas.reference_record(
        SimpleNamespace(cands=cands), settings, curves, answer, 0.5, command="python -m examples.nas.optuna_nas "
        "--write-reference", torch_version=torch.__version__, data="synthetic", wall_s=1.0,
    )  # fmt: skip


def test_the_stored_full_search_is_validated_and_matched_to_the_settings(tmp_path: Path, cands) -> None:
    from examples.nas import optuna_nas as on

    settings = {"candidates": 8, "epochs": [1, 2], "seed": 0, "device": "cpu"}
    keys = [nc.config_key(c) for c in cands]
    curves = [[0.1 * i, 0.05 + 0.1 * i] for i in range(8)]
    curves[2] = [0.3, 0.9]  # the best at the last epoch
    good = _reference(cands, settings, curves)
    path = on.write_reference(good, tmp_path / "ref.json")
    ref = on.read_reference(path)
    assert (ref["answer"], ref["val_acc"], ref["test_acc"]) == (2, 0.9, 0.5) and ref["val_curves"] == curves
    assert on.stored_full_search(path, settings, keys, torch.__version__) == (ref, "")
    # other settings, other candidates, another torch minor version: not this run's (and says why)
    for kw, why in [
        (dict(settings={**settings, "candidates": 4}), "it was made with candidates=8"),
        (dict(keys=keys[::-1]), "its candidates differ"),
        (dict(torch_version="1.0.0"), "it was made with torch"),
    ]:
        args = {"settings": settings, "keys": keys, "torch_version": torch.__version__, **kw}
        got, reason = on.stored_full_search(path, **args)
        assert got is None and why in reason
    assert on.stored_full_search(path, settings, keys, torch.__version__.split("+")[0] + ".7")[0] is not None

    # malformed files: one reason each, never an exception from stored_full_search
    def bad(**change):
        rec = {**good, **change}
        return json.dumps(rec, allow_nan=True)

    cases = {
        "missing.json": None,
        "list.json": "[1, 2]",
        "text.json": "curves = __import__('os').system('true')",
        "nan.json": bad(val_curves=[[float("nan"), 0.5]] + curves[1:]),
        "short.json": bad(val_curves=curves[:7]),
        "ragged.json": bad(val_curves=[[0.1]] + curves[1:]),
        "bool.json": bad(val_curves=[[True, 0.1]] + curves[1:]),
        "range.json": bad(val_curves=[[0.1, 1.5]] + curves[1:]),
        "answer.json": bad(answer=0),
        "val.json": bad(val_acc=0.8),
        "test.json": bad(test_acc="0.9"),
        "format.json": bad(format=2),
        "fields.json": bad(settings={"candidates": 8}),
        "cands.json": bad(candidates=[{"key": 1}] * 8),
    }
    for name, text in cases.items():
        f = tmp_path / name
        if text is not None:
            f.write_text(text)
            with pytest.raises(ValueError):
                on.read_reference(f)
        got, reason = on.stored_full_search(f, settings, keys, torch.__version__)
        assert got is None and name in reason and ("does not exist" if text is None else "is malformed") in reason
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00")
    assert on.stored_full_search(tmp_path / "binary.json", settings, keys, torch.__version__)[0] is None
    with pytest.raises(ValueError, match="answer = 0"):  # what --write-reference writes is checked first
        on.write_reference({**good, "answer": 0}, tmp_path / "never.json")
    assert not (tmp_path / "never.json").exists()


def test_the_comparison_line_says_whether_the_answers_agree() -> None:
    from examples.nas import optuna_nas as on

    study = {"answer": 4, "val_acc": 0.945, "test_acc": 0.936}
    fs = on.full_search_entry(0, 0.959, 0.931, "stored", study)
    assert fs == {"answer": 0, "val_acc": 0.959, "test_acc": 0.931, "source": "stored", "same_answer": False,
                  "val_gap": 0.014}  # fmt: skip
    line = on.comparison_line(fs, study, 16, "stored in x.json")
    assert line == (
        "a full-fidelity search of these 16 candidates (stored in x.json) answers candidate 0: validation 0.959 / "
        "test 0.931; this study answers candidate 4: validation 0.945 / test 0.936 — not the full search's answer "
        "(0.014 lower in validation accuracy)"
    )
    same = {"answer": 0, "val_acc": 0.959, "test_acc": 0.931}
    fs = on.full_search_entry(0, 0.959, 0.931, "computed", same)
    assert fs["same_answer"] and fs["val_gap"] == 0
    assert on.comparison_line(fs, same, 16, "computed").endswith("validation 0.959 / test 0.931 — the same answer")
    tie = {"answer": 3, "val_acc": 0.959, "test_acc": 0.94}
    line = on.comparison_line(on.full_search_entry(0, 0.959, 0.931, "computed", tie), tie, 16, "computed")
    assert line.endswith("— not the full search's answer, but tied with it in validation accuracy")
    none = {"answer": None, "val_acc": None, "test_acc": None}
    fs = on.full_search_entry(0, 0.959, 0.931, "stored", none)
    assert not fs["same_answer"] and fs["val_gap"] is None
    assert on.comparison_line(fs, none, 16, "stored").endswith("; this study has no answer")


# ------------------------------------------------------------------------------------------- the Ray example
def test_ray_schedulers_share_the_epoch_rungs() -> None:
    pytest.importorskip("ray", reason="the 'ray' extra is not installed")
    from mf_sched.integrations.ray import IISEScheduler, SchedulerStateCallback
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler

    from examples.nas import ray_nas

    kw = dict(delta=0.05, sigma=0.02, n=8)
    iise, cbs = ray_nas.make_scheduler("iise", [1, 3, 9], **kw)
    assert isinstance(iise, IISEScheduler) and isinstance(cbs[0], SchedulerStateCallback)
    assert list(iise.ladder.resources) == [1, 3, 9] and iise.time_attr == "epoch"
    asha, cbs = ray_nas.make_scheduler("asha", [1, 3, 9], **kw)
    assert isinstance(asha, ASHAScheduler) and not cbs
    assert "Iter 9.000: None | Iter 3.000: None | Iter 1.000: None" in asha.debug_string()
    assert isinstance(ray_nas.make_scheduler("fifo", [1, 3, 9], **kw)[0], FIFOScheduler)
    with pytest.raises(ValueError, match="scheduler 'pbt' is unknown"):
        ray_nas.make_scheduler("pbt", [1, 3, 9], **kw)


def _check_ray_run(out: dict, tmp_path: Path, kinds: list[str]) -> None:
    from examples.nas import ray_nas

    assert [s["scheduler"] for s in out["schedulers"]] == kinds
    for s in out["schedulers"]:
        assert s["errors"] == 0 and s["trials"] == 4 and 0 <= s["test_acc"] <= 1 and 0 <= s["answer"] < 4
        assert s["epochs"] <= 8 and len(s["curves"]) == 4
        for c in s["curves"]:  # one report per epoch trained: a trial resumed from scratch would report more
            assert c["training_iteration"] == c["epoch"][-1] == len(c[ray_nas.METRIC])
        assert s["epochs"] == sum(c["epoch"][-1] for c in s["curves"])
    saved = json.loads((tmp_path / "ray_nas.json").read_text())
    assert saved["full_fidelity_epochs"] == 8 and len(saved["schedulers"]) == len(kinds)
    assert (tmp_path / "ray_nas.png").stat().st_size > 1000


@pytest.mark.usefixtures("ray_session")
def test_ray_nas_with_iise_scheduler(tmp_path: Path, capsys) -> None:
    from examples.nas import ray_nas

    out = ray_nas.main([*TINY_ARGS, "--schedulers", "iise", "--results", str(tmp_path)])
    assert "IISE certificate" in capsys.readouterr().out
    _check_ray_run(out, tmp_path, ["iise"])
    (iise,) = out["schedulers"]
    # the scheduler's own answer is a best candidate at the last rung (ties may pick another index)
    assert iise["scheduler_best_value"] == pytest.approx(iise["val_acc"])
    # --restore (Tuner.restore) of the finished experiment: the same answer. Ray's experiment snapshots are
    # periodic, so a trial the last snapshot had not yet seen stopped may run on (a few more epochs)
    again = ray_nas.main(["--restore", iise["path"], "--results", str(tmp_path / "restored")])
    (restored,) = again["schedulers"]
    assert restored["val_acc"] == iise["val_acc"] and restored["errors"] == 0
    assert iise["epochs"] <= restored["epochs"] <= 8


@pytest.mark.slow
@pytest.mark.usefixtures("ray_session")
def test_ray_nas_compares_iise_asha_and_fifo(tmp_path: Path) -> None:
    from examples.nas import ray_nas

    out = ray_nas.main([*TINY_ARGS, "--results", str(tmp_path)])
    _check_ray_run(out, tmp_path, ["iise", "asha", "fifo"])
    fifo = out["schedulers"][2]
    assert fifo["epochs"] == 8  # FIFO trains every candidate fully
