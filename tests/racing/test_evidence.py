"""The bound learned from the study's own curves (mf_sched.racing.evidence) and the certificate's one word."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mf_sched import FidelityLadder
from mf_sched.racing.certificate import EXHAUSTIVE
from mf_sched.racing.curve_bound import CurveBound, CurveBoundFit
from mf_sched.racing.engine import RungEliminator
from mf_sched.racing.evidence import EVIDENCE_N, EvidenceModel, fit_evidence_table, study_statistic
from mf_sched.racing.fit import fit_curve_bound, miss_rate

FR = np.array([1 / 27, 1 / 9, 1 / 3, 1.0])
LADDER = FidelityLadder(costs=[1, 3, 9, 27], zeta=[0.3, 0.2, 0.1, 0.0])


def task(rng: np.random.Generator, late: float, n: int = 80) -> np.ndarray:
    """Accuracy-like curves; `late` is the share of the final value gained after 1/3 of training by every
    configuration (a task-level trait: regular tasks have flattened by then, irregular ones have not)."""
    final = rng.uniform(0.5, 0.9, n)
    speed = rng.uniform(0.5, 2.0, n)
    early = final[:, None] * (1 - late) * (1 - np.exp(-FR[None, :-1] * 30 * speed[:, None]))
    cur = np.c_[early, final]
    return cur + rng.normal(0, 0.003, cur.shape)


@pytest.fixture(scope="module")
def fit() -> CurveBoundFit:
    rng = np.random.default_rng(0)
    lates = np.r_[np.full(8, 0.01), np.linspace(0.02, 0.12, 8)]  # regular tasks and tasks that improve late
    tasks = {f"t{i}": task(rng, late) for i, late in enumerate(lates)}
    return fit_curve_bound(tasks, FR, family="toy", n_arms=(8,), ladders=[FR[:-1].tolist()], draws=100,
                           alphas=(0.05, 0.1), tolerances=(0.0, 0.005))  # fmt: skip


def test_the_table_tightens_regular_tasks_and_widens_irregular_ones():
    rng = np.random.default_rng(1)
    T = [rng.normal(mu, 0.2, 100) for mu in np.linspace(-1, 1, 30)]
    S = [t + rng.normal(0, 0.1, t.size) for t in T]  # the study score follows the statistic
    cell = fit_evidence_table(S, T, alpha=0.1)
    prior = fit_evidence_table(S, [np.zeros(t.size) for t in T], alpha=0.1)  # a statistic that says nothing
    assert prior["beta"] == 0.0
    assert cell["beta"] > 0.5
    m = EvidenceModel(prior["q"], (1,), (cell["beta"],), (cell["q"],), (cell["t_lo"],), (cell["t_hi"],))
    assert m.lam(-1.0, 1)[0] < prior["q"] < m.lam(1.0, 1)[0]
    assert m.lam(math.nan, 1)[0] == prior["q"] and m.lam(0.0, 0) == (prior["q"], 0, math.inf)
    # below the calibrated range λ does not extrapolate
    assert m.lam(-50.0, 1)[0] == pytest.approx(m.lam(cell["t_lo"], 1)[0])


def test_study_statistic_averages_the_runs_best_at_the_last_rung():
    assert study_statistic([1.0, 5.0, 3.0], [0.1, 0.9, 0.5], 2) == pytest.approx(4.0)
    assert study_statistic([1.0, 5.0, 3.0], [0.1, 0.9, 0.5], 9) == pytest.approx(3.0)


def test_a_fit_carries_its_evidence_table_and_a_selected_bound_round_trips(fit):
    assert fit.evidence is not None and list(fit.evidence["n"]) == list(EVIDENCE_N)
    again = CurveBoundFit.from_dict(json.loads(json.dumps(fit.to_dict())))
    assert again.evidence is not None
    b = again.select(n_arms=8, alpha=0.05, tolerance=0.005, fractions=FR[:-1])
    assert b.evidence is not None and b.evidence.prior_lam == b.lam
    back = CurveBound.from_dict(json.loads(json.dumps(b.to_dict())))
    assert back.evidence == b.evidence
    plain = b.without_evidence()
    assert plain.evidence is None and plain.lam == b.lam
    with pytest.raises(ValueError, match="evidence"):
        CurveBoundFit.from_dict({**fit.to_dict(), "evidence": {**fit.evidence, "beta": [[1.0]]}})


def test_held_out_miss_rate_with_the_evidence_is_measured(fit):
    rng = np.random.default_rng(5)
    new = {f"n{i}": task(rng, late) for i, late in enumerate([0.01, 0.01, 0.1])}
    prior = miss_rate(fit, new, FR, n_arms=8, alpha=0.1, tolerance=0.005)
    learned = miss_rate(fit, new, FR, n_arms=8, alpha=0.1, tolerance=0.005, evidence_n=3)
    assert 0.0 <= prior <= 1.0 and 0.0 <= learned <= 1.0


def _engine(fit: CurveBoundFit) -> RungEliminator:
    b = fit.select(n_arms=8, alpha=0.05, tolerance=0.005, fractions=FR[:-1])
    return RungEliminator(LADDER, rule="race", race_bias=b)


def test_regular_finished_curves_lower_lambda_and_earn_the_certificate(fit):
    eng = _engine(fit)
    prior = eng.curve_bound.lam
    rng = np.random.default_rng(3)
    x = task(rng, 0.005, n=8)
    order = np.argsort(-x[:, -1])
    for i in order[:3]:  # the three best run to the top: flat after 1/3 of training
        for m in range(4):
            eng.report(int(i), m, float(x[i, m]))
    for i in order[3:]:
        for m in range(3):
            eng.report(int(i), m, float(x[i, m]))
    eng.eliminate()
    cert = eng.certificate()
    assert cert.evidence["n"] == 3 and cert.evidence["used"] == 3
    assert eng.curve_bound.lam == pytest.approx(cert.evidence["lam"], abs=1e-6)
    assert eng.curve_bound.lam < prior  # regular curves: a tighter bound than the shipped one
    assert cert.epsilon is not None  # every other run stopped or at the top: the certificate is earned
    assert cert.certified and cert.sentence().startswith("certified:")
    assert "0.5% + ε" in cert.sentence() and "learned from this study's 3 finished run(s)" in cert.sentence()
    again = RungEliminator.from_state_dict(json.loads(json.dumps(eng.state_dict())))
    assert again.curve_bound.lam == eng.curve_bound.lam
    assert again.certificate().to_dict() == cert.to_dict()


def test_a_slow_starter_that_ends_best_is_never_certified(fit):
    """The slow starter (a sigmoid curve whose mid-point is past the last cheap rung) ends best: the bound is
    widened, the runs it stopped can run again, and nothing is certified — with ε = 0 or otherwise."""
    eng = _engine(fit)
    for m, v in enumerate([0.6, 0.8, 0.85, 0.86]):
        eng.report("fast", m, v)
    for m, v in enumerate([0.5, 0.55, 0.56]):
        eng.report("flat", m, v)
    eng.eliminate()
    prior = eng.curve_bound.lam
    for m, v in enumerate([0.1, 0.12, 0.2, 0.95]):
        eng.report("sigmoid", m, v)
    cert = eng.certificate()
    assert eng.curve_bound.lam > prior
    assert not cert.certified and cert.epsilon is None
    assert cert.sentence().startswith("not certified:") and "ε = 0" not in cert.sentence()
    assert cert.to_dict()["certified"] is False and cert.to_dict()["statement"] == cert.sentence()


def test_a_bound_without_evidence_keeps_the_old_behaviour(fit):
    b = fit.select(n_arms=8, alpha=0.05, tolerance=0.005, fractions=FR[:-1]).without_evidence()
    eng = RungEliminator(LADDER, rule="race", race_bias=b)
    for m, v in enumerate([0.6, 0.8, 0.85, 0.86]):
        eng.report("fast", m, v)
    assert eng.curve_bound.lam == b.lam  # not refined: the engine's refine is off
    cert = eng.certificate()  # one run, at the top: a full search, no bound used
    assert cert.evidence == {} and cert.certified and cert.basis == EXHAUSTIVE
    eng = RungEliminator(LADDER, rule="race", race_bias=b)
    for m, v in enumerate([0.6, 0.8, 0.85, 0.95]):
        eng.report("fast", m, v)
    for m, v in enumerate([0.01, 0.02, 0.04]):  # its bound (≈ 0.91) is below the incumbent: stopped
        eng.report("slow", m, v)
    eng.eliminate()
    assert eng.status("slow") == "stopped"
    cert = eng.certificate()  # a stop relied on the bound: the certificate rests on it
    assert cert.evidence == {} and cert.certified and cert.basis == b.source


def hand_bound(audit_lam: float = 0.0):
    """The hand-made bound of test_anytime with an evidence model that keeps the prior λ (β = 0)."""
    import dataclasses

    from test_anytime import simple_bound

    b = simple_bound(audit_lam)
    ev = EvidenceModel(prior_lam=audit_lam, n=(1,), beta=(0.0,), q=(audit_lam,), t_lo=(-10.0,), t_hi=(10.0,))
    return dataclasses.replace(b, evidence=ev, tolerance=0.005)


def _race(audit: float, seed: int = 0):
    from mf_sched.racing.policy import Race

    return Race(n_arms=8, ladder=LADDER, race_bias=hand_bound(), noise={"kind": "subgaussian", "sigma": 0.01},
                seed=seed, audit=audit)  # fmt: skip


def _drive(p, x: np.ndarray) -> int:
    epochs = 0
    reached = np.full(x.shape[0], -1)
    while not p.done:
        pull = p.ask()
        if pull is None:
            break
        epochs += [1, 3, 9, 27][pull.fidelity] - ([0, 1, 3, 9][reached[pull.arm]] if reached[pull.arm] >= 0 else 0)
        reached[pull.arm] = pull.fidelity
        p.tell(pull, float(x[pull.arm, pull.fidelity]))
    return epochs


#: flat curves, one per arm, and arm 7 a slow starter (a sigmoid whose mid-point is past the last cheap rung)
CURVES = np.array([[v - 0.06, v - 0.02, v - 0.005, v] for v in (0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.0)])
CURVES[7] = [0.1, 0.12, 0.2, 0.95]


def test_audits_catch_a_stopped_slow_starter_and_widen_the_bound():
    plain = _race(0.0)
    spent = _drive(plain, CURVES)
    rec = plain.recommendation()
    assert rec.arm == 0 and rec.certified and spent < 8 * 27  # lost, and nothing in the study's evidence says so
    audited = _race(1.0)
    more = _drive(audited, CURVES)
    rec = audited.recommendation()
    # the audit trained 7 to the top: its curve is beyond the bound, λ widens, every stopped arm runs again and
    # finishes — a full search, so the answer (the best, 7) is certified by exhaustion, not by the bound
    assert rec.arm == 7 and 7 in rec.details["evidence"]["exceeded_by"]
    assert more > spent  # audits cost epochs, counted like any others
    assert (audited.engine.reached_all() == 3).all() and rec.certified
    assert rec.details["certificate"].startswith("certified: the answer is the best a full-fidelity search")
    with pytest.raises(ValueError, match="audit"):
        _race(1.5)


def test_audits_are_drawn_once_per_arm_and_survive_a_saved_state():
    from mf_sched.racing.policy import Race

    p = _race(0.5, seed=2)
    for _ in range(10):
        pull = p.ask()
        p.tell(pull, float(CURVES[pull.arm, pull.fidelity]))
    q = Race.from_state_dict(json.loads(json.dumps(p.state_dict())))
    assert _drive(p, CURVES) == _drive(q, CURVES) and p.recommendation().arm == q.recommendation().arm
