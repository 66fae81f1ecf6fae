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

**The racing rule** (`rule="race"`; mf-sched's one-sided variant of Eq. 3). Compare a run with the best
*full-fidelity* result so far and bound only the improvement of the best arm: run `i` stops as soon as its
optimistic bound on its final value falls below the incumbent's pessimistic one,

```text
U_i = min_m bound(v_i(m)) < L = max_{j at the top} (v_j(M) − B_j)
```

with `bound` the unconditional ζ⁺ (:class:`~mf_sched.racing.bias.RaceBias`, plus a one-sided radius) or the
curve-aware bound `v + ĝ(value, slope)` (:class:`~mf_sched.racing.curve_bound.CurveBound`, the integrations'
default, compared on observed values). Either rule may run **synchronously** (:meth:`RungEliminator.decide_rung`)
or **asynchronously** (:meth:`RungEliminator.should_stop` when a run reports) with the same guarantee.

What each rule guarantees, with the proofs (δ-correctness of Eq. 3, the confidence split, the certificate, the
best arm never stopped by racing, the answer within `tolerance` of a full search's with the curve-aware bound,
for any schedule and for arms that enter adaptively): :mod:`mf_sched.racing.certificate`. The arithmetic of the
two rules: `mf_sched/racing/_rules.py`; the runs they decide over: `mf_sched/racing/_runs.py`.

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
from typing import Any

import numpy as np

from mf_sched._serialize import StateFormatError, decode, encode
from mf_sched._validate import check_choice, check_int, check_optional_int
from mf_sched.ladder import FidelityLadder
from mf_sched.policy import check_delta
from mf_sched.racing._rules import IISERule, RaceRule, promotion_quota
from mf_sched.racing._runs import FINISHED, HALTED, LOST, RUNNING, STATUS_NAMES, STOPPED, RunTable, check_key
from mf_sched.racing.bias import RaceBias
from mf_sched.racing.certificate import RungCertificate, certify, describe, rung_table
from mf_sched.racing.curve_bound import CurveBound

__all__ = [
    "RungEliminator", "RungCertificate", "RULES", "ORDERS", "RUNNING", "STOPPED", "HALTED", "FINISHED", "LOST",
    "promotion_quota",
]  # fmt: skip


_FORMAT = "mf_sched.RungEliminator/1"
#: the decision rules: IISE's symmetric rule at a rung, or racing against the full-fidelity incumbent
RULES = ("iise", "race")
#: racing's promotion orders (see `order`)
ORDERS = ("estimate", "bound", "depth")


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
        self.rule = check_choice("rule", rule, RULES)
        if rule == "race":
            if race_bias is None:
                raise ValueError(
                    "rule = 'race' needs race_bias= (a CurveBound, e.g. mf_sched.racing.shipped_curve_bound('unit')"
                    ".select(...); or ζ⁺ per rung: a RaceBias, e.g. mf_sched.racing.bias.race_prior(...), or a list of "
                    "absolute values)"
                )
            if eta is not None:
                raise ValueError("eta (the heuristic halving cut) applies to rule = 'iise' only")
        elif race_bias is not None:
            raise ValueError("race_bias is used by rule = 'race' only")
        res = np.asarray(ladder.resources if ladder.resources is not None else ladder.costs, dtype=float)
        frac = res / res[-1]  # each rung's fraction of training (the curve bound's clock)
        self.fixed_arms = bool(fixed_arms)
        if refine and rule != "race":
            raise ValueError("refine is used by rule = 'race' only")
        self.refine = bool(refine)
        self.order = check_choice("order", order, ORDERS)
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
        self._t = RunTable(M)
        self._rule: IISERule | RaceRule
        self._race: RaceRule | None = None
        if rule == "race":
            self._race = RaceRule(
                self._t,
                race_bias,
                sigma=self.sigma,
                delta=self.delta,
                n_arms=self.n_arms,
                replicas=self.replicas,
                fixed_arms=self.fixed_arms,
                refine=self.refine,
                order=order,
                frac=frac,
            )
            self._rule = self._race
        else:
            self._rule = IISERule(
                self._t,
                sigma=self.sigma,
                delta=self.delta,
                n_arms=self.n_arms,
                replicas=self.replicas,
                margin=self.margin,
                eta=self.eta,
                min_rung_reports=self.min_rung_reports,
                gamma=bias == "gamma",
            )

    @property
    def curve_bound(self) -> CurveBound | None:
        """Racing: the curve-aware bound in force (raised by the study's own curves with `refine`), or None."""
        return None if self._race is None else self._race.curve_bound

    @property
    def race_bias(self) -> RaceBias | None:
        """Racing: ζ⁺ in force (raised by the study's own curves with `refine`), or None."""
        return None if self._race is None else self._race.race_bias

    # ------------------------------------------------------------------ registration and reports
    def __len__(self) -> int:
        return len(self._t.keys)

    def __contains__(self, key: object) -> bool:
        return key in self._t.index_of

    @property
    def keys(self) -> list[Hashable]:
        """Registered runs, in registration order."""
        return list(self._t.keys)

    def register(self, key: Hashable, index: int | None = None) -> int:
        """Add a run (idempotent) and return its row.

        Args:
            key: the run (a str or an int).
            index: its registration index `k` (0-based) for the open-ended δ split — adapters pass a number
                every process agrees on (Optuna's trial number); default: the order of registration.
        """
        return self._t.register(check_key(key), index, self.n_arms)

    def report(self, key: Hashable, rung: int, value: float) -> None:
        """Record run `key`'s value at `rung` (maximised).

        Re-reporting the same value is a no-op (so a state can be rebuilt from a framework's storage); a
        different value for a recorded rung, a NaN or infinite value, or a rung outside `0..M−1` raises
        ValueError and changes nothing.

        Args:
            key: the run (registered on its first report).
            rung: the rung, `0..M−1`.
            value: the metric there, finite (maximised: adapters negate losses).
        """
        check_int("rung", rung, 0, self.M - 1)
        v = float(value)
        if not math.isfinite(v):
            raise ValueError(f"value = {value!r} for run {key!r} at rung {rung} must be finite")
        t = self._t
        key = check_key(key)
        row = t.index_of.get(key)
        if row is not None:
            old = t.vals[row, rung]
            if not math.isnan(old):
                if old != v:
                    raise ValueError(f"run {key!r} already has value {old} at rung {rung}; got {v}")
                return
        row = self.register(key)
        t.vals[row, rung] = v
        if rung > t.reached[row]:
            t.reached[row] = rung
        if rung == self.M - 1 and t.status[row] == RUNNING:
            t.status[row] = FINISHED
        race = self._race
        if race is not None:
            if rung == self.M - 1 and (self.refine or race.learns) and race.refine_with(np.array([row])):
                return
            race.update_one(row, rung, v)

    def report_many(
        self, keys: Sequence[Hashable], values: Any, *, index: Sequence[int] | None = None, trusted: bool = False
    ) -> None:
        """Bulk :meth:`report`, vectorised: the way to rebuild an engine from a framework's storage.

        Runs are registered in order; rungs already recorded keep their value when the new one is equal and
        raise ValueError otherwise (nothing is changed then).

        Args:
            keys: the runs, unique.
            values: `values[i, m]` is run `keys[i]`'s value at rung `m` (NaN: none), shape `(len(keys), M)`.
            index: the registration index of each run, as in :meth:`register` (default: the order).
            trusted: `True` (an adapter's own unique int or str keys on an engine that has none of them yet)
                skips the per-key checks.
        """
        rows, have = self._t.report_many(keys, values, index=index, trusted=trusted, n_arms=self.n_arms)
        race = self._race
        if race is not None:
            if (self.refine or race.learns) and have[:, -1].any():
                race.refine_with(rows[have[:, -1]])
                race.update(np.arange(len(self._t)))
            else:
                race.update(rows)

    def mark_lost(self, key: Hashable) -> None:
        """A run failed or was abandoned: it stays as evidence but is no longer waited for. A run that
        reached the top rung or was stopped keeps its status.

        Args:
            key: the run.
        """
        row = self._t.row(key)
        if self._t.status[row] == RUNNING:
            self._t.status[row] = LOST

    def mark_lost_many(self, keys: Iterable[Hashable]) -> None:
        """:meth:`mark_lost` for many runs at once (runs that are not running keep their status).

        Args:
            keys: the runs.
        """
        rows = np.array([self._t.row(k) for k in keys], dtype=np.int64)
        if rows.size:
            rows = rows[self._t.status[rows] == RUNNING]
            self._t.status[rows] = LOST

    def revive(self, key: Hashable) -> None:
        """Undo :meth:`mark_lost` (a retried trial that continues from its checkpoint).

        Args:
            key: the run.
        """
        row = self._t.row(key)
        if self._t.status[row] == LOST:
            self._t.status[row] = RUNNING

    def status(self, key: Hashable) -> str:
        """`"running"`, `"stopped"` (by the rule), `"halted"` (by the `eta` cut), `"finished"`
        (reached the top rung) or `"lost"`.

        Args:
            key: the run.
        """
        return STATUS_NAMES[int(self._t.status[self._t.row(key)])]

    def statuses(self) -> np.ndarray:
        """The status code of every run, in registration order (`RUNNING`, `STOPPED`, `HALTED`,
        `FINISHED`, `LOST`; a copy) — for adapters that decide over many runs at once."""
        return self._t.status[: len(self._t.keys)].copy()

    def reached_all(self) -> np.ndarray:
        """The highest rung with a value of every run, in registration order (−1: none; a copy)."""
        return self._t.reached[: len(self._t.keys)].copy()

    def values_all(self) -> np.ndarray:
        """Every run's value per rung, `(runs, M)` in registration order (NaN: none; a copy)."""
        return self._t.vals[: len(self._t.keys)].copy()

    def stop_rung(self, key: Hashable) -> int | None:
        """The rung at which the run was stopped or halted, else None.

        Args:
            key: the run.
        """
        r = int(self._t.stop_rung[self._t.row(key)])
        return None if r < 0 else r

    def value(self, key: Hashable, rung: int) -> float | None:
        """Run `key`'s recorded value at `rung`, or None.

        Args:
            key: the run.
            rung: the rung, `0..M−1`.
        """
        v = self._t.vals[self._t.row(key), rung]
        return None if math.isnan(v) else float(v)

    def reached(self, key: Hashable) -> int:
        """Highest rung with a recorded value (−1: none).

        Args:
            key: the run.
        """
        return int(self._t.reached[self._t.row(key)])

    def radius(self, key: Hashable, rung: int) -> float:
        """The confidence radius of run `key`'s value at `rung`: `B_i(m)` of the IISE rule, or for the
        racing rule the one-sided lower radius `b_i(m)` below the top and `B_i` at the top.

        Args:
            key: the run.
            rung: the rung, `0..M−1`.
        """
        return float(self._rule.radii(np.array([self._t.row(key)]), rung)[0])

    # ------------------------------------------------------------------ racing
    def _need_race(self) -> RaceRule:
        if self._race is None:
            raise ValueError("this method belongs to the racing rule: build the engine with rule='race'")
        return self._race

    def set_race_bias(self, race_bias: CurveBound | RaceBias | Sequence[float] | Mapping[str, Any]) -> None:
        """Replace ζ⁺ or the curve-aware bound (e.g. a prior chosen once the metric's family is known); every
        bound is recomputed. Runs already stopped stay stopped.

        Args:
            race_bias: a :class:`~mf_sched.racing.curve_bound.CurveBound` or its dict, or ζ⁺ (a
                :class:`~mf_sched.racing.bias.RaceBias`, its dict, or one absolute value per rung).
        """
        self._need_race().set_bias(race_bias)

    def incumbent(self) -> tuple[Hashable | None, float]:
        """Racing: the run with the best top-rung lower bound `v_j(M) − B_j` and that bound (`−inf` when
        no run has reached the top)."""
        return self._need_race().incumbent()

    def priority(self, key: Hashable) -> float:
        """Racing: the promotion priority of run `key` (`inf` before its first value): its estimated final
        value (`order="estimate"`), its optimistic bound `U_i` (`order="bound"`), or its rung and then its
        value there (`order="depth"`).

        Args:
            key: the run.
        """
        return self._need_race().priority(self._t.row(key))

    def upper_bound(self, key: Hashable) -> float:
        """Racing: `U_i`, the optimistic bound on run `key`'s final value (`inf` before its first value).

        Args:
            key: the run.
        """
        self._need_race()
        return float(self._t.upper[self._t.row(key)])

    def ranked(self, keys: Iterable[Hashable]) -> list[Hashable]:
        """Racing: `keys` in promotion order — decreasing priority, ties in registration order.

        Args:
            keys: the runs to order.
        """
        race = self._need_race()
        rows = np.array([self._t.row(k) for k in keys], dtype=np.int64)
        if rows.size == 0:
            return []
        order = np.lexsort((rows, -race.priorities()[rows]))
        return [self._t.keys[int(rows[i])] for i in order.tolist()]

    def first(self, keys: Iterable[Hashable]) -> Hashable | None:
        """Racing: the running run among `keys` that :meth:`ranked` puts first (None if none is running) —
        in O(len(keys)), for a scheduler choosing which paused trial to resume.

        Args:
            keys: the candidates.
        """
        race = self._need_race()
        rows = np.array([self._t.row(k) for k in keys], dtype=np.int64)
        if rows.size == 0:
            return None
        rows = rows[self._t.status[rows] == RUNNING]
        if rows.size == 0:
            return None
        pr = race.priorities()[rows]
        best = rows[pr == pr.max()].min()  # ties: registration order
        return self._t.keys[int(best)]

    def eliminate(self, keys: Iterable[Hashable] | None = None) -> list[Hashable]:
        """Racing: stop every running run that cannot beat the incumbent, `U_i < L`. Call it when a run
        reaches the top (a paused run may then be stopped without being resumed).

        Args:
            keys: the runs to consider (default: all).

        Returns:
            The keys stopped, in registration order.
        """
        race = self._need_race()
        n = len(self._t.keys)
        if keys is None:
            rows = np.arange(n)
        else:
            rows = np.array(sorted({self._t.row(k) for k in keys}), dtype=np.int64)
        return race.eliminate(rows)

    def answer(self) -> tuple[Hashable | None, int, float | None]:
        """The answer from the best evidence at any moment: the run with the best *latest* value — its final
        value once it reached the top, else its value at its highest rung (never an optimistic extrapolation,
        which would prefer an unfinished run by the selection effect of taking a maximum). A run trained to
        full fidelity therefore loses to a lower-rung run only if that run is already better than it where
        it stands (on a metric that improves with training it can only get better); ties go to the higher
        rung, then to registration order. This is the answer rule of Ray Tune's `scope="last"`, so an
        anytime schedule that does ASHA's work first answers as ASHA does. Runs stopped by the rule are
        excluded. Returns `(key, rung it rests on, value)`."""
        t = self._t
        n = len(t.keys)
        rows = np.flatnonzero(np.isin(t.status[:n], (RUNNING, FINISHED, LOST)) & (t.reached[:n] >= 0))
        if rows.size == 0:
            return None, -1, None
        r = t.reached[rows]
        v = t.vals[rows, r]
        i = int(np.lexsort((rows, -r, -v))[0])
        return t.keys[int(rows[i])], int(r[i]), float(v[i])

    def promotable(self, eta: float, *, exclude: Iterable[Hashable] = (), keep_one: bool = True) -> list[Hashable]:
        """ASHA's promotions (Li et al. 2020, *A System for Massively Parallel Hyperparameter Tuning*, MLSys,
        Algorithm 2): running runs paused at a rung `m` below the top whose value is among the best
        :func:`promotion_quota` `(n_m, η)` of the `n_m` values recorded at `m`; highest rung first, then best
        value. The anytime schedule (:mod:`mf_sched.racing.schedule`) does this work first.

        Args:
            eta: the reduction factor `η > 1`.
            exclude: runs that are busy (never returned).
            keep_one: see :func:`promotion_quota` (True for objectives that cannot resume a run; False, Algorithm
                2's `⌊n/η⌋`, for engines that resume runs: measured better at small budgets).
        """
        t = self._t
        n = len(t.keys)
        if n == 0:
            return []
        skip = np.zeros(n, dtype=bool)
        skip[[r for k in exclude if (r := t.index_of.get(k)) is not None]] = True
        st, reached = t.status[:n], t.reached[:n]
        out: list[Hashable] = []
        for m in range(self.M - 2, -1, -1):
            v = t.vals[:n, m]
            have = ~np.isnan(v)
            if not have.any():
                continue
            keep = promotion_quota(int(have.sum()), eta, keep_one=keep_one)
            if keep == 0:
                continue
            cut = np.sort(v[have])[::-1][keep - 1]
            cand = np.flatnonzero((reached == m) & (st == RUNNING) & ~skip & have & (v >= cut))
            if cand.size:
                cand = cand[np.lexsort((cand, -v[cand]))]
                out.extend(t.keys[int(i)] for i in cand.tolist())
        return out

    # ------------------------------------------------------------------ decisions
    def should_stop(self, key: Hashable) -> bool:
        """Asynchronous decision for one run, at every rung it has reached, against every value recorded
        there so far; marks it stopped/halted when true. A run already stopped or halted stays so.

        Args:
            key: the run.
        """
        row = self._t.row(key)
        if int(self._t.status[row]) in (STOPPED, HALTED):
            return True
        return self._rule.should_stop(row)

    def decide_rung(self, rung: int, keys: Iterable[Hashable] | None = None) -> list[Hashable]:
        """Synchronous decision at `rung`: stop the runs the rule eliminates against all values recorded at
        `rung`, simultaneously, as in IISE. Runs without a value at `rung` are skipped. With `rule="race"`
        the runs at `rung` are checked against the incumbent (:meth:`eliminate`).

        Args:
            rung: the rung, `0..M−1`.
            keys: the runs to decide for (default: every running or finished run with a value there).

        Returns:
            The stopped (and, with `eta`, halted) keys in registration order.
        """
        check_int("rung", rung, 0, self.M - 1)
        t = self._t
        n = len(t.keys)
        if self._race is not None:
            cand = np.flatnonzero(t.reached[:n] == rung) if keys is None else [t.row(k) for k in keys]
            return self.eliminate([t.keys[i] for i in cand if t.reached[i] == rung])
        if keys is None:
            st = t.status[:n]
            rows = np.flatnonzero(((st == RUNNING) | (st == FINISHED)) & ~np.isnan(t.vals[:n, rung]))
        else:
            rows = np.array(sorted({t.row(k) for k in keys}), dtype=np.int64)
            rows = rows[~np.isnan(t.vals[rows, rung]) & np.isin(t.status[rows], (RUNNING, FINISHED))]
        return self._rule.decide_rung(rung, rows)

    def active(self) -> list[Hashable]:
        """Runs neither stopped, halted nor lost (running or finished)."""
        t = self._t
        n = len(t.keys)
        rows = np.flatnonzero(np.isin(t.status[:n], (RUNNING, FINISHED)))
        return [t.keys[i] for i in rows.tolist()]

    # ------------------------------------------------------------------ answer
    @property
    def cost(self) -> float:
        """Resumable cost: `Σ_i λ(highest rung of run i)`."""
        r = self._t.reached[: len(self._t.keys)]
        return float(self._costs[r[r >= 0]].sum())

    def certificate(self) -> RungCertificate:
        """The best run at the top rung and what can be certified about it (see :class:`RungCertificate` and
        the proofs in :mod:`mf_sched.racing.certificate`)."""
        rule = self._rule
        return certify(
            self._t,
            lambda rows: rule.radii(rows, self.M - 1),
            delta=self.delta,
            cost=self.cost,
            rule=self.rule,
            bias_source=self.bias_source,
            violated_by=self.violated_by,
            evidence=rule.evidence() if isinstance(rule, RaceRule) else None,
            learned=isinstance(rule, RaceRule) and rule.learns,
            tolerance=self.curve_bound.tolerance if self.curve_bound is not None else 0.0,
            borrowed=self.race_bias is not None and "family" in self.race_bias.details,  # the shipped ζ⁺ prior
        )

    @property
    def violated_by(self) -> tuple[Hashable, ...]:
        """Runs of this study whose observed curves exceeded the curve-aware bound in force (`refine` then
        raised it): stops made before may have been wrong, so the certificate certifies no ε."""
        cb = self.curve_bound
        return tuple(cb.raised_by) if cb is not None else ()

    @property
    def bias_source(self) -> str:
        """Where the bias bound of the decisions comes from."""
        return self._rule.source

    def rung_table(self) -> list[dict[str, Any]]:
        """Per rung: runs with a value, runs stopped/halted there, best value and the bias margin (`2ζ(m)` or
        `γ(m)` for the IISE rule, `ζ⁺(m)` for the racing rule)."""
        return rung_table(self._t, self._costs, self._rule.margin_at)

    def describe(self) -> str:
        """One line per rung, for `debug_string` and logs."""
        return describe(self.rule, len(self), self.certificate(), self.rung_table())

    # ------------------------------------------------------------------ state
    def config(self) -> dict[str, Any]:
        """The constructor's arguments (the ladder and the bias bound as dicts): `RungEliminator(**config)`
        rebuilds an empty engine with the same rule."""
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
        t = self._t
        n = len(t.keys)
        return encode(
            {
                "format": _FORMAT,
                "config": self.config(),
                "keys": list(t.keys),
                "values": t.vals[:n].copy(),
                "order": t.order[:n].copy(),
                "status": t.status[:n].copy(),
                "stop_rung": t.stop_rung[:n].copy(),
                "halted_any": t.halted_any,
            }
        )

    @classmethod
    def from_state_dict(cls, state: Mapping[str, Any]) -> RungEliminator:
        """Rebuild an engine saved by :meth:`state_dict`; every field is validated.

        Args:
            state: the mapping :meth:`state_dict` returned (after a JSON round trip or not).

        Raises:
            StateFormatError: naming the field that does not fit.
        """
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
        if n and not np.isin(arrays["status"], list(STATUS_NAMES)).all():
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
        t = eng._t
        t.vals[:n] = arrays["values"]
        t.status[:n] = arrays["status"]
        t.stop_rung[:n] = arrays["stop_rung"]
        have = ~np.isnan(t.vals[:n])
        t.reached[:n] = np.where(have.any(axis=1), eng.M - 1 - np.argmax(have[:, ::-1], axis=1), -1)
        t.halted_any = bool(d["halted_any"])
        if eng._race is not None and n:
            eng._race.update(np.arange(n))
        return eng
