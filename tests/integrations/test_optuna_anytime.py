"""Anytime racing through the Optuna adapters: metric families, the budget, the order of candidates, and a study
whose own curves contradict the bound (issue: curve-aware, anytime racing)."""

from __future__ import annotations

import math
import warnings

import optuna
import pytest
from mf_sched.integrations.optuna import MFPruner, MFSampler
from optuna.trial import TrialState

optuna.logging.set_verbosity(optuna.logging.WARNING)

QUALITY = [0.55, 0.62, 0.9, 0.7, 0.4, 0.85, 0.5, 0.6]


def acc(q: float, epoch: int) -> float:
    return q * (1 - 0.5 * math.exp(-epoch / 4))


def objective(metric=lambda a: a):
    def run(trial: optuna.Trial) -> float:
        q = trial.suggest_categorical("q", QUALITY)
        v = 0.0
        for epoch in range(1, 28):
            v = metric(acc(q, epoch))
            trial.report(v, epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return v

    return run


def test_negated_losses_percentages_and_error_rates_race_like_their_family():
    cases = [
        ("maximize", lambda a: math.log(a), "a negated loss"),  # neg_log_loss-like: the log-likelihood, <= 0
        ("maximize", lambda a: 100 * a, "a percentage"),
        ("minimize", lambda a: 1 - a, "an error rate"),
    ]
    for direction, metric, kind in cases:
        sampler = MFSampler(seed=0)
        study = optuna.create_study(direction=direction, sampler=sampler, pruner=MFPruner())
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)  # a recognised family: no "fits no family" warning
            study.optimize(objective(metric), n_trials=100)
        rec = sampler.recommendation(study)
        assert rec.params == {"q": 0.9} and rec.done, kind
        assert kind in rec.details["bias_source"]
        # something was stopped or paused — or, where nothing could be told apart yet when a pause would have been
        # needed (the negated loss), every configuration was trained once and no more (never over K × 27 epochs)
        assert any(t.state == TrialState.PRUNED for t in study.trials) or sampler.resources_spent(study) <= 8 * 27


def test_a_metric_of_no_family_warns_once_per_study_and_names_the_fix():
    sampler = MFSampler(seed=0)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        study.optimize(objective(lambda a: 10 * a - 5), n_trials=100)  # a reward of both signs
    msgs = [str(w.message) for w in caught if "fit no metric family" in str(w.message)]
    assert len(msgs) == 1 and "metric_family=" in msgs[0] and "race_bias=" in msgs[0]
    # named, it races like an accuracy would (an affine map of one)
    named = MFSampler(seed=0, metric_family="accuracy")
    study = optuna.create_study(direction="maximize", sampler=named, pruner=MFPruner())
    study.optimize(objective(), n_trials=100)
    assert "a score in [0, 1]" in named.recommendation(study).details["bias_source"]
    with pytest.raises(ValueError, match="metric_family = 'reward' is unknown"):
        MFSampler(metric_family="reward")


def test_budget_is_enforced_exactly_and_the_answer_is_the_best_evidence():
    for budget in (20, 45):
        sampler = MFSampler(seed=1, budget=budget)
        study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
        study.optimize(objective(), n_trials=200)
        rec = sampler.recommendation(study)
        assert rec.resources_spent == budget  # the trial that spent the last epoch was pruned there
        assert sum(bool(t.system_attrs.get("mf:budget_spent")) for t in study.trials) == 1
        assert not rec.done and rec.params is not None  # before any trial completed: the best latest value
    sampler = MFSampler(seed=1, budget=10_000)  # more than the race needs: it ends by itself, certified
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    study.optimize(objective(), n_trials=200)
    rec = sampler.recommendation(study)
    assert rec.done and rec.resources_spent < 10_000 and rec.details["epsilon"] is not None
    with pytest.raises(ValueError, match="budget = 0 is out of range"):
        MFSampler(budget=0)
    # MFPruner(budget=) alone, with any sampler
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0),
                                pruner=MFPruner(budget=60))  # fmt: skip
    study.optimize(objective(), n_trials=200)
    assert sum(t.last_step or 0 for t in study.trials) == 60


def test_the_outcome_does_not_depend_on_the_order_choices_are_written_in():
    """The start order is a seeded permutation of the candidates: listing the choices reversed starts the same
    *positions* first, so the configurations started first differ, and the answer is the same."""
    firsts, answers = [], []
    for choices in (QUALITY, QUALITY[::-1]):

        def obj(trial: optuna.Trial, choices=choices) -> float:
            q = trial.suggest_categorical("q", choices)
            v = 0.0
            for epoch in range(1, 28):
                v = acc(q, epoch)
                trial.report(v, epoch)
                if trial.should_prune():
                    raise optuna.TrialPruned()
            return v

        sampler = MFSampler(seed=0, search_space={"q": choices}, max_resource=27)
        study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
        study.optimize(obj, n_trials=100)
        firsts.append([t.params["q"] for t in study.trials[:3]])
        answers.append(sampler.recommendation(study).params)
    assert answers == [{"q": 0.9}, {"q": 0.9}]
    assert firsts[0] != firsts[1]
    assert firsts[0] != QUALITY[:3] and firsts[1] != QUALITY[::-1][:3]  # neither starts in the written order


def test_curves_that_contradict_the_bound_widen_it_and_stop_nothing():
    """Every run is flat until its last epoch and then jumps to its quality: far beyond what the shipped bound
    allows after a third of training. Once such a run finishes, the bound is raised; no configuration can then be
    stopped, every one is trained to the top, and the answer is certified by exhaustion (a full search), not by
    the bound."""

    def late(trial: optuna.Trial) -> float:
        q = trial.suggest_categorical("q", QUALITY)
        v = 0.0
        for epoch in range(1, 28):
            v = 0.1 if epoch < 27 else q
            trial.report(v, epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return v

    sampler = MFSampler(seed=0)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    study.optimize(late, n_trials=100)
    rec = sampler.recommendation(study)
    assert rec.params == {"q": max(QUALITY)} and "raised" in rec.details["bias_source"]
    assert rec.certified and "none stopped (a full search: no bound was used)" in rec.details["certificate"]
    assert study.user_attrs.get("race:certificate", {}).get("certified") is True
