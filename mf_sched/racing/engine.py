"""ζ-aware elimination of *resumable runs* at rungs: the decision engine of the pruner and schedulers.

The papers' policies (IISE, Poiani et al. 2022, Algorithm 1) draw `t_m` independent samples of every
surviving arm at fidelity `m`. In tuning, an arm is usually a *training run* that advances through the
rungs of the ladder (epochs 1, 3, 9, …) and yields **one** value per rung (one per seed when `r` seeds of
a configuration run side by side). This module is IISE's elimination rule (Eq. 3) applied with one round per
rung, which is what an Optuna pruner and Ray Tune schedulers can execute:

```text
stop run i at rung m as soon as some recorded run j has
(v_j(m) − B_j(m)) − (v_i(m) + B_i(m)) ≥ 2 ζ(m)           (bias="zeta", Eq. 3)
or ≥ γ(m)                                                    (bias="gamma", IISE-γ §5)
```

where `v_i(m)` is the (mean over `r` seeds of the) metric of run `i` at rung `m` (maximised; adapters
negate losses) and `B_i(m) = σ_m √(2 log(2 / δ_{i,m}) / r)` is the fixed-sample sub-Gaussian radius
(:func:`~mf_sched.confidence.subgaussian_radius`, two-sided) at per-(run, rung) confidence `δ_{i,m}`.

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

**Heuristic option.** `eta` additionally stops a run that is not in the best `⌈n/η⌉` of the `n` values
recorded at its rung (successive-halving style, as ASHA and Optuna's pruners do). It saves compute when ζ
is wide, but the δ-guarantee no longer holds and the certificate says so (`guaranteed = False`).

Example:
    >>> from mf_sched import FidelityLadder
    >>> from mf_sched.racing.engine import RungEliminator
    >>> ladder = FidelityLadder(costs=[1, 3, 9], zeta=[0.15, 0.05, 0.0], resources=[1, 3, 9])
    >>> eng = RungEliminator(ladder, delta=0.05, sigma=0.01, n_arms=4)
    >>> for key, v in {"a": 0.5, "b": 0.1, "c": 0.45, "d": 0.3}.items():
    ...     eng.report(key, 0, v)
    >>> eng.decide_rung(0)            # the 2ζ = 0.3 band at rung 0 separates only "b"
    ['b']
    >>> for key, v in {"a": 0.7, "c": 0.68, "d": 0.5}.items():
    ...     eng.report(key, 1, v)
    >>> eng.decide_rung(1)
    ['d']
    >>> eng.report("a", 2, 0.8); eng.report("c", 2, 0.79)
    >>> eng.decide_rung(2), eng.certificate().key
    ([], 'a')
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mf_sched._serialize import StateFormatError, decode, encode
from mf_sched._validate import check_int, check_optional_int
from mf_sched.confidence import subgaussian_radius
from mf_sched.ladder import FidelityLadder
from mf_sched.policy import check_delta
from mf_sched.racing.bias import RaceBias
from mf_sched.racing.curve_bound import CurveBound

__all__ = ["RungEliminator", "RungCertificate", "RULES", "RUNNING", "STOPPED", "HALTED", "FINISHED", "LOST"]

#: status codes of a run
RUNNING, STOPPED, HALTED, FINISHED, LOST = 0, 1, 2, 3, 4
_STATUS_NAMES = {RUNNING: "running", STOPPED: "stopped", HALTED: "halted", FINISHED: "finished", LOST: "lost"}
_FORMAT = "mf_sched.RungEliminator/1"
#: the decision rules: IISE's symmetric rule at a rung, or racing against the full-fidelity incumbent
RULES = ("iise", "race")
#: racing's promotion orders (see ``order``)
ORDERS = ("estimate", "bound", "depth")
_DEPTH = 1e12  # "depth" order: rung × _DEPTH + value ranks the highest rung first, then the best value


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

    def to_dict(self) -> dict[str, Any]:
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
        }


def _affine(form: str, ideal: float | None, b: float, v: float) -> float:
    """:meth:`~mf_sched.racing.bias.RaceBias.optimistic` of one value with bound `b`, in plain Python."""
    if form == "absolute":
        return v + b
    if math.isinf(b):
        return math.inf
    room = max(float(ideal) - v, 0.0)  # type: ignore[arg-type]
    return v + (b * room if room > 0 else 0.0)


def _check_key(key: Any) -> Hashable:
    if type(key) is int or type(key) is str:  # the common case, fast
        return key
    if isinstance(key, bool) or not isinstance(key, (str, int, np.integer)):
        raise TypeError(f"run key {key!r} must be a str or an int (e.g. an Optuna trial number or a Ray trial id)")
    return int(key) if isinstance(key, np.integer) else key


class RungEliminator:
    """ζ-aware elimination of resumable runs, rung by rung (see the module docstring).

    Args:
        ladder: the fidelity ladder; rung `m` is fidelity `m` (`ladder.zeta`; `ladder.gamma` when
            `bias="gamma"`; `ladder.costs` for cost accounting).
        delta: confidence δ ∈ (0, 1).
        sigma: sub-Gaussian scale of one run's metric around its mean at each rung (seed-to-seed noise):
            a number or one per rung, `≥ 0`. `0` treats values as exact (then only the bias band
            separates runs: a modelling choice outside the guarantee unless runs are deterministic).
        replicas: seeds averaged per value `r ≥ 1` (the radius shrinks like `1/√r`).
        n_arms: the number of runs `K` if known (δ split `δ/(KM)`); `None`: open-ended
            (`6δ/(π² k²)` per run `k`). Registering more than `n_arms` runs raises ValueError.
        bias: `"zeta"` (`2ζ(m)`, IISE) or `"gamma"` (`γ(m)`, IISE-γ; needs `ladder.gamma`).
        eta: optional successive-halving cut `η > 1` on top of the rule (heuristic; voids the guarantee).
        min_rung_reports: the `eta` cut applies at a rung only once this many values are recorded there
            (default `⌈η⌉`).
        rule: `"iise"` (the symmetric rule at a rung, Eq. 3, with the ladder's ζ or γ) or `"race"` (against
            the full-fidelity incumbent with `race_bias`; see the module docstring).
        race_bias: the best arm's improvement bound: the curve-aware bound
            (:class:`~mf_sched.racing.curve_bound.CurveBound` or its dict: the bound depends on each run's value
            and slope at the rung, and values are compared as observed, without confidence radii: see "The
            curve-aware bound" above), or the unconditional ζ⁺ per rung (:class:`~mf_sched.racing.bias.RaceBias`, its
            dict, or one absolute value per rung); required by `rule="race"`.
        fixed_arms: `rule="race"` only: the runs are a set fixed before any evaluation (a grid, a candidate
            set), so the lower-deviation radius needs a union over rungs only (`δ/(3M)`), not over runs.
        refine: `rule="race"` only: when a run reaches the top, raise ζ⁺ at every rung where that run
            improved by more than ζ⁺ allows (a curve-aware bound: raise its λ to the run's largest score), never
            lower it; the certificate says so (`bias_source`, `violated_by`). A prior calibrated on other
            tasks is then corrected by the study's own runs.
        order: `rule="race"` only: the promotion order of :meth:`priority` / :meth:`ranked`. `"estimate"`
            (default): the estimated final value, `ζ⁺`'s *typical* improvement added to the run's latest
            value — the most promising run goes first and reaches the top early. `"bound"`: the optimistic
            bound `U_i` (A*-like); while ζ⁺ is loose at the cheap rungs this is nearly breadth-first (every
            run climbs to the middle rungs before any reaches the top), which is what racing cannot use.
            `"depth"`: the highest rung first, then the best value there (the anytime schedule's certification
            phase: the runs nearest to an answer finish first).
            Any order only decides *which* run is promoted; what may be stopped is the rule's.
    """

    def __init__(
        self,
        ladder: FidelityLadder,
        *,
        delta: float = 0.05,
        sigma: float | Sequence[float] = 0.5,
        replicas: int = 1,
        n_arms: int | None = None,
        bias: str = "zeta",
        eta: float | None = None,
        min_rung_reports: int | None = None,
        rule: str = "iise",
        race_bias: CurveBound | RaceBias | Sequence[float] | Mapping[str, Any] | None = None,
        fixed_arms: bool = False,
        refine: bool = False,
        order: str = "estimate",
    ) -> None:
        if not isinstance(ladder, FidelityLadder):
            raise TypeError(f"ladder must be a FidelityLadder, got {type(ladder).__name__}")
        self.ladder = ladder
        M = ladder.M
        self.M = M
        self.delta = check_delta(delta)
        s = np.broadcast_to(np.asarray(sigma, dtype=float), (M,)).copy() if np.ndim(sigma) == 0 else None
        if s is None:
            s = np.asarray(sigma, dtype=float).ravel()
            if s.size != M:
                raise ValueError(f"sigma has {s.size} values but the ladder has {M} rungs; give one number or {M}")
        if not (np.isfinite(s).all() and (s >= 0).all()):
            raise ValueError(f"sigma = {np.asarray(sigma).tolist()} is out of range; accepted: finite numbers >= 0")
        self.sigma = s
        self.replicas = check_int("replicas", replicas)
        self.n_arms = check_optional_int("n_arms", n_arms, none="open-ended")
        if bias not in ("zeta", "gamma"):
            raise ValueError(f"bias = {bias!r} is unknown; accepted: 'zeta', 'gamma'")
        if bias == "gamma" and ladder.gamma is None:
            raise ValueError("bias = 'gamma' needs ladder.gamma (FidelityLadder(..., gamma=[...]))")
        self.bias = bias
        if rule not in RULES:
            raise ValueError(f"rule = {rule!r} is unknown; accepted: {', '.join(map(repr, RULES))}")
        self.rule = rule
        self.curve_bound: CurveBound | None = None
        self.race_bias: RaceBias | None = None
        if rule == "race":
            if race_bias is None:
                raise ValueError(
                    "rule = 'race' needs race_bias= (a CurveBound, e.g. mf_sched.racing.shipped_curve_bound('unit')"
                    ".select(...); or ζ⁺ per rung: a RaceBias, e.g. mf_sched.racing.bias.race_prior(...), or a list of "
                    "absolute values)"
                )
            if eta is not None:
                raise ValueError("eta (the heuristic halving cut) applies to rule = 'iise' only")
            if isinstance(race_bias, CurveBound) or (isinstance(race_bias, Mapping) and "hi" in race_bias):
                self.curve_bound = race_bias if isinstance(race_bias, CurveBound) else CurveBound.from_dict(race_bias)
            else:
                self.race_bias = RaceBias.coerce(race_bias, M)
        elif race_bias is not None:
            raise ValueError("race_bias is used by rule = 'race' only")
        res = np.asarray(ladder.resources if ladder.resources is not None else ladder.costs, dtype=float)
        self._frac = res / res[-1]  # each rung's fraction of training (the curve bound's clock)
        self._inc: tuple[int, float] | None = (-1, -math.inf)  # racing: the incumbent (row, lower bound) cached
        self.fixed_arms = bool(fixed_arms)
        if refine and rule != "race":
            raise ValueError("refine is used by rule = 'race' only")
        self.refine = bool(refine)
        if order not in ORDERS:
            raise ValueError(f"order = {order!r} is unknown; accepted: {', '.join(map(repr, ORDERS))}")
        self.order = order
        self.margin = (
            2.0 * np.asarray(ladder.zeta, dtype=float) if bias == "zeta" else np.asarray(ladder.gamma, dtype=float)
        )
        if eta is not None:
            e = float(eta)
            if not (math.isfinite(e) and e > 1):
                raise ValueError(f"eta = {eta!r} is out of range; accepted: a finite number > 1, or None")
            eta = e
        self.eta = eta
        if min_rung_reports is None:
            min_rung_reports = 1 if eta is None else int(math.ceil(eta))
        self.min_rung_reports = check_int("min_rung_reports", min_rung_reports)
        self._costs = np.asarray(ladder.costs, dtype=float)
        self._keys: list[Hashable] = []
        self._index_of: dict[Hashable, int] = {}
        cap = 16
        self._vals = np.full((cap, M), np.nan)
        self._order = np.zeros(cap, dtype=np.int64)  # registration index k (0-based) that sets δ_k
        self._status = np.zeros(cap, dtype=np.int64)
        self._stop_rung = np.full(cap, -1, dtype=np.int64)
        self._reached = np.full(cap, -1, dtype=np.int64)
        self._upper = np.full(cap, np.inf)  # racing: U_i, the optimistic bound on run i's final value
        self._est = np.full(cap, np.inf)  # racing: the estimated final value (promotion order "estimate")
        self._halted_any = False

    # ------------------------------------------------------------------ registration and reports
    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._index_of

    @property
    def keys(self) -> list[Hashable]:
        """Registered runs, in registration order."""
        return list(self._keys)

    def _grow(self, n: int) -> None:
        cap = self._vals.shape[0]
        if n <= cap:
            return
        new = max(n, 2 * cap)
        pad = new - cap
        self._vals = np.vstack([self._vals, np.full((pad, self.M), np.nan)])
        self._order = np.concatenate([self._order, np.zeros(pad, dtype=np.int64)])
        self._status = np.concatenate([self._status, np.zeros(pad, dtype=np.int64)])
        self._stop_rung = np.concatenate([self._stop_rung, np.full(pad, -1, dtype=np.int64)])
        self._reached = np.concatenate([self._reached, np.full(pad, -1, dtype=np.int64)])
        self._upper = np.concatenate([self._upper, np.full(pad, np.inf)])
        self._est = np.concatenate([self._est, np.full(pad, np.inf)])

    def register(self, key: Hashable, index: int | None = None) -> int:
        """Add a run (idempotent) and return its row. `index` fixes its registration index `k` (0-based)
        for the open-ended δ split — adapters pass a number every process agrees on (Optuna's trial
        number); default: the order of registration."""
        key = _check_key(key)
        row = self._index_of.get(key)
        if row is not None:
            return row
        n = len(self._keys)
        if self.n_arms is not None and n >= self.n_arms:
            raise ValueError(
                f"more than n_arms = {self.n_arms} runs registered; raise n_arms or pass None (open-ended)"
            )
        check_optional_int("index", index, 0)
        self._grow(n + 1)
        self._keys.append(key)
        self._index_of[key] = n
        self._order[n] = n if index is None else int(index)
        return n

    def report(self, key: Hashable, rung: int, value: float) -> None:
        """Record run `key`'s value at `rung` (maximised). Re-reporting the same value is a no-op (so a
        state can be rebuilt from a framework's storage); a different value for a recorded rung, a NaN or
        infinite value, or a rung outside `0..M−1` raises ValueError and changes nothing."""
        check_int("rung", rung, 0, self.M - 1)
        v = float(value)
        if not math.isfinite(v):
            raise ValueError(f"value = {value!r} for run {key!r} at rung {rung} must be finite")
        key = _check_key(key)
        row = self._index_of.get(key)
        if row is not None:
            old = self._vals[row, rung]
            if not math.isnan(old):
                if old != v:
                    raise ValueError(f"run {key!r} already has value {old} at rung {rung}; got {v}")
                return
        row = self.register(key)
        self._vals[row, rung] = v
        if rung > self._reached[row]:
            self._reached[row] = rung
        if rung == self.M - 1 and self._status[row] == RUNNING:
            self._status[row] = FINISHED
        if self.curve_bound is not None:
            if rung == self.M - 1 and self.refine and self._refine_curve(np.array([row])):
                return
            self._update_upper_one(row, rung, v)
        elif self.race_bias is not None:
            if rung == self.M - 1 and self.refine and self._refine(np.array([row])):
                return
            self._update_upper_one_zeta(row, rung, v)

    def report_many(
        self, keys: Sequence[Hashable], values: Any, *, index: Sequence[int] | None = None, trusted: bool = False
    ) -> None:
        """Bulk :meth:`report`: `values[i, m]` is run `keys[i]`'s value at rung `m` (NaN: none). Runs are
        registered in order (`index` as in :meth:`register`); rungs already recorded keep their value when
        the new one is equal and raise ValueError otherwise (nothing is changed then). Vectorised: the way to
        rebuild an engine from a framework's storage. `trusted=True` (an adapter's own unique int or str
        keys on an engine that has none of them yet) skips the per-key checks."""
        v = np.asarray(values, dtype=float)
        keys = list(keys)
        if v.shape != (len(keys), self.M):
            raise ValueError(f"values must have shape ({len(keys)}, {self.M}), got {v.shape}")
        if np.isinf(v).any():
            raise ValueError("values must be finite (NaN marks a rung without a value)")
        if not trusted:
            keys = [_check_key(k) for k in keys]
        if len(set(keys)) != len(keys):
            raise ValueError("keys must be unique")
        all_new = trusted and not self._keys
        known: list[int | None] = [None] * len(keys) if all_new else [self._index_of.get(k) for k in keys]
        old_pos = [] if all_new else [i for i, r in enumerate(known) if r is not None]
        if old_pos:
            old = self._vals[[known[i] for i in old_pos]]
            new = v[old_pos]
            clash = ~np.isnan(old) & ~np.isnan(new) & (old != new)
            if clash.any():
                i, m = (int(x[0]) for x in np.nonzero(clash))
                raise ValueError(f"run {keys[old_pos[i]]!r} already has value {old[i, m]} at rung {m}; got {new[i, m]}")
        fresh = range(len(keys)) if all_new else [i for i, r in enumerate(known) if r is None]
        n = len(self._keys)
        if fresh:  # bulk registration, in order
            if self.n_arms is not None and n + len(fresh) > self.n_arms:
                raise ValueError(
                    f"more than n_arms = {self.n_arms} runs registered; raise n_arms or pass None (open-ended)"
                )
            if index is None:
                idx = np.arange(n, n + len(fresh))
            else:
                idx = np.asarray(index) if all_new else np.asarray([index[i] for i in fresh])
            if index is not None and (idx.dtype.kind not in "iu" or (idx < 0).any()):
                raise ValueError("index must hold integers >= 0")
            self._grow(n + len(fresh))
            new_keys = list(keys) if all_new else [keys[i] for i in fresh]
            self._keys.extend(new_keys)
            self._index_of.update(zip(new_keys, range(n, n + len(fresh))))
            self._order[n : n + len(fresh)] = idx
            if len(fresh) == len(keys):
                known = list(range(n, n + len(keys)))
            else:
                for j, i in enumerate(fresh):
                    known[i] = n + j
        rows = np.asarray(known, dtype=np.int64)
        have = ~np.isnan(v)
        cur = self._vals[rows]
        self._vals[rows] = np.where(have, v, cur)
        top_rung = np.where(have.any(axis=1), self.M - 1 - np.argmax(have[:, ::-1], axis=1), -1)
        self._reached[rows] = np.maximum(self._reached[rows], top_rung)
        fin = have[:, -1] & (self._status[rows] == RUNNING)
        self._status[rows[fin]] = FINISHED
        if self.race_bias is not None or self.curve_bound is not None:
            if self.refine and have[:, -1].any():
                if self.curve_bound is not None:
                    self._refine_curve(rows[have[:, -1]])
                else:
                    self._refine(rows[have[:, -1]])
                self._update_upper(np.arange(len(self._keys)))
            else:
                self._update_upper(rows)

    def mark_lost(self, key: Hashable) -> None:
        """A run failed or was abandoned: it stays as evidence but is no longer waited for. A run that
        reached the top rung or was stopped keeps its status."""
        row = self._row(key)
        if self._status[row] == RUNNING:
            self._status[row] = LOST

    def mark_lost_many(self, keys: Iterable[Hashable]) -> None:
        """:meth:`mark_lost` for many runs at once (runs that are not running keep their status)."""
        rows = np.array([self._row(k) for k in keys], dtype=np.int64)
        if rows.size:
            rows = rows[self._status[rows] == RUNNING]
            self._status[rows] = LOST

    def revive(self, key: Hashable) -> None:
        """Undo :meth:`mark_lost` (a retried trial that continues from its checkpoint)."""
        row = self._row(key)
        if self._status[row] == LOST:
            self._status[row] = RUNNING

    def _row(self, key: Hashable) -> int:
        try:
            return self._index_of[key]
        except KeyError:
            raise KeyError(f"unknown run {key!r}") from None

    def status(self, key: Hashable) -> str:
        """`"running"`, `"stopped"` (by the rule), `"halted"` (by the `eta` cut), `"finished"`
        (reached the top rung) or `"lost"`."""
        return _STATUS_NAMES[int(self._status[self._row(key)])]

    def statuses(self) -> np.ndarray:
        """The status code of every run, in registration order (`RUNNING`, `STOPPED`, `HALTED`,
        `FINISHED`, `LOST`; a copy) — for adapters that decide over many runs at once."""
        return self._status[: len(self._keys)].copy()

    def reached_all(self) -> np.ndarray:
        """The highest rung with a value of every run, in registration order (−1: none; a copy)."""
        return self._reached[: len(self._keys)].copy()

    def stop_rung(self, key: Hashable) -> int | None:
        """The rung at which the run was stopped or halted, else None."""
        r = int(self._stop_rung[self._row(key)])
        return None if r < 0 else r

    def value(self, key: Hashable, rung: int) -> float | None:
        v = self._vals[self._row(key), rung]
        return None if math.isnan(v) else float(v)

    def reached(self, key: Hashable) -> int:
        """Highest rung with a recorded value (−1: none)."""
        return int(self._reached[self._row(key)])

    # ------------------------------------------------------------------ statistics
    def _delta_run(self, rows: np.ndarray) -> np.ndarray:
        if self.n_arms is not None:
            return np.full(rows.shape, self.delta / self.n_arms)
        k = self._order[rows].astype(float) + 1.0
        return 6.0 * self.delta / (math.pi**2 * k * k)

    def radius(self, key: Hashable, rung: int) -> float:
        """The confidence radius of run `key`'s value at `rung`: `B_i(m)` of the IISE rule, or for the
        racing rule the one-sided lower radius `b_i(m)` below the top and `B_i` at the top."""
        row = np.array([self._row(key)])
        if self.rule == "race":
            r = self._race_top(row) if rung == self.M - 1 else self._race_low(row, rung)
            return float(r[0])
        return float(self._radii(row, rung)[0])

    def _radii(self, rows: np.ndarray, rung: int) -> np.ndarray:
        if self.rule == "race":
            return self._race_top(rows) if rung == self.M - 1 else self._race_low(rows, rung)
        s = float(self.sigma[rung])
        if s == 0.0 or rows.size == 0:
            return np.zeros(rows.shape)
        d = self._delta_run(rows) / self.M
        return s * subgaussian_radius(self.replicas, d / 2.0, 1.0)

    def _race_low(self, rows: np.ndarray, rung: int | np.ndarray) -> np.ndarray:
        """Racing: one-sided lower radius at `rung` (below the top): `δ/(3M)` with fixed arms, else per run
        (none with a curve-aware bound: it is calibrated on observed values)."""
        s = self.sigma[rung] if self.curve_bound is None else np.zeros(np.shape(self.sigma[rung]))
        if rows.size == 0 or np.all(s == 0.0):
            return np.zeros(rows.shape) if np.ndim(s) == 0 else np.zeros(np.broadcast_shapes(rows.shape, s.shape))
        if self.fixed_arms:
            d = np.full(rows.shape, self.delta / (3.0 * self.M))
        else:
            d = self._delta_run(rows) / (3.0 * self.M)
        if np.ndim(s):
            d = d[:, None]
        return s * subgaussian_radius(self.replicas, d, 1.0)

    def _race_top(self, rows: np.ndarray) -> np.ndarray:
        """Racing: the top-rung radius, `δ/(3K)` (`δ_k/3`) per run and side (none with a curve-aware bound)."""
        s = float(self.sigma[self.M - 1]) if self.curve_bound is None else 0.0
        if s == 0.0 or rows.size == 0:
            return np.zeros(rows.shape)
        return s * subgaussian_radius(self.replicas, self._delta_run(rows) / 3.0, 1.0)

    # ------------------------------------------------------------------ racing
    def _update_upper(self, rows: np.ndarray) -> None:
        """Recompute `U_i` for `rows`: the tightest optimistic bound on the final value over the rungs
        reported (each rung gives a valid bound on the event of the module docstring); a top-rung value
        gives `v(M) + B`."""
        self._inc = None  # the incumbent is found again when asked (values may have changed in bulk)
        if self.curve_bound is not None:
            self._update_upper_curve(rows)
            return
        assert self.race_bias is not None
        top = self.M - 1
        v = self._vals[rows, :top]
        have = ~np.isnan(v)
        low = self._race_low(rows, np.arange(top)) if top else np.zeros((rows.size, 0))
        low = np.broadcast_to(low, v.shape) if v.size else low
        m = np.broadcast_to(np.arange(top), v.shape)
        with np.errstate(invalid="ignore"):
            ub = np.where(have, self.race_bias.optimistic(np.where(have, v + low, 0.0), m), np.inf)
        u = ub.min(axis=1) if top else np.full(rows.size, np.inf)
        vt = self._vals[rows, top]
        at_top = ~np.isnan(vt)
        if at_top.any():
            u = np.where(at_top, vt + self._race_top(rows), u)
        self._upper[rows] = u
        r = self._reached[rows]
        latest = self._vals[rows, np.maximum(r, 0)]
        est = np.where(r == top, latest, self.race_bias.estimate(latest, np.clip(r, 0, top)))
        self._est[rows] = np.where(r < 0, np.inf, est)

    def _curve_inputs(self, rows: np.ndarray) -> tuple[np.ndarray, ...]:
        """Values below the top of `rows`, their previous rung's values and the two fractions (broadcast)."""
        top = self.M - 1
        v = self._vals[rows, :top]
        prev = np.concatenate([np.full((rows.size, 1), np.nan), self._vals[rows, : top - 1]], axis=1)
        f = self._frac[:top]
        pf = np.concatenate([[np.nan], self._frac[: top - 1]])
        return v, prev, f, pf

    def _update_upper_curve(self, rows: np.ndarray) -> None:
        """`U_i` with the curve-aware bound: `min_m v_i(m) + ĝ(x_i(m))` (`v_i(M)` at the top), and the
        estimate `v_i(r) + q_med(x_i(r))` at the run's highest rung `r`."""
        cb = self.curve_bound
        assert cb is not None
        top = self.M - 1
        if rows.size == 0:
            return
        if top:
            v, prev, f, pf = self._curve_inputs(rows)
            have = ~np.isnan(v)
            with np.errstate(invalid="ignore"):
                g = cb.gain(np.where(have, v, 0.0), prev, f, pf)
                t = cb.typical(np.where(have, v, 0.0), prev, f, pf)
            ub = np.where(have, v + g, np.inf)
            u = ub.min(axis=1)
        else:
            u = np.full(rows.size, np.inf)
        vt = self._vals[rows, top]
        u = np.where(np.isnan(vt), u, vt)
        self._upper[rows] = u
        r = self._reached[rows]
        latest = self._vals[rows, np.maximum(r, 0)]
        if top:
            rr = np.clip(r, 0, top - 1)
            est = np.where(r == top, latest, latest + t[np.arange(rows.size), rr])
        else:
            est = latest
        self._est[rows] = np.where(r < 0, np.inf, est)

    def _update_upper_one(self, row: int, rung: int, v: float) -> None:
        """One new value (:meth:`report`): the same numbers as :meth:`_update_upper_curve`, in plain Python."""
        cb = self.curve_bound
        assert cb is not None
        if rung == self.M - 1:
            self._upper[row] = v
            self._est[row] = v
            if self._inc is not None and v > self._inc[1]:
                self._inc = (row, v)
            return
        prev = float(self._vals[row, rung - 1]) if rung else math.nan
        g, t = cb.gain_one(v, prev, float(self._frac[rung]), float(self._frac[rung - 1]) if rung else math.nan)
        if v + g < self._upper[row]:
            self._upper[row] = v + g
        if rung == self._reached[row]:
            self._est[row] = v + t

    def _update_upper_one_zeta(self, row: int, rung: int, v: float) -> None:
        """One new value with ζ⁺ (:meth:`report`): the numbers of :meth:`_update_upper`, in plain Python."""
        b = self.race_bias
        assert b is not None
        if rung == self.M - 1:
            self._upper[row] = v + self._radius_one(row, rung)
            self._est[row] = v
            if self._inc is not None and v - self._radius_one(row, rung) > self._inc[1]:
                self._inc = (row, v - self._radius_one(row, rung))
            return
        u = _affine(b.form, b.ideal, b.upper[rung], v + self._radius_one(row, rung))
        if u < self._upper[row]:
            self._upper[row] = u
        if rung == self._reached[row]:
            self._est[row] = _affine(b.form, b.ideal, b.typical[rung], v)  # type: ignore[index]

    def _radius_one(self, row: int, rung: int) -> float:
        """:meth:`_race_low` (below the top) or :meth:`_race_top` of one run, in plain Python."""
        s = float(self.sigma[rung]) if self.curve_bound is None else 0.0
        if s == 0.0:
            return 0.0
        if self.n_arms is not None:
            d = self.delta / self.n_arms
        else:
            k = float(self._order[row]) + 1.0
            d = 6.0 * self.delta / (math.pi**2 * k * k)
        if rung == self.M - 1:
            d /= 3.0
        else:
            d = self.delta / (3.0 * self.M) if self.fixed_arms else d / (3.0 * self.M)
        return s * math.sqrt(2.0 * math.log(1.0 / d) / self.replicas)

    def _refine_curve(self, rows: np.ndarray) -> bool:
        """Raise the curve bound's λ to the largest score of the top-rung runs `rows` where a run's curve
        exceeded it (see `refine`); every bound is then recomputed. Returns whether it was raised."""
        cb = self.curve_bound
        assert cb is not None
        top = self.M - 1
        if top == 0 or rows.size == 0:
            return False
        v, prev, f, pf = self._curve_inputs(rows)
        final = self._vals[rows, top : top + 1]
        have = ~np.isnan(v) & ~np.isnan(final)
        with np.errstate(invalid="ignore"):
            sc = np.where(have, cb.score(np.where(have, v, 0.0), prev, f, pf, np.where(have, final, 0.0)), -np.inf)
        sc = np.where(np.isfinite(np.asarray(f)) & (np.asarray(f) >= cb.grid_first[0] * (1 - 1e-9)), sc, -np.inf)
        worst = sc.max(axis=1)
        over = worst > cb.lam + 1e-12
        if not over.any():
            return False
        keys = [self._keys[i] for i in rows[over].tolist()]
        self.curve_bound = cb.raised(float(worst.max()) + 1e-9, keys)
        n = len(self._keys)
        self._update_upper(np.arange(n))
        # a run stopped with the bound the study has just shown too tight runs again if the raised bound lets it win
        _, lcb = self.incumbent()
        back = np.flatnonzero((self._status[:n] == STOPPED) & (self._upper[:n] >= lcb))
        self._status[back] = RUNNING
        self._stop_rung[back] = -1
        return True

    def _refine(self, rows: np.ndarray) -> bool:
        """Raise ζ⁺ where the top-rung runs `rows` improved by more than it allows (see `refine`); every bound
        is then recomputed. Returns whether it was raised."""
        b = self.race_bias
        assert b is not None
        top = self.M - 1
        v = self._vals[rows]
        gain = v[:, top : top + 1] - v[:, :top]
        if b.form == "relative":
            room = float(b.ideal) - v[:, :top]  # type: ignore[arg-type]
            with np.errstate(divide="ignore", invalid="ignore"):
                gain = np.where(room > 0, gain / np.where(room > 0, room, 1.0), np.where(gain > 0, 1.0, 0.0))
            gain = np.clip(gain, 0.0, 1.0)
        seen = np.nanmax(np.where(np.isnan(gain), -np.inf, gain), axis=0) if rows.size else np.full(top, -np.inf)
        up = np.asarray(b.upper, dtype=float)
        need = np.isfinite(up[:top]) & (seen > up[:top])
        if not need.any():
            return False
        new = up.copy()
        new[:top] = np.where(need, seen, up[:top])
        new = np.maximum.accumulate(np.where(np.isinf(new), -np.inf, new)[::-1])[::-1]
        new = np.where(np.isinf(up), np.inf, new)
        new[top] = 0.0
        raised = sorted(set(b.details.get("raised_at", [])) | set(np.flatnonzero(new[:top] > up[:top]).tolist()))
        src = str(b.details.get("base_source", b.source))  # the source before any raise (structured, not parsed)
        self.race_bias = RaceBias(
            upper=tuple(new.tolist()),
            typical=tuple(np.minimum(np.asarray(b.typical), new).tolist()),  # type: ignore[arg-type]
            form=b.form,
            ideal=b.ideal,
            source=f"{src} [raised by the study's own curves at rungs {raised}]",
            details={**dict(b.details), "raised_at": raised, "base_source": src},
        )
        n = len(self._keys)
        self._update_upper(np.arange(n))
        return True

    def set_race_bias(self, race_bias: CurveBound | RaceBias | Sequence[float] | Mapping[str, Any]) -> None:
        """Replace ζ⁺ (e.g. a prior chosen once the metric's family is known); every bound is recomputed.
        Runs already stopped stay stopped."""
        self._need_race()
        if isinstance(race_bias, CurveBound) or (isinstance(race_bias, Mapping) and "hi" in race_bias):
            self.curve_bound = race_bias if isinstance(race_bias, CurveBound) else CurveBound.from_dict(race_bias)
            self.race_bias = None
        else:
            self.race_bias, self.curve_bound = RaceBias.coerce(race_bias, self.M), None  # type: ignore[arg-type]
        n = len(self._keys)
        if self.refine and n:
            top = np.flatnonzero(~np.isnan(self._vals[:n, self.M - 1]))
            if top.size:
                if self.curve_bound is not None:
                    self._refine_curve(top)
                else:
                    self._refine(top)
        self._update_upper(np.arange(n))

    def incumbent(self) -> tuple[Hashable | None, float]:
        """Racing: the run with the best top-rung lower bound `v_j(M) − B_j` and that bound (`−inf` when
        no run has reached the top)."""
        if self._inc is not None:
            row, lcb = self._inc
            return (None if row < 0 else self._keys[row]), lcb
        n = len(self._keys)
        top = self.M - 1
        vt = self._vals[:n, top]
        rows = np.flatnonzero(~np.isnan(vt))
        if rows.size == 0:
            return None, -math.inf
        lcb = vt[rows] - self._race_top(rows)
        i = int(np.argmax(lcb))
        self._inc = (int(rows[i]), float(lcb[i]))
        return self._keys[int(rows[i])], float(lcb[i])

    def priority(self, key: Hashable) -> float:
        """Racing: the promotion priority of run `key` (`inf` before its first value): its estimated final
        value (`order="estimate"`), its optimistic bound `U_i` (`order="bound"`), or its rung and then its
        value there (`order="depth"`)."""
        self._need_race()
        row = self._row(key)
        if self.order == "depth":  # one run: no array over all runs (the race policy asks at every pull)
            r = int(self._reached[row])
            if r < 0:
                return math.inf
            return r * _DEPTH + min(max(float(self._vals[row, r]), -_DEPTH / 4), _DEPTH / 4)
        return float((self._est if self.order == "estimate" else self._upper)[row])

    def upper_bound(self, key: Hashable) -> float:
        """Racing: `U_i`, the optimistic bound on run `key`'s final value (`inf` before its first value)."""
        self._need_race()
        return float(self._upper[self._row(key)])

    def _priorities(self) -> np.ndarray:
        if self.order == "depth":
            n = len(self._keys)
            r = self._reached[:n]
            latest = self._vals[np.arange(n), np.maximum(r, 0)]
            out = np.full(self._est.shape, np.inf)
            out[:n] = np.where(r < 0, np.inf, r * _DEPTH + np.clip(latest, -_DEPTH / 4, _DEPTH / 4))
            return out
        return self._est if self.order == "estimate" else self._upper

    def ranked(self, keys: Iterable[Hashable]) -> list[Hashable]:
        """Racing: `keys` in promotion order — decreasing priority, ties in registration order."""
        self._need_race()
        rows = np.array([self._row(k) for k in keys], dtype=np.int64)
        if rows.size == 0:
            return []
        order = np.lexsort((rows, -self._priorities()[rows]))
        return [self._keys[int(rows[i])] for i in order.tolist()]

    def first(self, keys: Iterable[Hashable]) -> Hashable | None:
        """Racing: the running run among `keys` that :meth:`ranked` puts first (None if none is running) —
        in O(len(keys)), for a scheduler choosing which paused trial to resume."""
        self._need_race()
        rows = np.array([self._row(k) for k in keys], dtype=np.int64)
        if rows.size == 0:
            return None
        rows = rows[self._status[rows] == RUNNING]
        if rows.size == 0:
            return None
        pr = self._priorities()[rows]
        best = rows[pr == pr.max()].min()  # ties: registration order
        return self._keys[int(best)]

    def eliminate(self, keys: Iterable[Hashable] | None = None) -> list[Hashable]:
        """Racing: stop every running run (default: all; else among `keys`) that cannot beat the incumbent,
        `U_i < L`. Call it when a run reaches the top (a paused run may then be stopped without being
        resumed). Returns the keys stopped, in registration order."""
        self._need_race()
        _, lcb = self.incumbent()
        n = len(self._keys)
        if keys is None:
            rows = np.arange(n)
        else:
            rows = np.array(sorted({self._row(k) for k in keys}), dtype=np.int64)
        if rows.size == 0 or lcb == -math.inf:
            return []
        rows = rows[(self._status[rows] == RUNNING) & (self._reached[rows] >= 0) & (self._reached[rows] < self.M - 1)]
        hit = rows[self._upper[rows] < lcb]
        self._status[hit] = STOPPED
        self._stop_rung[hit] = self._reached[hit]
        return [self._keys[i] for i in hit.tolist()]

    def answer(self) -> tuple[Hashable | None, int, float | None]:
        """The answer from the best evidence at any moment: the run with the best *latest* value — its final
        value once it reached the top, else its value at its highest rung (never an optimistic extrapolation,
        which would prefer an unfinished run by the selection effect of taking a maximum). A run trained to
        full fidelity therefore loses to a lower-rung run only if that run is already better than it where
        it stands (on a metric that improves with training it can only get better); ties go to the higher
        rung, then to registration order. This is the answer rule of Ray Tune's `scope="last"`, so an
        anytime schedule that does ASHA's work first answers as ASHA does. Runs stopped by the rule are
        excluded. Returns `(key, rung it rests on, value)`."""
        n = len(self._keys)
        rows = np.flatnonzero(np.isin(self._status[:n], (RUNNING, FINISHED, LOST)) & (self._reached[:n] >= 0))
        if rows.size == 0:
            return None, -1, None
        r = self._reached[rows]
        v = self._vals[rows, r]
        i = int(np.lexsort((rows, -r, -v))[0])
        return self._keys[int(rows[i])], int(r[i]), float(v[i])

    def promotable(self, eta: float, *, exclude: Iterable[Hashable] = ()) -> list[Hashable]:
        """ASHA's promotions (Li et al. 2020, *A System for Massively Parallel Hyperparameter Tuning*, MLSys,
        Algorithm 2): running runs paused at a rung `m` below the top whose value is among the best
        `max(1, ⌊n_m / η⌋)` of the `n_m` values recorded at `m` (the best always, as Optuna's
        `SuccessiveHalvingPruner` and Ray's `ASHAScheduler` let the first run at a rung go on); highest rung
        first, then best value. `exclude`:
        runs that are busy. The anytime schedule (:mod:`mf_sched.racing.schedule`) does this work first."""
        n = len(self._keys)
        if n == 0:
            return []
        skip = np.zeros(n, dtype=bool)
        for k in exclude:
            row = self._index_of.get(k)
            if row is not None:
                skip[row] = True
        st, reached = self._status[:n], self._reached[:n]
        out: list[Hashable] = []
        for m in range(self.M - 2, -1, -1):
            v = self._vals[:n, m]
            have = ~np.isnan(v)
            if not have.any():
                continue
            keep = max(1, int(have.sum() // eta))  # the best is always promotable (as Optuna's and Ray's ASHA)
            cut = np.sort(v[have])[::-1][keep - 1]
            cand = np.flatnonzero((reached == m) & (st == RUNNING) & ~skip & have & (v >= cut))
            if cand.size:
                cand = cand[np.lexsort((cand, -v[cand]))]
                out.extend(self._keys[int(i)] for i in cand.tolist())
        return out

    def _need_race(self) -> None:
        if self.rule != "race":
            raise ValueError("this method belongs to the racing rule: build the engine with rule='race'")

    def _rung_evidence(self, rung: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows with a value at `rung`, their values and radii."""
        n = len(self._keys)
        v = self._vals[:n, rung]
        rows = np.flatnonzero(~np.isnan(v))
        return rows, v[rows], self._radii(rows, rung)

    # ------------------------------------------------------------------ decisions
    def _dominated(self, rows: np.ndarray, rung: int) -> tuple[np.ndarray, np.ndarray]:
        """For `rows` with a value at `rung`: (stopped by the rule, halted by the eta cut)."""
        erows, ev, er = self._rung_evidence(rung)
        if rows.size == 0 or erows.size == 0:
            z = np.zeros(rows.size, dtype=bool)
            return z, z.copy()
        best_lcb = float(np.max(ev - er))
        vi = self._vals[rows, rung]
        rule = best_lcb - (vi + self._radii(rows, rung)) >= self.margin[rung] - 1e-12
        halt = np.zeros(rows.size, dtype=bool)
        if self.eta is not None and rung < self.M - 1 and erows.size >= self.min_rung_reports:
            keep = max(1, math.ceil(erows.size / self.eta - 1e-9))
            # the keep-th largest recorded value; ties at the cut survive
            cut = float(np.partition(ev, ev.size - keep)[ev.size - keep])
            halt = (vi < cut) & ~rule
        return rule, halt

    def _apply(self, rows: np.ndarray, rung: int, rule: np.ndarray, halt: np.ndarray) -> list[Hashable]:
        out: list[Hashable] = []
        for r, s in ((rows[rule], STOPPED), (rows[halt], HALTED)):
            if r.size:
                self._status[r] = s
                self._stop_rung[r] = rung
                out.extend(self._keys[i] for i in r.tolist())
                if s == HALTED:
                    self._halted_any = True
        return out

    def should_stop(self, key: Hashable) -> bool:
        """Asynchronous decision for one run, at every rung it has reached, against every value recorded
        there so far; marks it stopped/halted when true. A run already stopped or halted stays so."""
        row = self._row(key)
        st = int(self._status[row])
        if st in (STOPPED, HALTED):
            return True
        if self.rule == "race":
            if st != RUNNING or not 0 <= self._reached[row] < self.M - 1:
                return False
            if self._upper[row] < self.incumbent()[1]:  # eliminate([key]) without building arrays
                self._status[row] = STOPPED
                self._stop_rung[row] = self._reached[row]
                return True
            return False
        for m in range(int(self._reached[row]) + 1):
            if math.isnan(self._vals[row, m]):
                continue
            rows = np.array([row])
            rule, halt = self._dominated(rows, m)
            if m == self.M - 1 or m < self._reached[row]:
                halt[:] = False  # the eta cut acts at the run's current rung below the top only
            if rule[0] or halt[0]:
                if m == self.M - 1 and st == FINISHED:
                    self._status[row] = STOPPED
                    self._stop_rung[row] = m
                    return True
                self._apply(rows, m, rule, halt)
                return True
        return False

    def decide_rung(self, rung: int, keys: Iterable[Hashable] | None = None) -> list[Hashable]:
        """Synchronous decision at `rung`: among `keys` (default: every running or finished run with a
        value there), stop those the rule eliminates against all values recorded at `rung`;
        simultaneous, as in IISE. Returns the stopped (and, with `eta`, halted) keys in registration
        order. Runs without a value at `rung` are skipped. With `rule="race"` the runs at `rung` are
        checked against the incumbent (:meth:`eliminate`)."""
        check_int("rung", rung, 0, self.M - 1)
        n = len(self._keys)
        if self.rule == "race":
            cand = np.flatnonzero(self._reached[:n] == rung) if keys is None else [self._row(k) for k in keys]
            return self.eliminate([self._keys[i] for i in cand if self._reached[i] == rung])
        if keys is None:
            st = self._status[:n]
            rows = np.flatnonzero(((st == RUNNING) | (st == FINISHED)) & ~np.isnan(self._vals[:n, rung]))
        else:
            rows = np.array(sorted({self._row(k) for k in keys}), dtype=np.int64)
            rows = rows[~np.isnan(self._vals[rows, rung]) & np.isin(self._status[rows], (RUNNING, FINISHED))]
        rule, halt = self._dominated(rows, rung)
        if rung == self.M - 1:
            halt[:] = False
        return self._apply(rows, rung, rule, halt)

    def active(self) -> list[Hashable]:
        """Runs neither stopped, halted nor lost (running or finished)."""
        n = len(self._keys)
        rows = np.flatnonzero(np.isin(self._status[:n], (RUNNING, FINISHED)))
        return [self._keys[i] for i in rows.tolist()]

    # ------------------------------------------------------------------ answer
    @property
    def cost(self) -> float:
        """Resumable cost: `Σ_i λ(highest rung of run i)`."""
        n = len(self._keys)
        r = self._reached[:n]
        return float(self._costs[r[r >= 0]].sum())

    def certificate(self) -> RungCertificate:
        """The best run at the top rung and what can be certified about it (see :class:`RungCertificate`)."""
        n = len(self._keys)
        st = self._status[:n]
        counts = {name: int((st == code).sum()) for code, name in _STATUS_NAMES.items()}
        top = self.M - 1
        vtop = self._vals[:n, top]
        have = np.flatnonzero(~np.isnan(vtop))
        uncovered = tuple(self._keys[i] for i in np.flatnonzero((st == LOST) & (self._reached[:n] < top)).tolist())
        src = self.bias_source
        violated = self.violated_by
        if have.size == 0:
            return RungCertificate(
                None,
                None,
                False,
                None,
                False,
                self.delta,
                counts,
                uncovered,
                self.cost,
                self.rule,
                src,
                violated_by=violated,
            )
        # best top-rung value; ties broken by registration order (deterministic in every process)
        rho = int(have[np.argmax(vtop[have])])
        surviving = np.flatnonzero(np.isin(st, (RUNNING, FINISHED, LOST)))
        running_below = surviving[(st[surviving] == RUNNING) & (self._reached[surviving] < top)]
        guaranteed = not self._halted_any and not violated
        eps: float | None = None
        identified = False
        if running_below.size == 0:
            cov = surviving[~np.isnan(vtop[surviving])]
            others = cov[cov != rho]
            if others.size == 0:
                eps = 0.0
                identified = not uncovered and int(st[rho]) in (RUNNING, FINISHED)
            else:
                b = self._radii(others, top)
                b_rho = float(self._radii(np.array([rho]), top)[0])
                eps = max(0.0, float(np.max(vtop[others] + b)) - (float(vtop[rho]) - b_rho))
        if violated:
            eps = None  # the study's own curves exceeded the bound its stops relied on: no ε can be certified
        return RungCertificate(
            key=self._keys[rho],
            value=float(vtop[rho]),
            identified=bool(identified and guaranteed),
            epsilon=eps,
            guaranteed=guaranteed,
            delta=self.delta,
            counts=counts,
            uncovered=uncovered,
            cost=self.cost,
            rule=self.rule,
            bias_source=src,
            violated_by=violated,
        )

    @property
    def violated_by(self) -> tuple[Hashable, ...]:
        """Runs of this study whose observed curves exceeded the curve-aware bound in force (`refine` then
        raised it): stops made before may have been wrong, so the certificate certifies no ε."""
        return tuple(self.curve_bound.raised_by) if self.curve_bound is not None else ()

    @property
    def bias_source(self) -> str:
        """Where the bias bound of the decisions comes from."""
        if self.curve_bound is not None:
            cb = self.curve_bound
            extra = (
                f" [λ raised to {cb.lam:.3g} by the study's own curves: {list(cb.raised_by)}]" if cb.raised_by else ""
            )
            return (cb.source or "given curve bound") + extra
        if self.race_bias is not None:
            return self.race_bias.source or "given ζ⁺"
        return "ladder γ" if self.bias == "gamma" else "ladder ζ"

    def rung_table(self) -> list[dict[str, Any]]:
        """Per rung: runs with a value, runs stopped/halted there, best value and the bias margin (`2ζ(m)` or
        `γ(m)` for the IISE rule, `ζ⁺(m)` for the racing rule)."""
        n = len(self._keys)
        out = []
        for m in range(self.M):
            v = self._vals[:n, m]
            have = ~np.isnan(v)
            out.append(
                {
                    "rung": m,
                    "cost": float(self._costs[m]),
                    "reported": int(have.sum()),
                    "stopped": int(((self._stop_rung[:n] == m) & (self._status[:n] == STOPPED)).sum()),
                    "halted": int(((self._stop_rung[:n] == m) & (self._status[:n] == HALTED)).sum()),
                    "best": float(v[have].max()) if have.any() else None,
                    "margin": self._margin(m),
                }
            )
        return out

    def _margin(self, m: int) -> float:
        """The bias margin shown per rung: `2ζ(m)` / `γ(m)` (IISE), `ζ⁺(m)`, or the curve-aware bound's
        gain for the best value recorded at the rung read as a first rung (an indication: it varies by run)."""
        if self.curve_bound is not None:
            n = len(self._keys)
            v = self._vals[:n, m]
            if m == self.M - 1 or not (~np.isnan(v)).any():
                return 0.0 if m == self.M - 1 else math.inf
            return float(self.curve_bound.gain_one(float(np.nanmax(v)), math.nan, float(self._frac[m]), math.nan)[0])
        return float(self.margin[m] if self.race_bias is None else self.race_bias.upper[m])

    def describe(self) -> str:
        """One line per rung, for `debug_string` and logs."""
        c = self.certificate()
        lines = [
            f"RungEliminator ({self.rule}): {len(self)} runs, {c.counts.get('running', 0)} running, "
            f"{c.counts.get('stopped', 0)} stopped, {c.counts.get('halted', 0)} halted, "
            f"{c.counts.get('finished', 0)} finished; cost {c.cost:g}; best {c.key!r}"
        ]
        for row in self.rung_table():
            best = "-" if row["best"] is None else f"{row['best']:.4g}"
            lines.append(
                f"  rung {row['rung']} (λ={row['cost']:g}, margin {row['margin']:.3g}): {row['reported']} reported, "
                f"{row['stopped']} stopped, {row['halted']} halted, best {best}"
            )
        return "\n".join(lines)

    # ------------------------------------------------------------------ state
    def config(self) -> dict[str, Any]:
        return {
            "ladder": self.ladder.to_dict(),
            "delta": self.delta,
            "sigma": self.sigma.tolist(),
            "replicas": self.replicas,
            "n_arms": self.n_arms,
            "bias": self.bias,
            "eta": self.eta,
            "min_rung_reports": self.min_rung_reports,
            "rule": self.rule,
            "race_bias": (
                self.curve_bound.to_dict()
                if self.curve_bound is not None
                else None
                if self.race_bias is None
                else self.race_bias.to_dict()
            ),
            "fixed_arms": self.fixed_arms,
            "refine": self.refine,
            "order": self.order,
        }

    def state_dict(self) -> dict[str, Any]:
        """Exact, JSON-safe state (keys, values, statuses), restored by :meth:`from_state_dict`."""
        n = len(self._keys)
        return encode(
            {
                "format": _FORMAT,
                "config": self.config(),
                "keys": list(self._keys),
                "values": self._vals[:n].copy(),
                "order": self._order[:n].copy(),
                "status": self._status[:n].copy(),
                "stop_rung": self._stop_rung[:n].copy(),
                "halted_any": self._halted_any,
            }
        )

    @classmethod
    def from_state_dict(cls, state: Mapping[str, Any]) -> RungEliminator:
        """Rebuild an engine saved by :meth:`state_dict`; every field is validated."""
        d = decode(state)
        if not isinstance(d, dict) or d.get("format") != _FORMAT:
            raise StateFormatError(f"not a saved RungEliminator (format {_FORMAT!r} expected)")
        cfg = d["config"]
        if not isinstance(cfg, dict):
            raise StateFormatError("config must be a mapping")
        cfg = dict(cfg)
        try:
            ladder = FidelityLadder.from_dict(cfg.pop("ladder"))
            eng = cls(ladder, **cfg)
        except (TypeError, ValueError, KeyError) as e:
            raise StateFormatError(f"config: {e}") from None
        keys = d["keys"]
        if not isinstance(keys, list):
            raise StateFormatError("keys must be a list")
        n = len(keys)
        arrays = {name: d[name] for name in ("values", "order", "status", "stop_rung")}
        for name, a in arrays.items():
            if not isinstance(a, np.ndarray) or a.shape[0] != n:
                raise StateFormatError(f"{name} must be an array with one row per key ({n})")
        if arrays["values"].shape != (n, eng.M):
            raise StateFormatError(f"values must have shape ({n}, {eng.M})")
        if np.isinf(arrays["values"]).any():
            raise StateFormatError("values must be finite or NaN (not recorded)")
        if n and not np.isin(arrays["status"], list(_STATUS_NAMES)).all():
            raise StateFormatError("status holds an unknown code")
        if n and ((arrays["stop_rung"] < -1) | (arrays["stop_rung"] >= eng.M)).any():
            raise StateFormatError("stop_rung out of range")
        for i, k in enumerate(keys):
            try:
                eng.register(k, index=int(arrays["order"][i]))
            except (TypeError, ValueError) as e:
                raise StateFormatError(f"keys[{i}]: {e}") from None
        if len(eng) != n:
            raise StateFormatError("keys must be unique")
        eng._vals[:n] = arrays["values"]
        eng._status[:n] = arrays["status"]
        eng._stop_rung[:n] = arrays["stop_rung"]
        have = ~np.isnan(eng._vals[:n])
        eng._reached[:n] = np.where(have.any(axis=1), eng.M - 1 - np.argmax(have[:, ::-1], axis=1), -1)
        eng._halted_any = bool(d["halted_any"])
        if (eng.race_bias is not None or eng.curve_bound is not None) and n:
            eng._update_upper(np.arange(n))
        return eng
