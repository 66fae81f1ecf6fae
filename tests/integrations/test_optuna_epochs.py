"""What an ordinary objective (no checkpoint: every trial trains from epoch 1, MFPruner prunes) costs under
MFSampler() + MFPruner(), as a user measures it: never more epochs than training every candidate once."""

from __future__ import annotations

import math
import random
import warnings

import pytest

optuna = pytest.importorskip("optuna", reason="the 'optuna' extra is not installed")

from mf_sched.integrations.optuna import MFPruner, MFSampler  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.ERROR)

K, R = 8, 27


def ordinary(direction: str, choices: list[int], spread: float):
    """Loss curves (minimize) or accuracy curves (maximize) over x; `spread` sets how far apart the configurations
    end (0.01: so close that the race cannot tell them apart and trains each to the top)."""

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_categorical("x", choices)
        v = 0.0
        for epoch in range(1, R + 1):
            if direction == "minimize":
                v = (1.3 - spread * x) * (1 + 0.3 * math.exp(-epoch / 4))
            else:
                v = (0.3 + spread * x) * (1 - 0.3 * math.exp(-epoch / 4))
            trial.report(v, epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return v

    return objective


def epochs_trained(study: optuna.Study) -> int:
    """Every epoch every trial trained (an ordinary objective starts each trial at epoch 1)."""
    return sum(len(t.intermediate_values) for t in study.trials)


@pytest.mark.parametrize("direction", ["minimize", "maximize"])
@pytest.mark.parametrize("spread", [0.01, 0.08])
def test_an_ordinary_objective_never_trains_more_than_every_candidate_once(direction: str, spread: float) -> None:
    """Before: 219–222 epochs on the close loss curves (> 8 × 27 = 216): configurations paused at a cheap rung
    were later trained again from scratch, to the top."""
    for seed in range(3):
        choices = list(range(K))
        if seed:
            random.Random(seed).shuffle(choices)
        sampler = MFSampler(seed=seed)
        study = optuna.create_study(direction=direction, sampler=sampler, pruner=MFPruner())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            study.optimize(ordinary(direction, choices, spread), n_trials=200)
        rec = sampler.recommendation(study)
        assert rec.params == {"x": K - 1} and rec.done and rec.certified, (seed, rec.details["certificate"])
        assert epochs_trained(study) == sampler.resources_spent(study) <= K * R, seed


def test_surplus_trials_of_parallel_workers_train_nothing() -> None:
    """`study.optimize(n_jobs=4)` in memory: a worker that finds every open configuration held by the others gets a
    surplus trial. Before: it was pruned at its first report, so it trained an epoch that nothing used (2–5 per
    study of the README's objective); now it is pruned at its first suggest."""
    for _ in range(3):
        sampler = MFSampler()
        study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            study.optimize(ordinary("maximize", list(range(K)), 0.08), n_trials=100, n_jobs=4)
        rec = sampler.recommendation(study)
        assert rec.params == {"x": K - 1} and rec.done
        surplus = [t for t in study.trials if t.system_attrs.get("mf:surplus")]
        assert all(not t.intermediate_values and not t.params for t in surplus), [t.number for t in surplus]
        assert epochs_trained(study) == sampler.resources_spent(study)
