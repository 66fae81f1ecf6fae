"""What the racing engine certifies, and why: the proofs of its rules and the certificate it returns.

:class:`~mf_sched.racing.engine.RungEliminator` decides with one of two rules (:mod:`mf_sched.racing._rules`
holds their arithmetic); this module proves what each guarantees and computes the
:class:`RungCertificate` (:func:`certify`) that the adapters show to the user. The notation is the engine's:
`v_i(m)` is run `i`'s value at rung `m` (maximised), `B_i(m)` its confidence radius, `ζ(m)` the ladder's bias
bound, `M` the top rung.

**Why it is δ-correct.** On the event `E` that every recorded value is within its radius of its mean
`µ_i(m)` — probability `≥ 1 − Σ_{i,m} δ_{i,m} ≥ 1 − δ` by a union bound — and with
`|µ_i(m) − µ_i| ≤ ζ(m)` (the ladder's bias bound), the inequality gives `µ_j ≥ µ_i`: a stopped run is
never strictly better than the run that stopped it. The union bound needs no independence between the
rungs of one run, so the correlation along a learning curve does not break it. The rule fires against
*any* recorded run, so it may be applied **synchronously** (all runs at a rung, then simultaneous
decisions: :meth:`RungEliminator.decide_rung`, the Ray `IISEScheduler`) or **asynchronously** (decide for a
run when it reports, against whatever is recorded so far: :meth:`RungEliminator.should_stop`, the Optuna
`MFPruner` and the asynchronous Ray scheduler) with the same guarantee; the asynchronous version stops
fewer runs early, never wrongly more.

**Confidence split.** With `n_arms = K` known, `δ_{i,m} = δ / (K M)` (IISE's `δ/(KM)`). When the
number of runs is open-ended (an Optuna study without `n_trials`), run number `k = 1, 2, …` gets
`δ_k = 6 δ / (π² k²)` (`Σ_k δ_k = δ`), split over the `M` rungs; the radius then grows like
`√log k`, the price of not knowing `K`. The index `k` is the run's *registration index*, which
adapters fix from the framework (Optuna's trial number), so every process computes the same radii.

**Certificate.** At the top rung (`ζ(M) = 0`) the best recorded run `ρ` is recommended. If every run that
was not stopped has reached the top rung, then on `E` the best run is among them and `ρ` is
`ε`-optimal with `ε = max_{j≠ρ} (v_j + B_j) − (v_ρ − B_ρ)` over those runs (`ε ≤ 2 max B`; `ε = 0`
when `ρ` is the only one left: *identified*). Runs that failed or were abandoned before the top rung
without being stopped are listed as *uncovered*: the guarantee is then over the other runs only.

**The racing rule** (`rule="race"`; mf-sched's one-sided variant of Eq. 3, derived here). Compare a run
with the best *full-fidelity* result so far and bound only the improvement of the arm that matters, the best
one: with `ζ⁺` a bound on the best arm's improvement after rung `m` (:class:`~mf_sched.racing.bias.RaceBias`,
e.g. `µ_*(M) − µ_*(m) ≤ ζ⁺(m)`), run `i` stops as soon as

```text
U_i = min_m ζ⁺-bound(v_i(m) + b_i(m)) < L = max_{j at the top} (v_j(M) − B_j)
```

where `b_i(m)` is a one-sided lower-deviation radius at rung `m` and `B_j` the top-rung radius. *Proof
that the best arm is never stopped.* Take the event `E`: (a) the best arm's values are never more than
`b` below their means at any rung, (b) no top-rung value is more than `B` above its mean, (c) no top-rung
value is more than `B` below its mean (used by the certificate only), and (d) `ζ⁺` holds for the best
arm. On `E`, `U_* ≥ µ_*(M)` at every rung (the bound is non-decreasing in the value) while every
`v_j(M) − B_j ≤ µ_j(M) ≤ µ_*(M)`; so `U_* ≥ L` and the rule never fires for `*`. (a)–(c) each get
`δ/3`: (a) `δ/(3M)` per rung one-sided — for the best arm only when the arms are fixed before any
evaluation (`fixed_arms=True`: a grid, a pre-drawn candidate set), else for every arm, `δ/(3KM)` or
`δ_k/(3M)` open-ended — and (b), (c) `δ/(3K)` (`δ_k/3`) per arm and side. (d) is not a noise event: it
holds with the calibration's coverage (`1 − α` over tasks, :func:`mf_sched.curves.calibration.calibrate_race`),
so the best arm survives with probability `≥ 1 − δ − α`. The rule needs no ζ for the other arms, and a
run that is paused may be stopped later, when a better incumbent arrives (:meth:`RungEliminator.eliminate`).
:meth:`RungEliminator.priority` (`U_i`) orders promotions best-first. At the top, the certificate is as
below, with `B` the top-rung radius.

**The curve-aware bound** (`race_bias=` a :class:`~mf_sched.racing.curve_bound.CurveBound`; the default of
the integrations). `U_i = min_m v_i(m) + ĝ(x_i(m))` where `ĝ` depends on the run's value and slope at rung
`m` and is calibrated on *observed* curves of many tasks (:mod:`mf_sched.racing.fit`); values are compared as
observed, `L = max_{j at the top} v_j(M)`, with no confidence radius. *What is guaranteed, and why.* Fix the
study's configurations `1..K` (a grid, or the `K` a proposer draws; their curves may be noisy) and let
`A*` be the answer a full search would return, the best *observed* final value `v_* = max_j v_j(M)`. Let
`G` be the set of runs with `v_j(M) ≥ v_* − τ|v_*|` (`τ` the bound's `tolerance`) and `E` the event
that some `g ∈ G` has `v_g(m) + ĝ(x_g(m)) ≥ v_g(M)` at *every* rung `m` of the ladder — jointly over the
rungs, which is what the conformal step calibrates: `P(E) ≥ 1 − α` when the study's task is exchangeable with
the calibration tasks (the probability is over the task and the draw of its `K` configurations; the bound's
`alpha` is this all-rung miss rate, there is no separate bootstrap level). On `E` the final answer is within
`τ` of `A*`: if `g` is never stopped it reaches the top and the answer is `≥ v_g(M)`; if it is stopped,
then at that moment `v_g(M) ≤ U_g < L`, and the answer is at least `L`. In both cases the answer
`≥ v_g(M) ≥ v_* − τ|v_*|`. The argument needs no independence between rungs, between runs, or between the
order of evaluation and the values — so it holds for any schedule (ASHA's promotions, best-first resumption,
`W` parallel workers), for arms that enter adaptively (a proposer's next configuration, an enqueued trial, a
fallback trial: each is one of the `K` whatever the reason it was chosen; the calibration draws the `K`
uniformly, so a proposer that concentrates on near-duplicates of one configuration is outside it), and for
stops decided against any incumbent. *From observed values to means:* the statement is about observed final
values — what a full search would report. If each final value is within `B` of its run's mean (sub-Gaussian
noise, the `sigma` radius), the answer's mean is within `τ|v_*| + 2B` of the best mean among the `K`.
*When the study's own curves contradict the bound* (`refine`: a finished run's curve exceeded `ĝ` at some
rung, as a slow starter does) λ is raised to cover it, every run stopped earlier whose bound under the raised λ
can again beat the incumbent runs again (where the engine can resume it), and the certificate certifies no ε
(:attr:`RungCertificate.violated_by`): the stops were made with a bound the study has shown to be too tight for
its task.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mf_sched.racing._runs import FINISHED, HALTED, LOST, RUNNING, STATUS_NAMES, STOPPED, RunTable

__all__ = [
    "EXHAUSTIVE", "RungCertificate", "certification", "certify", "describe", "in_progress_reason", "rung_table",
    "statement",
]  # fmt: skip


@dataclass(frozen=True)
class RungCertificate:
    """What the engine can say about the best run so far.

    Attributes:
        key: the recommended run (best value at the top rung), or `None` when no run reached it.
        value: its top-rung value (in the engine's maximisation convention).
        identified: every other run was stopped by the rule, none is running or uncovered: `key` is the
            best run with probability `≥ 1 − δ`.
        epsilon: `key` is `ε`-optimal among the covered runs with probability `≥ 1 − δ`; `None`
            while some run that was not stopped has not reached the top rung (still running).
        guaranteed: `False` when the heuristic `eta` option stopped runs (the statements above then
            do not hold) or when there is nothing to certify.
        delta: the confidence parameter.
        counts: runs per status (`running`, `stopped`, `halted`, `finished`, `lost`).
        uncovered: runs that failed or were abandoned below the top rung without being stopped.
        cost: resource spent, `Σ_i λ(highest rung i reported)` (resumable accounting).
        rule: the decision rule (`"iise"` or `"race"`).
        bias_source: where the bias bound came from (the ladder's ζ, the :class:`~mf_sched.racing.bias.RaceBias` or
            :class:`~mf_sched.racing.curve_bound.CurveBound` source).
        violated_by: runs whose observed curves exceeded the curve-aware bound the stops relied on (`epsilon`
            is then None and `guaranteed` False).
        certified: the one word every output uses (:func:`certification`): the race is over, its answer is
            `ε`-optimal (plus the bound's tolerance) with probability `≥ 1 − δ`, and the bound it rests on was
            *earned* — checked against this study's own finished curves (a learned bound that they do not
            contradict and that looks like the calibration tasks), or given by you (ζ of the ladder, your ζ⁺) — or
            no bound was needed: every run reached the top rung, none stopped (basis :data:`EXHAUSTIVE`).
        basis: what the statement rests on, in words.
        reason: why it is not certified (empty when it is).
        tolerance: the curve-aware bound's relative tolerance (0 for other bounds): the answer is within
            `tolerance · |value| + ε` of a full search's.
        evidence: the study's evidence about its bound (:class:`~mf_sched.racing.evidence.Evidence` as a dict), empty
            without a learned bound.
    """

    key: Hashable | None
    value: float | None
    identified: bool
    epsilon: float | None
    guaranteed: bool
    delta: float
    counts: Mapping[str, int] = field(default_factory=dict)
    uncovered: tuple[Hashable, ...] = ()
    cost: float = 0.0
    rule: str = "iise"
    bias_source: str = ""
    violated_by: tuple[Hashable, ...] = ()
    certified: bool = False
    basis: str = ""
    reason: str = ""
    tolerance: float = 0.0
    evidence: Mapping[str, Any] = field(default_factory=dict)

    def sentence(self) -> str:
        """The certificate in one sentence — the same words in every output (stdout, the study's attributes, the
        report, the plot, Ray)."""
        return statement(self)

    def to_dict(self) -> dict[str, Any]:
        """The certificate as a JSON-safe dict (the fields by name; tuples as lists)."""
        return {
            "key": self.key,
            "value": self.value,
            "identified": self.identified,
            "epsilon": self.epsilon,
            "guaranteed": self.guaranteed,
            "delta": self.delta,
            "counts": dict(self.counts),
            "uncovered": list(self.uncovered),
            "cost": self.cost,
            "rule": self.rule,
            "bias_source": self.bias_source,
            "violated_by": list(self.violated_by),
            "certified": self.certified,
            "basis": self.basis,
            "reason": self.reason,
            "tolerance": self.tolerance,
            "evidence": dict(self.evidence),
            "statement": self.sentence(),
        }


#: the basis of a certificate that needed no bound: nothing was stopped below the top rung, every run reached it
EXHAUSTIVE = "every configuration trained to the top rung, none stopped (a full search: no bound was used)"


def statement(c: RungCertificate) -> str:
    """The one wording of a certificate (:meth:`RungCertificate.sentence`): "certified: …" with what holds and what
    it rests on, or "not certified: <reason>" and what the answer rests on.

    Args:
        c: the certificate.
    """
    if c.key is None:
        return f"not certified: {c.reason or 'no run has reached the top rung'}"
    within = (f"{100 * c.tolerance:g}% + ε = {c.epsilon:.3g}" if c.tolerance else f"ε = {c.epsilon:.3g}") if (
        c.epsilon is not None) else ""  # fmt: skip
    if c.certified and c.basis == EXHAUSTIVE:
        return f"certified: the answer is the best a full-fidelity search of the same configurations finds; {c.basis}"
    if c.certified:
        return (f"certified: with probability >= 1 - δ (δ = {c.delta:g}) the answer is within {within} of the best "
                f"a full-fidelity search of the same configurations would find; it rests on {c.basis}")  # fmt: skip
    return f"not certified: {c.reason}; the answer rests on {c.basis}"


def certification(
    *, eps: float | None, guaranteed: bool, halted: bool, violated_by: tuple[Hashable, ...], have_top: bool,
    evidence: Any, learned: bool, bias_source: str, running: int = 0, borrowed: bool = False,
    uncovered: tuple[Hashable, ...] = (), exhaustive: bool = False,
) -> tuple[bool, str, str]:  # fmt: skip
    """`(certified, basis, reason)`: the one definition of the word (see :class:`RungCertificate`).

    Args:
        eps: the certified ε (None while the race runs or when the bound was contradicted).
        guaranteed: no heuristic cut and no contradiction.
        halted: the heuristic η cut stopped runs.
        violated_by: runs whose curves exceeded the bound in force.
        have_top: some run reached the top rung.
        evidence: the study's :class:`~mf_sched.racing.evidence.Evidence` (None without a learned bound).
        learned: the bound in force learns from the study's curves (a curve bound with an evidence model).
        bias_source: where the bound comes from.
        running: runs below the top rung that can still win.
        borrowed: the bound is a prior shipped for other tasks that does not learn from this study (the ζ⁺ prior).
        uncovered: runs that failed or were abandoned below the top rung without being stopped.
        exhaustive: every run reached the top rung and none was stopped or halted: the answer is the full search's
            whatever the bound did (a curve beyond it voids nothing, since no stop relied on it; basis
            :data:`EXHAUSTIVE`).
    """
    if exhaustive and have_top:
        return True, EXHAUSTIVE, ""
    if evidence is not None and evidence.used:
        basis = (
            f"{bias_source}, with λ = {evidence.lam:.3g} learned from this study's {evidence.n} finished run(s) "
            f"(prior λ {evidence.prior_lam:.3g}), for tasks exchangeable with the calibration tasks"
        )
    elif learned:
        basis = f"{bias_source}, prior λ, for tasks like the calibration tasks (no run of this study has finished)"
    elif borrowed:
        basis = f"{bias_source}, for tasks like its calibration tasks"
    else:
        basis = bias_source or "the bound given"
    if not have_top:
        return False, basis, "no run has reached the top rung"
    if halted:
        return False, basis, "the heuristic η cut stopped runs, so no bound covers them"
    if violated_by:
        return False, basis, (f"the curves of {list(violated_by)} exceeded the bound the earlier stops relied on, "
                              "so a stopped run may have been the best")  # fmt: skip
    if borrowed:
        return False, basis, "the bound is a prior fitted on other tasks, not checked against this study's own curves"
    if evidence is not None and evidence.unlike:
        return (
            False,
            basis,
            (
                f"this study's curves are unlike the calibration tasks: its finished runs improved after the cheap "
                f"rungs more than in 99% of calibration studies (statistic {evidence.statistic:.3g} > "
                f"{evidence.t_hi:.3g}); the bound was widened to λ = {evidence.lam:.3g}, but no coverage is claimed"
            ),
        )
    if uncovered and eps is not None:
        return False, basis, (f"{len(uncovered)} run(s) failed or were abandoned below the top rung without being "
                              f"stopped ({list(uncovered)[:5]}): the answer does not cover them")  # fmt: skip
    if eps is None or not guaranteed:
        return False, basis, in_progress_reason(running)
    return True, basis, ""


def in_progress_reason(running: int, *, idle: bool = False) -> str:
    """Why a race whose runs below the top rung can still win is not certified.

    Args:
        running: those runs.
        idle: nothing is running now (the study ended early: `n_trials`, a timeout, a budget): the runs are
            *paused* (the glossary's word) and run again only if the study goes on.
    """
    runs = f"{running} run{'s' * (running != 1)}"
    if idle:
        return (f"race not over ({runs} paused below the top rung can still win; nothing is running, so they run "
                "again only if the study goes on)")  # fmt: skip
    return f"race in progress ({runs} below the top rung can still win)"


def certify(
    t: RunTable,
    top_radii: Callable[[np.ndarray], np.ndarray],
    *,
    delta: float,
    cost: float,
    rule: str,
    bias_source: str,
    violated_by: tuple[Hashable, ...],
    evidence: Any = None,
    learned: bool = False,
    tolerance: float = 0.0,
    borrowed: bool = False,
) -> RungCertificate:
    """The certificate of the runs `t` (the section "Certificate" above).

    Args:
        t: the engine's runs.
        top_radii: the top-rung radius `B_j` of given rows (zero with a curve-aware bound).
        delta: the confidence δ.
        cost: the resource spent so far.
        rule: the decision rule, `"iise"` or `"race"`.
        bias_source: where the bias bound came from.
        violated_by: runs whose curves exceeded the curve-aware bound in force (then no ε is certified).
        evidence: the study's evidence about a learned bound (:class:`~mf_sched.racing.evidence.Evidence`), or None.
        learned: the bound learns from the study's curves.
        tolerance: the curve-aware bound's relative tolerance (0 for other bounds).
        borrowed: the bound is a shipped prior that does not learn from the study (see :func:`certification`).

    Returns:
        The best run at the top rung (ties: registration order, the same in every process) and what holds
        about it.
    """
    n = len(t)
    st = t.status[:n]
    counts = {name: int((st == code).sum()) for code, name in STATUS_NAMES.items()}
    top = t.M - 1
    vtop = t.vals[:n, top]
    have = np.flatnonzero(~np.isnan(vtop))
    uncovered = tuple(t.keys[i] for i in np.flatnonzero((st == LOST) & (t.reached[:n] < top)).tolist())
    exhaustive = n > 0 and bool((t.reached[:n] == top).all()) and not t.halted_any
    words = dict(guaranteed=not t.halted_any and not violated_by, halted=bool(t.halted_any), violated_by=violated_by,
                 evidence=evidence, learned=learned, bias_source=bias_source, borrowed=borrowed,
                 uncovered=uncovered, exhaustive=exhaustive)  # fmt: skip
    if have.size == 0:
        ok, basis, why = certification(eps=None, have_top=False, **words)  # type: ignore[arg-type]
        return RungCertificate(None, None, False, None, False, delta, counts, uncovered, cost, rule, bias_source,
                               violated_by=violated_by, certified=ok, basis=basis, reason=why, tolerance=tolerance,
                               evidence={} if evidence is None else evidence.to_dict())  # fmt: skip
    rho = int(have[np.argmax(vtop[have])])
    surviving = np.flatnonzero(np.isin(st, (RUNNING, FINISHED, LOST)))
    running_below = surviving[(st[surviving] == RUNNING) & (t.reached[surviving] < top)]
    guaranteed = not t.halted_any and not violated_by
    eps: float | None = None
    identified = False
    if running_below.size == 0:
        cov = surviving[~np.isnan(vtop[surviving])]
        others = cov[cov != rho]
        if others.size == 0:
            eps = 0.0
            identified = not uncovered and int(st[rho]) in (RUNNING, FINISHED)
        else:
            b = top_radii(others)
            b_rho = float(top_radii(np.array([rho]))[0])
            eps = max(0.0, float(np.max(vtop[others] + b)) - (float(vtop[rho]) - b_rho))
    if violated_by and not exhaustive:
        eps = None  # the study's own curves exceeded the bound its stops relied on: no ε can be certified
    ok, basis, why = certification(eps=eps, have_top=True, running=int(running_below.size), **words)  # type: ignore[arg-type]
    return RungCertificate(
        key=t.keys[rho],
        value=float(vtop[rho]),
        identified=bool(identified and guaranteed),
        epsilon=eps,
        guaranteed=guaranteed,
        delta=delta,
        counts=counts,
        uncovered=uncovered,
        cost=cost,
        rule=rule,
        bias_source=bias_source,
        violated_by=violated_by,
        certified=ok,
        basis=basis,
        reason=why,
        tolerance=tolerance,
        evidence={} if evidence is None else evidence.to_dict(),
    )


def rung_table(t: RunTable, costs: np.ndarray, margin_at: Callable[[int], float]) -> list[dict[str, Any]]:
    """Per rung: runs with a value, runs stopped/halted there, the best value and the bias margin.

    Args:
        t: the engine's runs.
        costs: the cost `λ(m)` of each rung.
        margin_at: the bias margin shown at a rung (`2ζ(m)` or `γ(m)` for the IISE rule, `ζ⁺(m)` or the
            curve-aware bound's gain for the racing rule).
    """
    n = len(t)
    out = []
    for m in range(t.M):
        v = t.vals[:n, m]
        have = ~np.isnan(v)
        out.append(
            {
                "rung": m,
                "cost": float(costs[m]),
                "reported": int(have.sum()),
                "stopped": int(((t.stop_rung[:n] == m) & (t.status[:n] == STOPPED)).sum()),
                "halted": int(((t.stop_rung[:n] == m) & (t.status[:n] == HALTED)).sum()),
                "best": float(v[have].max()) if have.any() else None,
                "margin": margin_at(m),
            }
        )
    return out


def describe(rule: str, n_runs: int, c: RungCertificate, table: list[dict[str, Any]]) -> str:
    """One line for the engine and one per rung, for `debug_string` and logs.

    Args:
        rule: the decision rule.
        n_runs: the number of registered runs.
        c: the engine's certificate.
        table: its :func:`rung_table`.
    """
    lines = [
        f"RungEliminator ({rule}): {n_runs} runs, {c.counts.get('running', 0)} running, "
        f"{c.counts.get('stopped', 0)} stopped, {c.counts.get('halted', 0)} halted, "
        f"{c.counts.get('finished', 0)} finished; cost {c.cost:g}; best {c.key!r}"
    ]
    for row in table:
        best = "-" if row["best"] is None else f"{row['best']:.4g}"
        lines.append(
            f"  rung {row['rung']} (λ={row['cost']:g}, margin {row['margin']:.3g}): {row['reported']} reported, "
            f"{row['stopped']} stopped, {row['halted']} halted, best {best}"
        )
    return "\n".join(lines)
