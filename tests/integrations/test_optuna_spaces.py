"""Search spaces MFSampler cannot race as fixed arms, as a user meets them: a conditional objective given an
explicit ``search_space=`` (docs/optuna.md: "Conditional spaces: a clear error with an explicit space, the fallback
otherwise"), and a range widened mid-study."""

from __future__ import annotations

import warnings

import pytest

optuna = pytest.importorskip("optuna", reason="the 'optuna' extra is not installed")

from mf_sched.integrations.optuna import MFPruner, MFSampler  # noqa: E402
from optuna.distributions import FloatDistribution  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.ERROR)


def conditional(trial: optuna.Trial) -> float:
    """`depth` exists only for the "deep" architecture (Optuna's documented conditional pattern)."""
    kind = trial.suggest_categorical("kind", ["shallow", "deep"])
    depth = trial.suggest_int("depth", 2, 4) if kind == "deep" else 1
    acc = 0.0
    for epoch in range(1, 10):
        acc = (0.5 + 0.05 * depth) * (1 - 0.3 / epoch)
        trial.report(acc, epoch)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return acc


@pytest.mark.parametrize(
    "space",
    [
        {"kind": ["shallow", "deep"], "depth": [2, 3, 4]},  # a grid
        {"kind": ["shallow", "deep"], "depth": optuna.distributions.IntDistribution(2, 4)},
        {"kind": ["shallow", "deep"], "depth": [2, 3, 4], "lr": FloatDistribution(1e-3, 1e-1, log=True)},
    ],
)
def test_a_conditional_objective_with_an_explicit_search_space_is_a_clear_error(space: dict) -> None:
    """Before: no error — the "shallow" trials never suggested `depth` and the race went on over arms that were
    the same configuration (the docs promise a clear error)."""

    def objective(trial: optuna.Trial) -> float:
        if "lr" in space:
            trial.suggest_float("lr", 1e-3, 1e-1, log=True)
        return conditional(trial)

    sampler = MFSampler(search_space=space, seed=0)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    with pytest.raises(ValueError) as err:
        study.optimize(objective, n_trials=40)
    msg = str(err.value)
    assert "search_space=" in msg and "'depth'" in msg and "accepted:" in msg  # argument, parameter, what is accepted
    assert "conditional" in msg


def test_an_extra_parameter_with_an_explicit_search_space_names_the_argument_and_what_is_accepted() -> None:
    sampler = MFSampler(search_space={"kind": ["shallow", "deep"]}, seed=0)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    with pytest.raises(ValueError) as err:
        study.optimize(conditional, n_trials=40)
    msg = str(err.value)
    assert "search_space=" in msg and "'depth'" in msg and "accepted:" in msg


def test_a_conditional_objective_without_a_search_space_goes_to_the_fallback() -> None:
    sampler = MFSampler(seed=0)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    study.enqueue_trial({"kind": "deep", "depth": 3})  # the first trial learns {kind, depth}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        study.optimize(conditional, n_trials=12)
    assert sampler.dynamic_space
    assert any("without suggesting 'depth'" in str(w.message) and "fallback" in str(w.message) for w in caught)


def test_a_range_widened_mid_study_warns_with_the_old_and_the_new_distribution() -> None:
    """Before: "trial 6 suggests 'x' with FloatDistribution(...), which is not in MFSampler's search space ['x']"
    — 'x' is in it; what changed (its range) was not said."""
    high = [10.0]

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, high[0])
        acc = 0.0
        for epoch in range(1, 10):
            acc = (0.5 + 0.01 * x) * (1 - 0.3 / epoch)
            trial.report(acc, epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return acc

    sampler = MFSampler(n_candidates=8, seed=0)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    study.optimize(objective, n_trials=4)
    high[0] = 20.0  # the user widens the range and resumes the study
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        study.optimize(objective, n_trials=2)
    msgs = [str(w.message) for w in caught if "'x'" in str(w.message)]
    assert msgs, [str(w.message) for w in caught]
    old, new = repr(FloatDistribution(0.0, 10.0)), repr(FloatDistribution(0.0, 20.0))
    assert old in msgs[0] and new in msgs[0] and "changed" in msgs[0]
    assert "is not in MFSampler's search space" not in msgs[0]
    assert sampler.dynamic_space
