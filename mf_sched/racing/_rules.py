"""The two decision rules of :class:`~mf_sched.racing.engine.RungEliminator`, over its :class:`RunTable`.

* :class:`IISERule` — IISE's elimination at a rung (Poiani, Metelli, Restelli 2022, NeurIPS, Algorithm 1, Eq. 3):
  run `i` stops when some run `j` has `(v_j(m) − B_j(m)) − (v_i(m) + B_i(m)) ≥ 2ζ(m)` (or `≥ γ(m)`, IISE-γ §5),
  plus the optional successive-halving cut `eta` (heuristic);
* :class:`RaceRule` — racing against the full-fidelity incumbent: run `i` stops when its optimistic bound on
  its final value, `U_i = min_m` (ζ⁺-bound or curve-aware bound of its value at rung `m`), falls below the
  incumbent's `L = max_j v_j(M) − B_j`; the promotion order; the study's own refinement of the bound.

The proofs of both rules are in :mod:`mf_sched.racing.certificate`. The engine owns the runs; a rule owns the
arithmetic of its decisions and, for racing, the bias bound in force.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from mf_sched.confidence import subgaussian_radius
from mf_sched.racing._runs import FINISHED, HALTED, RUNNING, STOPPED, RunTable, delta_per_run
from mf_sched.racing.bias import RaceBias
from mf_sched.racing.curve_bound import CurveBound
from mf_sched.racing.evidence import Evidence, study_statistic

DEPTH = 1e12  # "depth" order: rung × DEPTH + value ranks the highest rung first, then the best value


def _affine(form: str, ideal: float | None, b: float, v: float) -> float:
    """:meth:`~mf_sched.racing.bias.RaceBias.optimistic` of one value with bound `b`, in plain Python."""
    if form == "absolute":
        return v + b
    if math.isinf(b):
        return math.inf
    room = max(float(ideal) - v, 0.0)  # type: ignore[arg-type]
    return v + (b * room if room > 0 else 0.0)


def coerce_bias(race_bias: Any, M: int) -> tuple[CurveBound | None, RaceBias | None]:
    """`(curve_bound, None)` for a :class:`CurveBound` or its dict, else `(None, ζ⁺ as a RaceBias)`."""
    if isinstance(race_bias, CurveBound) or (isinstance(race_bias, Mapping) and "hi" in race_bias):
        return (race_bias if isinstance(race_bias, CurveBound) else CurveBound.from_dict(race_bias)), None
    return None, RaceBias.coerce(race_bias, M)


def promotion_quota(n: int, eta: float, *, keep_one: bool = True) -> int:
    """How many of the `n` values recorded at a rung ASHA lets go on (Li et al. 2020, *A System for Massively
    Parallel Hyperparameter Tuning*, MLSys, Algorithm 2): `⌊n/η⌋`, or `max(1, ⌊n/η⌋)` with `keep_one` (the best
    always goes on, as in Optuna's `SuccessiveHalvingPruner` and Ray's `ASHAScheduler`, which cannot pause a run and
    resume it later). The one place of this rule: the engine's promotions, the race policy's and the adapters'.

    Args:
        n: the number of values recorded at the rung (≥ 0).
        eta: the reduction factor `η > 1`.
        keep_one: whether the best run goes on before `η` values are recorded.

    Example:
        >>> from mf_sched.racing.engine import promotion_quota
        >>> promotion_quota(2, 3), promotion_quota(2, 3, keep_one=False), promotion_quota(9, 3, keep_one=False)
        (1, 0, 3)
    """
    k = int(n // eta)
    return max(1, k) if keep_one else k


class IISERule:
    """IISE's symmetric elimination at a rung with the ladder's `2ζ(m)` (or `γ(m)`) band (Eq. 3).

    Args:
        t: the engine's runs.
        sigma: sub-Gaussian scale per rung.
        delta: the confidence δ.
        n_arms: the number of runs `K` if known (`δ/(KM)` per run and rung), else `None` (open-ended).
        replicas: seeds averaged per value.
        margin: the band per rung, `2ζ(m)` or `γ(m)`.
        eta: the heuristic successive-halving cut, or `None`.
        min_rung_reports: values a rung needs before the `eta` cut applies there.
        gamma: the band is IISE-γ's `γ(m)` (else `2ζ(m)`).
    """

    def __init__(
        self,
        t: RunTable,
        *,
        sigma: np.ndarray,
        delta: float,
        n_arms: int | None,
        replicas: int,
        margin: np.ndarray,
        eta: float | None,
        min_rung_reports: int,
        gamma: bool,
    ) -> None:
        self.t, self.M = t, t.M
        self.sigma, self.delta, self.n_arms, self.replicas = sigma, delta, n_arms, replicas
        self.margin, self.eta, self.min_rung_reports = margin, eta, min_rung_reports
        self.gamma = gamma

    @property
    def source(self) -> str:
        """Where the band comes from: the ladder's ζ or γ."""
        return "ladder γ" if self.gamma else "ladder ζ"

    def radii(self, rows: np.ndarray, rung: int) -> np.ndarray:
        """`B_i(m)`: the two-sided sub-Gaussian radius at `δ_i / M` per run and rung."""
        s = float(self.sigma[rung])
        if s == 0.0 or rows.size == 0:
            return np.zeros(rows.shape)
        d = delta_per_run(self.delta, self.n_arms, self.t.order[rows]) / self.M
        return s * subgaussian_radius(self.replicas, d / 2.0, 1.0)

    def _evidence(self, rung: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows with a value at `rung`, their values and radii."""
        n = len(self.t)
        v = self.t.vals[:n, rung]
        rows = np.flatnonzero(~np.isnan(v))
        return rows, v[rows], self.radii(rows, rung)

    def dominated(self, rows: np.ndarray, rung: int) -> tuple[np.ndarray, np.ndarray]:
        """For `rows` with a value at `rung`: (stopped by the rule, halted by the eta cut)."""
        erows, ev, er = self._evidence(rung)
        if rows.size == 0 or erows.size == 0:
            z = np.zeros(rows.size, dtype=bool)
            return z, z.copy()
        best_lcb = float(np.max(ev - er))
        vi = self.t.vals[rows, rung]
        rule = best_lcb - (vi + self.radii(rows, rung)) >= self.margin[rung] - 1e-12
        halt = np.zeros(rows.size, dtype=bool)
        if self.eta is not None and rung < self.M - 1 and erows.size >= self.min_rung_reports:
            keep = max(1, math.ceil(erows.size / self.eta - 1e-9))
            # the keep-th largest recorded value; ties at the cut survive
            cut = float(np.partition(ev, ev.size - keep)[ev.size - keep])
            halt = (vi < cut) & ~rule
        return rule, halt

    def apply(self, rows: np.ndarray, rung: int, rule: np.ndarray, halt: np.ndarray) -> list[Hashable]:
        """Mark `rows[rule]` stopped and `rows[halt]` halted at `rung`; their keys, stopped first."""
        t = self.t
        out: list[Hashable] = []
        for r, s in ((rows[rule], STOPPED), (rows[halt], HALTED)):
            if r.size:
                t.status[r] = s
                t.stop_rung[r] = rung
                out.extend(t.keys[i] for i in r.tolist())
                if s == HALTED:
                    t.halted_any = True
        return out

    def should_stop(self, row: int) -> bool:
        """The asynchronous decision for one running or finished run, at every rung it has reached."""
        t = self.t
        st = int(t.status[row])
        for m in range(int(t.reached[row]) + 1):
            if math.isnan(t.vals[row, m]):
                continue
            rows = np.array([row])
            rule, halt = self.dominated(rows, m)
            if m == self.M - 1 or m < t.reached[row]:
                halt[:] = False  # the eta cut acts at the run's current rung below the top only
            if rule[0] or halt[0]:
                if m == self.M - 1 and st == FINISHED:
                    t.status[row] = STOPPED
                    t.stop_rung[row] = m
                    return True
                self.apply(rows, m, rule, halt)
                return True
        return False

    def decide_rung(self, rung: int, rows: np.ndarray) -> list[Hashable]:
        """The synchronous decision at `rung` for `rows` (running or finished, with a value there)."""
        rule, halt = self.dominated(rows, rung)
        if rung == self.M - 1:
            halt[:] = False
        return self.apply(rows, rung, rule, halt)

    def margin_at(self, m: int) -> float:
        """The band shown per rung: `2ζ(m)` or `γ(m)`."""
        return float(self.margin[m])


class RaceRule:
    """Racing against the full-fidelity incumbent with ζ⁺ or the curve-aware bound (see the engine's `rule="race"`).

    Args:
        t: the engine's runs.
        race_bias: the curve-aware bound (:class:`CurveBound` or its dict) or ζ⁺ (a :class:`RaceBias`, its dict or
            one absolute value per rung).
        sigma: sub-Gaussian scale per rung (unused with a curve-aware bound: it is calibrated on observed values).
        delta: the confidence δ.
        n_arms: the number of runs `K` if known, else `None` (open-ended).
        replicas: seeds averaged per value.
        fixed_arms: the runs were fixed before any evaluation (the lower radius needs no union over runs).
        refine: raise the bound when a finished run's curve exceeds it.
        order: the promotion order, `"estimate"`, `"bound"` or `"depth"`.
        frac: each rung's fraction of training (the curve-aware bound's clock).
    """

    def __init__(
        self,
        t: RunTable,
        race_bias: Any,
        *,
        sigma: np.ndarray,
        delta: float,
        n_arms: int | None,
        replicas: int,
        fixed_arms: bool,
        refine: bool,
        order: str,
        frac: np.ndarray,
    ) -> None:
        self.t, self.M = t, t.M
        self.sigma, self.delta, self.n_arms, self.replicas = sigma, delta, n_arms, replicas
        self.fixed_arms, self.refine, self.order, self.frac = fixed_arms, refine, order, frac
        self.curve_bound, self.race_bias = coerce_bias(race_bias, t.M)
        self.inc: tuple[int, float] | None = (-1, -math.inf)  # the incumbent (row, lower bound), cached

    @property
    def source(self) -> str:
        """Where the bound of the decisions comes from (and whether the study's own curves raised it)."""
        if self.curve_bound is not None:
            cb = self.curve_bound
            extra = (
                f" [λ raised to {cb.lam:.3g} by the study's own curves: {list(cb.raised_by)}]" if cb.raised_by else ""
            )
            return (cb.source or "given curve bound") + extra
        assert self.race_bias is not None
        return self.race_bias.source or "given ζ⁺"

    # ------------------------------------------------------------------ radii
    def low(self, rows: np.ndarray, rung: int | np.ndarray) -> np.ndarray:
        """One-sided lower radius at `rung` (below the top): `δ/(3M)` with fixed arms, else per run (none with a
        curve-aware bound: it is calibrated on observed values)."""
        s = self.sigma[rung] if self.curve_bound is None else np.zeros(np.shape(self.sigma[rung]))
        if rows.size == 0 or np.all(s == 0.0):
            return np.zeros(rows.shape) if np.ndim(s) == 0 else np.zeros(np.broadcast_shapes(rows.shape, s.shape))
        if self.fixed_arms:
            d = np.full(rows.shape, self.delta / (3.0 * self.M))
        else:
            d = delta_per_run(self.delta, self.n_arms, self.t.order[rows]) / (3.0 * self.M)
        if np.ndim(s):
            d = d[:, None]
        return s * subgaussian_radius(self.replicas, d, 1.0)

    def top(self, rows: np.ndarray) -> np.ndarray:
        """The top-rung radius, `δ/(3K)` (`δ_k/3`) per run and side (none with a curve-aware bound)."""
        s = float(self.sigma[self.M - 1]) if self.curve_bound is None else 0.0
        if s == 0.0 or rows.size == 0:
            return np.zeros(rows.shape)
        return s * subgaussian_radius(
            self.replicas, delta_per_run(self.delta, self.n_arms, self.t.order[rows]) / 3.0, 1.0
        )

    def radii(self, rows: np.ndarray, rung: int) -> np.ndarray:
        """`b_i(m)` below the top, `B_i` at the top."""
        return self.top(rows) if rung == self.M - 1 else self.low(rows, rung)

    def _radius_one(self, row: int, rung: int) -> float:
        """:meth:`low` (below the top) or :meth:`top` of one run, in plain Python."""
        s = float(self.sigma[rung]) if self.curve_bound is None else 0.0
        if s == 0.0:
            return 0.0
        if self.n_arms is not None:
            d = self.delta / self.n_arms
        else:
            k = float(self.t.order[row]) + 1.0
            d = 6.0 * self.delta / (math.pi**2 * k * k)
        if rung == self.M - 1:
            d /= 3.0
        else:
            d = self.delta / (3.0 * self.M) if self.fixed_arms else d / (3.0 * self.M)
        return s * math.sqrt(2.0 * math.log(1.0 / d) / self.replicas)

    # ------------------------------------------------------------------ the optimistic bound U_i
    def update(self, rows: np.ndarray) -> None:
        """Recompute `U_i` for `rows`: the tightest optimistic bound on the final value over the rungs reported
        (each rung gives a valid bound on the event of the proof); a top-rung value gives `v(M) + B`."""
        self.inc = None  # the incumbent is found again when asked (values may have changed in bulk)
        if self.curve_bound is not None:
            self._update_curve(rows)
            return
        assert self.race_bias is not None
        t = self.t
        top = self.M - 1
        v = t.vals[rows, :top]
        have = ~np.isnan(v)
        low = self.low(rows, np.arange(top)) if top else np.zeros((rows.size, 0))
        low = np.broadcast_to(low, v.shape) if v.size else low
        m = np.broadcast_to(np.arange(top), v.shape)
        with np.errstate(invalid="ignore"):
            ub = np.where(have, self.race_bias.optimistic(np.where(have, v + low, 0.0), m), np.inf)
        u = ub.min(axis=1) if top else np.full(rows.size, np.inf)
        vt = t.vals[rows, top]
        at_top = ~np.isnan(vt)
        if at_top.any():
            u = np.where(at_top, vt + self.top(rows), u)
        t.upper[rows] = u
        r = t.reached[rows]
        latest = t.vals[rows, np.maximum(r, 0)]
        est = np.where(r == top, latest, self.race_bias.estimate(latest, np.clip(r, 0, top)))
        t.est[rows] = np.where(r < 0, np.inf, est)

    def _curve_inputs(self, rows: np.ndarray) -> tuple[np.ndarray, ...]:
        """Values below the top of `rows`, their previous rung's values and the two fractions (broadcast)."""
        top = self.M - 1
        v = self.t.vals[rows, :top]
        prev = np.concatenate([np.full((rows.size, 1), np.nan), self.t.vals[rows, : top - 1]], axis=1)
        f = self.frac[:top]
        pf = np.concatenate([[np.nan], self.frac[: top - 1]])
        return v, prev, f, pf

    def _update_curve(self, rows: np.ndarray) -> None:
        """`U_i` with the curve-aware bound: `min_m v_i(m) + ĝ(x_i(m))` (`v_i(M)` at the top), and the estimate
        `v_i(r) + q_med(x_i(r))` at the run's highest rung `r`."""
        cb = self.curve_bound
        assert cb is not None
        t = self.t
        top = self.M - 1
        if rows.size == 0:
            return
        if top:
            v, prev, f, pf = self._curve_inputs(rows)
            have = ~np.isnan(v)
            with np.errstate(invalid="ignore"):
                g = cb.gain(np.where(have, v, 0.0), prev, f, pf)
                typ = cb.typical(np.where(have, v, 0.0), prev, f, pf)
            ub = np.where(have, v + g, np.inf)
            u = ub.min(axis=1)
        else:
            u = np.full(rows.size, np.inf)
        vt = t.vals[rows, top]
        u = np.where(np.isnan(vt), u, vt)
        t.upper[rows] = u
        r = t.reached[rows]
        latest = t.vals[rows, np.maximum(r, 0)]
        if top:
            rr = np.clip(r, 0, top - 1)
            est = np.where(r == top, latest, latest + typ[np.arange(rows.size), rr])
        else:
            est = latest
        t.est[rows] = np.where(r < 0, np.inf, est)

    def update_one(self, row: int, rung: int, v: float) -> None:
        """One new value: the numbers of :meth:`update`, in plain Python (a tell must cost microseconds)."""
        t = self.t
        cb = self.curve_bound
        if cb is not None:
            if rung == self.M - 1:
                t.upper[row] = v
                t.est[row] = v
                if self.inc is not None and v > self.inc[1]:
                    self.inc = (row, v)
                return
            prev = float(t.vals[row, rung - 1]) if rung else math.nan
            g, typ = cb.gain_one(v, prev, float(self.frac[rung]), float(self.frac[rung - 1]) if rung else math.nan)
            if v + g < t.upper[row]:
                t.upper[row] = v + g
            if rung == t.reached[row]:
                t.est[row] = v + typ
            return
        b = self.race_bias
        assert b is not None
        if rung == self.M - 1:
            t.upper[row] = v + self._radius_one(row, rung)
            t.est[row] = v
            if self.inc is not None and v - self._radius_one(row, rung) > self.inc[1]:
                self.inc = (row, v - self._radius_one(row, rung))
            return
        u = _affine(b.form, b.ideal, b.upper[rung], v + self._radius_one(row, rung))
        if u < t.upper[row]:
            t.upper[row] = u
        if rung == t.reached[row]:
            t.est[row] = _affine(b.form, b.ideal, b.typical[rung], v)  # type: ignore[index]

    # ------------------------------------------------------------------ refinement by the study's own curves
    def refine_with(self, rows: np.ndarray) -> bool:
        """Raise the bound where the top-rung runs `rows` exceeded it (see the engine's `refine`); every bound is
        then recomputed. Returns whether it was raised."""
        return self._refine_curve(rows) if self.curve_bound is not None else self._refine_zeta(rows)

    @property
    def learns(self) -> bool:
        """The bound in force learns from the study's own finished curves (a curve bound with an evidence model)."""
        return self.curve_bound is not None and self.curve_bound.evidence is not None

    def _scores(self, rows: np.ndarray) -> np.ndarray:
        """Each top-rung run's conformal score: the largest normalised exceedance of its curve over its rungs
        (:meth:`CurveBound.score`); above λ exactly when its curve exceeded the bound somewhere."""
        cb = self.curve_bound
        assert cb is not None
        v, prev, f, pf = self._curve_inputs(rows)
        final = self.t.vals[rows, self.M - 1 : self.M]
        have = ~np.isnan(v) & ~np.isnan(final)
        with np.errstate(invalid="ignore"):
            sc = np.where(have, cb.score(np.where(have, v, 0.0), prev, f, pf, np.where(have, final, 0.0)), -np.inf)
        sc = np.where(np.isfinite(np.asarray(f)) & (np.asarray(f) >= cb.grid_first[0] * (1 - 1e-9)), sc, -np.inf)
        return sc.max(axis=1)

    def evidence(self) -> Evidence | None:
        """What the study's runs at the top say about the bound (:mod:`mf_sched.racing.evidence`): their statistic,
        the λ it gives, whether the study looks unlike the calibration tasks and which runs exceeded the bound;
        `None` without an evidence model."""
        cb = self.curve_bound
        if cb is None or cb.evidence is None or self.M < 2:
            return None
        ev, t, top = cb.evidence, self.t, self.M - 1
        n = len(t)
        rows = np.flatnonzero(~np.isnan(t.vals[:n, top]))
        if rows.size == 0:
            return Evidence(0, 0, math.nan, ev.prior_lam, ev.prior_lam, math.inf, False)
        sc = self._scores(rows)
        used = ev.used(rows.size)
        stat = study_statistic(sc, t.vals[rows, top - 1], used) if used else math.nan
        lam, used, t_hi = ev.lam(stat, rows.size)
        # the miss event is about the good runs (within the tolerance of the best final value): one of them beyond
        # the bound contradicts it; a poor run beyond it does not (λ is calibrated on the good runs' scores)
        final = t.vals[rows, top]
        best = float(final.max())
        over = (sc > lam + 1e-12) & (final >= best - cb.tolerance * abs(best) - 1e-12)
        if over.any():
            lam = float(sc[over].max()) + 1e-9
        unlike = bool(used and stat > t_hi)
        return Evidence(int(rows.size), used, stat, lam, ev.prior_lam, t_hi, unlike,
                        tuple(t.keys[i] for i in rows[over].tolist()))  # fmt: skip

    def _learn(self) -> bool:
        """Set λ from the study's runs at the top (:meth:`evidence`): smaller where their curves are regular, larger
        where they are not; every bound is recomputed, a raised λ lets runs stopped before that can now win run
        again, a lowered one stops more (at the next elimination). Returns whether λ changed."""
        cb = self.curve_bound
        e = self.evidence()
        assert cb is not None and e is not None
        if e.lam == cb.lam and tuple(e.exceeded_by) == tuple(cb.raised_by):
            return False
        self.curve_bound = dataclasses.replace(cb, lam=float(e.lam), raised_by=tuple(e.exceeded_by))
        t = self.t
        n = len(t)
        self.update(np.arange(n))
        if e.lam > cb.lam:
            self._revive()
        return True

    def _revive(self) -> None:
        """After a raise of the bound: every stopped run whose recomputed bound can again beat the incumbent runs
        again."""
        t = self.t
        n = len(t)
        _, lcb = self.incumbent()
        back = np.flatnonzero((t.status[:n] == STOPPED) & (t.upper[:n] >= lcb))
        t.status[back] = RUNNING
        t.stop_rung[back] = -1

    def _refine_curve(self, rows: np.ndarray) -> bool:
        """Raise the curve bound's λ to the largest score of the top-rung runs `rows` where a run's curve
        exceeded it; a run stopped with the bound the study has just shown too tight runs again if the raised
        bound lets it win. With an evidence model, λ is learned from every run at the top instead (:meth:`_learn`)."""
        cb = self.curve_bound
        assert cb is not None
        if cb.evidence is not None:
            return self._learn()
        t = self.t
        top = self.M - 1
        if top == 0 or rows.size == 0:
            return False
        worst = self._scores(rows)
        over = worst > cb.lam + 1e-12
        if not over.any():
            return False
        keys = [t.keys[i] for i in rows[over].tolist()]
        self.curve_bound = cb.raised(float(worst.max()) + 1e-9, keys)
        n = len(t)
        self.update(np.arange(n))
        self._revive()
        return True

    def _refine_zeta(self, rows: np.ndarray) -> bool:
        """Raise ζ⁺ where the top-rung runs `rows` improved by more than it allows."""
        b = self.race_bias
        assert b is not None
        top = self.M - 1
        v = self.t.vals[rows]
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
        self.update(np.arange(len(self.t)))
        return True

    def set_bias(self, race_bias: CurveBound | RaceBias | Sequence[float] | Mapping[str, Any]) -> None:
        """Replace the bound; refine it with the runs already at the top (with `refine`) and recompute every
        `U_i`."""
        self.curve_bound, self.race_bias = coerce_bias(race_bias, self.M)
        t = self.t
        n = len(t)
        if (self.refine or self.learns) and n:
            top = np.flatnonzero(~np.isnan(t.vals[:n, self.M - 1]))
            if top.size:
                self.refine_with(top)
        self.update(np.arange(n))

    # ------------------------------------------------------------------ the incumbent, the order, the stops
    def incumbent(self) -> tuple[Hashable | None, float]:
        """The run with the best top-rung lower bound `v_j(M) − B_j` and that bound (`−inf`: none at the top)."""
        t = self.t
        if self.inc is not None:
            row, lcb = self.inc
            return (None if row < 0 else t.keys[row]), lcb
        n = len(t)
        vt = t.vals[:n, self.M - 1]
        rows = np.flatnonzero(~np.isnan(vt))
        if rows.size == 0:
            return None, -math.inf
        lcb = vt[rows] - self.top(rows)
        i = int(np.argmax(lcb))
        self.inc = (int(rows[i]), float(lcb[i]))
        return t.keys[int(rows[i])], float(lcb[i])

    def priority(self, row: int) -> float:
        """The promotion priority of one run (see the engine's `order`)."""
        t = self.t
        if self.order == "depth":  # one run: no array over all runs (the race policy asks at every pull)
            r = int(t.reached[row])
            if r < 0:
                return math.inf
            return r * DEPTH + min(max(float(t.vals[row, r]), -DEPTH / 4), DEPTH / 4)
        return float((t.est if self.order == "estimate" else t.upper)[row])

    def priorities(self) -> np.ndarray:
        """The promotion priority of every row (spare rows included)."""
        t = self.t
        if self.order == "depth":
            n = len(t)
            r = t.reached[:n]
            latest = t.vals[np.arange(n), np.maximum(r, 0)]
            out = np.full(t.est.shape, np.inf)
            out[:n] = np.where(r < 0, np.inf, r * DEPTH + np.clip(latest, -DEPTH / 4, DEPTH / 4))
            return out
        return t.est if self.order == "estimate" else t.upper

    def eliminate(self, rows: np.ndarray) -> list[Hashable]:
        """Stop every running run among `rows` below the top that cannot beat the incumbent, `U_i < L`."""
        t = self.t
        _, lcb = self.incumbent()
        if rows.size == 0 or lcb == -math.inf:
            return []
        rows = rows[(t.status[rows] == RUNNING) & (t.reached[rows] >= 0) & (t.reached[rows] < self.M - 1)]
        hit = rows[t.upper[rows] < lcb]
        t.status[hit] = STOPPED
        t.stop_rung[hit] = t.reached[hit]
        return [t.keys[i] for i in hit.tolist()]

    def should_stop(self, row: int) -> bool:
        """:meth:`eliminate` for one running run, without building arrays."""
        t = self.t
        if t.status[row] != RUNNING or not 0 <= t.reached[row] < self.M - 1:
            return False
        if t.upper[row] < self.incumbent()[1]:
            t.status[row] = STOPPED
            t.stop_rung[row] = t.reached[row]
            return True
        return False

    def margin_at(self, m: int) -> float:
        """The bias margin shown per rung: `ζ⁺(m)`, or the curve-aware bound's gain for the best value recorded at
        the rung read as a first rung (an indication: it varies by run)."""
        if self.curve_bound is not None:
            n = len(self.t)
            v = self.t.vals[:n, m]
            if m == self.M - 1 or not (~np.isnan(v)).any():
                return 0.0 if m == self.M - 1 else math.inf
            return float(self.curve_bound.gain_one(float(np.nanmax(v)), math.nan, float(self.frac[m]), math.nan)[0])
        assert self.race_bias is not None
        return float(self.race_bias.upper[m])
