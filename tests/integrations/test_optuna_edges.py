"""MFSampler() + MFPruner() on the objectives a new user writes that go wrong (issue 24): a configuration whose
training ends in NaN, configurations that all fail, an objective with no parameters, steps reported in decreasing
order, a loss that turns negative. Each is reproduced as the user met it, on the README's objective."""

from __future__ import annotations

import math
import warnings

import pytest

optuna = pytest.importorskip("optuna", reason="the 'optuna' extra is not installed")

from mf_sched.integrations.optuna import MFPruner, MFSampler, finish, train_to  # noqa: E402
from optuna.trial import TrialState  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.ERROR)


def accuracy(x: int, epoch: int) -> float:
    """The README's objective: configuration x at an epoch."""
    return (0.3 + 0.08 * x) * (1 - 0.3 * math.exp(-epoch / 4))


def zero_argument_study(**sampler_kwargs: object) -> tuple[MFSampler, optuna.Study]:
    sampler = MFSampler(seed=0, **sampler_kwargs)  # type: ignore[arg-type]
    return sampler, optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())


# ------------------------------------------------------------------------------ 1. a failed trial is not the answer
def nan_at_the_end(trial: optuna.Trial) -> float:
    """x = 7 (the best) reports finite values up to epoch 27 and then returns NaN."""
    x = trial.suggest_categorical("x", list(range(8)))
    acc = 0.0
    for epoch in range(1, 28):
        acc = accuracy(x, epoch)
        trial.report(acc, epoch)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return float("nan") if x == 7 else acc


def test_a_configuration_whose_result_fails_is_never_recommended() -> None:
    """It was recommended (reason "finished", nothing uncovered) although its only trial was FAIL and
    study.best_trial was x = 6: the values a FAIL trial reported at the top step made it the incumbent."""
    sampler, study = zero_argument_study()
    study.optimize(nan_at_the_end, n_trials=300, catch=(RuntimeError,))
    rec = sampler.recommendation(study)
    failed = [t for t in study.trials if t.state == TrialState.FAIL]
    assert {t.params["x"] for t in failed} == {7} and len(failed) == 3  # evaluated again, max_failures = 3 times
    assert rec.done and rec.params == {"x": 6} == study.best_trial.params
    assert rec.details["uncovered"] == [7] and not rec.certified  # x = 7 is named: the answer does not cover it
    assert len(study.trials) < 300  # and the study stopped by itself


CHECKPOINTS: dict[int, int] = {}


def resumable_nan_at_the_top(trial: optuna.Trial) -> float:
    """The resumable form: x = 7 ends with ``return finish(trial, float("nan"))`` at the top rung."""
    x = trial.suggest_categorical("x", list(range(8)))
    acc, end = 0.0, train_to(trial)
    for epoch in range(CHECKPOINTS.get(x, 0) + 1, end + 1):
        acc = accuracy(x, epoch)
        trial.report(acc, epoch)
    CHECKPOINTS[x] = end
    return finish(trial, float("nan") if x == 7 and end == 27 else acc)


def test_a_resumable_configuration_that_finishes_with_nan_is_never_recommended() -> None:
    CHECKPOINTS.clear()
    sampler, study = zero_argument_study(max_resource=27)
    study.optimize(resumable_nan_at_the_top, n_trials=300, catch=(RuntimeError,))
    rec = sampler.recommendation(study)
    assert rec.done and rec.params == {"x": 6} == study.best_trial.params
    assert rec.details["uncovered"] == [7] and not rec.certified
    top7 = [t for t in study.trials if t.params["x"] == 7 and t.system_attrs["mf:fidelity"] == 3]
    assert len(top7) == 3 and all(t.state == TrialState.FAIL for t in top7)
