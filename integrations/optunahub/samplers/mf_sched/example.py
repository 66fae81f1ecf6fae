"""The README's example as a script: `python example.py` (needs network access to OptunaHub's registry)."""

from __future__ import annotations

import math

import optuna
import optunahub

mod = optunahub.load_module("samplers/mf_sched")


def objective(trial: optuna.Trial) -> float:
    x = trial.suggest_categorical("x", list(range(8)))
    acc = 0.0
    for epoch in range(1, 28):
        acc = (0.3 + 0.08 * x) * (1 - 0.3 * math.exp(-epoch / 4))  # your training epoch
        trial.report(acc, epoch)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return acc


if __name__ == "__main__":
    sampler = mod.MFSampler()
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=mod.MFPruner())
    study.optimize(objective, n_trials=100)
    rec = sampler.recommendation(study)
    print(rec.params, rec.details["epsilon"], rec.details["bias_source"])
    print(study.user_attrs["race:summary"])
