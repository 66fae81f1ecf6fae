"""Epochs spent by several workers against one (issue 35): `study.optimize(n_jobs=4)` on the README's objective
(8 choices × 27 epochs, no checkpoint) spends close to what `n_jobs=1` spends, and never more than K × R."""

from __future__ import annotations

import math
import statistics
import warnings

import pytest

optuna = pytest.importorskip("optuna", reason="the 'optuna' extra is not installed")

from mf_sched.integrations.optuna import MFPruner, MFSampler  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.ERROR)

K, R = 8, 27


def acc(q: float, epoch: int) -> float:
    return q * (1 - 0.3 * math.exp(-epoch / 4))


def objective(trial: optuna.Trial) -> float:
    """The README's objective."""
    x = trial.suggest_categorical("x", list(range(K)))
    v = 0.0
    for epoch in range(1, R + 1):
        v = acc(0.3 + 0.08 * x, epoch)
        trial.report(v, epoch)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return v


def test_a_configuration_stopped_between_two_rungs_is_pruned_at_its_next_report() -> None:
    """Two workers, one slower: trial C (a poor configuration) crosses rung 3 while trial B (the best) is also at
    epoch 3 — nothing stops C yet — then B trains to the top, and C reports epoch 4. Before: decisions were taken
    at rung crossings only, so C trained on to rung 9 (5 epochs nothing used; with 4 threads on the README's
    objective, a third of what `n_jobs=4` spent beyond `n_jobs=1`); now it is pruned at epoch 4."""
    sampler = MFSampler(seed=0)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    a = study.ask()
    a.suggest_categorical("x", list(range(K)))
    for e in range(1, R + 1):
        a.report(acc(0.5, e), e)
    study.tell(a, acc(0.5, R))  # the ladder (1, 3, 9, 27) is known
    b, c = study.ask(), study.ask()
    for t in (b, c):
        t.suggest_categorical("x", list(range(K)))
    for e in range(1, 4):
        for t, q in ((b, 0.86), (c, 0.30)):
            t.report(acc(q, e), e)
            assert not t.should_prune(), (t.number, e)  # not enough evidence yet
    for e in range(4, R + 1):
        b.report(acc(0.86, e), e)
        assert not b.should_prune()
    study.tell(b, acc(0.86, R))
    c.report(acc(0.30, 4), 4)
    assert c.should_prune()
    frozen = study._storage.get_trial(c._trial_id)
    assert frozen.system_attrs.get("mf:pruned_rung") == 1  # stopped at rung 3, where the rule stopped it
    study.tell(c, state=optuna.trial.TrialState.PRUNED)
    assert sampler.resources_spent(study) == 2 * R + 4


def epochs(n_jobs: int, seed: int) -> int:
    sampler = MFSampler(seed=seed)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=MFPruner())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study.optimize(objective, n_trials=100, n_jobs=n_jobs)
    rec = sampler.recommendation(study)
    assert rec.params == {"x": K - 1} and rec.done
    return sum(len(t.intermediate_values) for t in study.trials)


def test_four_threads_spend_close_to_one() -> None:
    """16 seeds (the first configuration is the proposer's: 94–129 epochs with one job), 4 threads once each.
    Measured (16 seeds × 3): mean 1.06–1.10 × one job's, before 1.15–1.16 ×; the worst run 156–167 of K × R = 216.
    Threads are nondeterministic: the assertion is on the mean over the 16 runs, with a margin (1.2 ×)."""
    one = [epochs(1, s) for s in range(16)]
    four = [epochs(4, s) for s in range(16)]
    assert max(four) <= K * R and max(one) <= K * R
    assert statistics.mean(four) <= 1.2 * statistics.mean(one), (statistics.mean(four), statistics.mean(one), four)
