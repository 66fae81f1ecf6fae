"""The race as data: what :func:`~mf_sched.visualization.plot_race` draws and the report tabulates.

:meth:`RaceData.from_engine` reads a :class:`~mf_sched.racing.engine.RungEliminator` through its public methods only
(`value`, `status`, `stop_rung`, `upper_bound`, `incumbent`, `radius`, `certificate`,
`rung_table`, `state_dict`), so that the plot follows the engine whatever bound it computes:

* every run's value at each rung it reached, and its **bound after each rung** — the optimistic bound on its
  final value that the engine holds once the run's values up to that rung are known (for the racing rule, the
  engine rebuilt from its saved state with the later rungs masked, read with `upper_bound`; for IISE's rule
  `v + B + 2ζ(m)`, the quantity that is compared with the best lower bound at the rung, Poiani et al. 2022,
  Eq. 3);
* the **incumbent over time**: each time a run reaches the top rung, the run with the best pessimistic bound
  `v(M) − B` so far (the value stopped runs are raced against,
  :meth:`~mf_sched.racing.engine.RungEliminator.incumbent`);
* each stopped run's **stop**: the rung, when it happened (the first time, at or after its stop rung, that the
  incumbent's pessimistic bound passed the run's bound) and why, with the numbers the adapter recorded at the
  decision when there are any (`evidence`);
* the **certificate** (:meth:`~mf_sched.racing.engine.RungEliminator.certificate`): the recommended run, ε, δ, where the
  bias bound came from, and the runs left uncovered.

Values are in the metric's own orientation (`sign = -1` turns the engine's maximised values back into
losses): for a minimised metric a run's *bound* is the lowest final value it could still reach and the
incumbent's *pessimistic bound* is an upper bound on its value.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mf_sched.racing.certificate import in_progress_reason
from mf_sched.racing.engine import RungEliminator

__all__ = ["RaceRun", "IncumbentStep", "RaceData", "FATES"]

#: a run's fate, in the order the plot's legend lists them
FATES = ("best", "finished", "stopped", "halted", "lost", "paused", "running")
#: what a study that mf-sched did not race says instead of a certificate
NOT_RACED = (
    "not raced by mf-sched (no MFSampler, MFPruner or race configuration made its decisions): its curves are drawn "
    "without a certificate"
)
_FATE_TEXT = {
    "best": "recommended: the best run at the top rung",
    "finished": "reached the top rung",
    "halted": "halted by the heuristic η cut (outside the guarantee)",
    "lost": "ended below the top rung without being stopped by the rule: uncovered by the certificate",
    "paused": "paused by the anytime schedule while other configurations wait: it may run again (if the study goes on)",
    "running": "still racing",
}


def _num(x: Any) -> float | None:
    """A finite float, or None."""
    if x is None:
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def fmt(x: Any, digits: int = 4) -> str:
    """A number for people: `-` for none."""
    f = _num(x)
    return "-" if f is None else f"{f:.{digits}g}"


@dataclass
class RaceRun:
    """One run of the race: a trial (or, for a resumable Optuna objective, a configuration across its trials, or
    a Ray trial).

    Attributes:
        key: the engine's key of the run.
        name: how the plot and the report name it (`"trial 7"`, `"config 3"`, a Ray trial id).
        params: its configuration.
        fate: one of :data:`FATES` (`paused`: set aside by the anytime schedule, no trial of it running now; it
            may run again; `running`: racing now, or not known to be paused).
        curve_x: the resources of its learning curve as reported (the rungs' resources when no curve is known).
        curve_y: the values of its learning curve at `curve_x` (the rung values when no curve is known).
        rung_values: its value at each rung (NaN where it did not reach it).
        bounds: the optimistic bound on its final value after each rung it reached (NaN elsewhere).
        times: when it reached each rung (NaN: unknown), on the axis of :attr:`RaceData.time_label`.
        stop_rung: the rung at which the rule stopped (or the η cut halted) it.
        stop_time: when it was stopped.
        reason: why it ended as it did, in words.
        evidence: the numbers behind the stop (`rung`, `value`, `bound`, `incumbent`,
            `incumbent_value`, `incumbent_bound`), as recorded by the adapter at the decision or else
            reconstructed.
        trials: the Optuna trial numbers of the run.
    """

    key: Hashable
    name: str
    params: Mapping[str, Any]
    fate: str
    curve_x: np.ndarray
    curve_y: np.ndarray
    rung_values: np.ndarray
    bounds: np.ndarray
    times: np.ndarray
    stop_rung: int | None = None
    stop_time: float | None = None
    reason: str = ""
    evidence: Mapping[str, Any] = field(default_factory=dict)
    trials: tuple[int, ...] = ()

    @property
    def reached(self) -> int:
        """The highest rung with a value (−1: none)."""
        have = np.flatnonzero(~np.isnan(self.rung_values))
        return int(have[-1]) if have.size else -1

    @property
    def last_value(self) -> float | None:
        """Its value at the highest rung it reached."""
        r = self.reached
        return None if r < 0 else float(self.rung_values[r])

    @property
    def bound(self) -> float | None:
        """Its latest optimistic bound (at the highest rung it reached)."""
        r = self.reached
        return None if r < 0 else _num(self.bounds[r])


@dataclass(frozen=True)
class IncumbentStep:
    """The incumbent from `time` on: run `name` with top-rung `value` and pessimistic `bound`.

    Attributes:
        time: when it became the incumbent, on the axis of :attr:`RaceData.time_label`.
        key: the engine's key of the run.
        name: how the plot and the report name it.
        value: its top-rung value, in the study's direction.
        bound: its pessimistic bound `v(M) − B` (the value stopped runs were raced against).
    """

    time: float
    key: Hashable
    name: str
    value: float
    bound: float


@dataclass
class RaceData:
    """The race of a study or experiment (see the module docstring); built by :meth:`from_engine` or by the
    adapters' readers (:func:`mf_sched.visualization.race_data`).

    Attributes:
        runs: every run, in the engine's registration order.
        resources: the rungs' resources (e.g. epochs), the x positions of the rungs.
        direction: `"maximize"` or `"minimize"`.
        metric: the metric's name.
        rule: the decision rule (`"race"` or `"iise"`).
        certificate: the engine's certificate in the metric's orientation, JSON-safe (`best` names the run).
        incumbent: the incumbent over time.
        time_label: what :attr:`RaceRun.times` measure.
        source: what was read (a study and its storage, an experiment folder).
        warnings: what the reader skipped or doubts, in words (e.g. a journal file's incomplete last record);
            the report shows them above the certificate.
    """

    runs: list[RaceRun]
    resources: tuple[float, ...]
    direction: str
    metric: str
    rule: str
    certificate: dict[str, Any]
    incumbent: list[IncumbentStep]
    time_label: str = "seconds since the first run started"
    source: str = ""
    warnings: list[str] = field(default_factory=list)

    # ------------------------------------------------------------------ derived
    @property
    def sign(self) -> float:
        return 1.0 if self.direction == "maximize" else -1.0

    def counts(self) -> dict[str, int]:
        """Runs per fate."""
        out = {f: 0 for f in FATES}
        for r in self.runs:
            out[r.fate] = out.get(r.fate, 0) + 1
        return out

    def summary(self) -> str:
        """The certificate in one sentence."""
        c = self.certificate
        best = c.get("best")
        if best is None:
            return "no run has reached the top rung yet: nothing to certify"
        if c.get("raced") is False:
            return f"{best} has the best value at the top rung ({self.metric} = {fmt(c.get('value'))}); {NOT_RACED}"
        conf = f"{1 - float(c['delta']):.3g}"
        if c.get("statement"):  # the certificate's own words (mf_sched.racing.certificate.statement)
            how = str(c["statement"])
        elif not c.get("guaranteed", True):
            how = "no guarantee (the heuristic η cut stopped runs)"
        elif c.get("identified"):
            how = f"identified: the best run with probability ≥ {conf}"
        elif c.get("epsilon") is not None:
            how = f"ε-optimal with ε = {fmt(c['epsilon'], 3)} (probability ≥ {conf})"
        else:
            n = self.counts()
            how = (
                in_progress_reason(n.get("running", 0))
                if n.get("running")
                else in_progress_reason(n.get("paused", 0), idle=True)
            )
        out = f"{best} is the best run at the top rung ({self.metric} = {fmt(c.get('value'))}); {how}"
        if c.get("uncovered"):
            n = len(c["uncovered"])
            out += f"; {n} run{'s' * (n != 1)} left uncovered"
        if c.get("bias_source"):
            out += f"; bias bound: {c['bias_source']}"
        return out

    def title(self) -> str:
        """The plot's title: the answer, ε and δ."""
        c = self.certificate
        if c.get("best") is None:
            head = f"Race{' in progress' if self.counts().get('running') else ''}: no run at the top rung yet"
        else:
            head = f"Race: {c['best']} = {fmt(c.get('value'))}"
        if c.get("raced") is False:
            return f"{head} · not raced by mf-sched: no certificate"
        eps = "ε = " + ("-" if c.get("epsilon") is None else fmt(c["epsilon"], 3))
        if c.get("identified"):
            eps = "identified (ε = 0)"
        if "certified" in c:  # the certificate's one word (mf_sched.racing.certificate.certification)
            eps = ("certified, " if c["certified"] else "not certified, ") + eps
        return f"{head} · {eps} · δ = {fmt(c.get('delta'), 3)}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: the certificate, the incumbent over time and one row per run (no curves)."""
        return {
            "source": self.source,
            "direction": self.direction,
            "metric": self.metric,
            "rule": self.rule,
            "resources": list(self.resources),
            "certificate": dict(self.certificate),
            "summary": self.summary(),
            "warnings": list(self.warnings),
            "incumbent": [{"time": s.time, "run": s.name, "value": s.value, "bound": s.bound} for s in self.incumbent],
            "runs": [
                {
                    "run": r.name,
                    "params": {k: v if isinstance(v, (int, float, str, bool)) else str(v) for k, v in r.params.items()},
                    "fate": r.fate,
                    "reached": r.reached,
                    "value": r.last_value,
                    "bound": r.bound,
                    "stop_rung": r.stop_rung,
                    "reason": r.reason,
                    "trials": list(r.trials),
                }
                for r in self.runs
            ],
        }

    # ------------------------------------------------------------------ from an engine
    @classmethod
    def from_engine(
        cls,
        engine: RungEliminator,
        *,
        sign: float = 1.0,
        metric: str = "value",
        names: Mapping[Hashable, str] | None = None,
        params: Mapping[Hashable, Mapping[str, Any]] | None = None,
        curves: Mapping[Hashable, tuple[Sequence[float], Sequence[float]]] | None = None,
        times: Mapping[Hashable, Sequence[float]] | None = None,
        evidence: Mapping[Hashable, Mapping[str, Any]] | None = None,
        trials: Mapping[Hashable, Sequence[int]] | None = None,
        time_label: str = "seconds since the first run started",
        source: str = "",
        raced: bool = True,
        running: Collection[Hashable] | None = None,
    ) -> RaceData:
        """The race held by `engine` (values in its maximisation convention; `sign=-1` for a minimised
        metric).

        Args:
            engine: the decision engine, with every run's rung values and statuses.
            sign: `+1` (maximised metric) or `-1` (minimised: the engine holds `-value`).
            metric: the metric's name (axis label).
            names: per run key, its name (default: the key).
            params: per run key, its configuration (default: no parameters).
            curves: per run key, its learning curve `(resources, values)` in the metric's orientation
                (default: its rung values).
            times: per run key, when it reached each rung (`M` numbers, NaN unknown); default: runs in
                registration order (`time_label` then says so).
            evidence: per run key, the numbers an adapter recorded when it stopped the run (keys `rung`,
                `value`, `bound`, `incumbent`, `incumbent_value`, `incumbent_bound`, `reason`).
            trials: per run key, its trial numbers.
            time_label: see the attributes.
            source: see the attributes.
            raced: the engine made the study's decisions (an mf-sched race); `False` (a study another pruner
                decided, read with mf-sched's defaults only to draw its curves): no certificate, and the data says so.
            running: the runs with a trial (a worker) running now, when the reader knows; a run the engine still
                races that is not among them is *paused* (it may run again), and when none runs at all the
                race is not "in progress" but stopped early, its paused runs waiting for the study to go on.
                Default: not known (every run the engine races is `running`).

        Example:
            >>> from mf_sched import FidelityLadder
            >>> from mf_sched.racing.engine import RungEliminator
            >>> from mf_sched.visualization import RaceData
            >>> ladder = FidelityLadder([1, 3, 9], [0.1, 0.02, 0.0], resources=[1, 3, 9])
            >>> eng = RungEliminator(ladder, sigma=0.01, n_arms=3, rule="race", race_bias=[0.1, 0.02, 0.0])
            >>> eng.report_many(["a", "b", "c"], [[0.6, 0.7, 0.8], [0.3, float("nan"), float("nan")],
            ...                                  [0.5, 0.66, 0.75]])
            >>> eng.eliminate()
            ['b']
            >>> race = RaceData.from_engine(eng, metric="accuracy")
            >>> [(r.name, r.fate) for r in race.runs]
            [('a', 'best'), ('b', 'stopped'), ('c', 'finished')]
            >>> race.runs[1].evidence["bound"] < race.runs[1].evidence["incumbent_bound"]
            True
        """
        if sign not in (1.0, -1.0, 1, -1):
            raise ValueError(f"sign = {sign!r} is out of range; accepted: 1 (maximise) or -1 (minimise)")
        sign = float(sign)
        keys = list(engine.keys)
        M = engine.M
        top = M - 1
        resources = tuple(
            float(x)
            for x in (engine.ladder.resources or np.cumsum(np.ones(M)).tolist())  # type: ignore[arg-type]
        )
        name_of = {k: (names or {}).get(k, str(k)) for k in keys}
        vals = np.array([[np.nan if (v := engine.value(k, m)) is None else v for m in range(M)] for k in keys])
        vals = vals.reshape(len(keys), M)
        bounds = _bounds_by_rung(engine, keys, vals)
        if times is None:
            tm = np.repeat(np.arange(len(keys), dtype=float)[:, None], M, axis=1)
            tm[np.isnan(vals)] = np.nan
            time_label = "runs in order of registration"
        else:
            tm = np.array([_times_row(times.get(k), M) for k in keys]).reshape(len(keys), M)
        # the incumbent over time: top-rung arrivals in time order, the best pessimistic bound so far
        history: list[IncumbentStep] = []
        top_rows = [i for i in range(len(keys)) if not math.isnan(vals[i, top])]
        lcb = {i: vals[i, top] - engine.radius(keys[i], top) for i in top_rows}
        order = sorted(top_rows, key=lambda i: (np.nan_to_num(tm[i, top], nan=math.inf), i))
        best = -math.inf
        for i in order:
            if lcb[i] > best:
                best = lcb[i]
                t = float(tm[i, top]) if not math.isnan(tm[i, top]) else float(len(history))
                history.append(
                    IncumbentStep(t, keys[i], name_of[keys[i]], float(sign * vals[i, top]), float(sign * lcb[i]))
                )
        cert = engine.certificate()
        ev_all = evidence or {}
        runs = []
        for i, k in enumerate(keys):
            status = engine.status(k)
            reached = int(np.flatnonzero(~np.isnan(vals[i]))[-1]) if (~np.isnan(vals[i])).any() else -1
            fate = {"finished": "finished", "stopped": "stopped", "halted": "halted", "running": "running"}.get(
                status, "lost" if reached < top else "finished"
            )
            if fate == "running" and running is not None and k not in running:
                fate = "paused"
            if not raced:  # no decision of mf-sched's to show: where each run ended, that is all
                fate = "finished" if reached == top else "lost"
            if k == cert.key:
                fate = "best"
            cx, cy = _curve((curves or {}).get(k), resources, sign * vals[i])
            run = RaceRun(
                key=k,
                name=name_of[k],
                params=dict((params or {}).get(k, {})),
                fate=fate,
                curve_x=cx,
                curve_y=cy,
                rung_values=sign * vals[i],
                bounds=sign * bounds[i],
                times=tm[i],
                trials=tuple(int(t) for t in (trials or {}).get(k, ())),
            )
            if fate in ("stopped", "halted"):
                run.stop_rung = engine.stop_rung(k)
                _explain_stop(run, engine, i, keys, vals, tm, history, name_of, sign, dict(ev_all.get(k) or {}))
            else:
                run.reason = _FATE_TEXT.get(fate, "")
            runs.append(run)
        n_racing = int(cert.counts.get("running", 0))
        if running is not None and n_racing and cert.reason == in_progress_reason(n_racing):
            if not any(k in running for k in keys):  # nothing runs: the race stopped early, it is not in progress
                cert = dataclasses.replace(cert, reason=in_progress_reason(n_racing, idle=True))
        certificate = {**certificate_fields(cert, sign, lambda k: name_of.get(k, str(k))), "cost": cert.cost}
        if running is not None:  # the engine's "running" is two states here: running now, and paused
            paused = sum(engine.status(r.key) == "running" and r.key not in running for r in runs)
            rest = {k: v for k, v in certificate["counts"].items() if k != "running"}
            certificate["counts"] = {"running": n_racing - paused, "paused": paused, **rest}
        if not raced:  # curves only: mf-sched made none of the decisions, so it certifies nothing
            certificate = {"best": certificate["best"], "value": certificate["value"], "raced": False,
                           "certified": False, "guaranteed": False, "epsilon": None, "delta": None,
                           "counts": certificate["counts"], "uncovered": [],
                           "statement": NOT_RACED}  # fmt: skip
        return cls(
            runs=runs,
            resources=resources,
            direction="maximize" if sign > 0 else "minimize",
            metric=metric,
            rule=engine.rule,
            certificate=certificate,
            incumbent=history,
            time_label=time_label,
            source=source,
        )


def certificate_fields(cert: Any, sign: float, name: Any) -> dict[str, Any]:
    """A `RungCertificate` as the user reads it: values in the metric's own direction
    (`sign` −1 for a minimised metric) and runs by `name(key)` (the plot's and the stored study attribute's
    common fields)."""
    return {
        "best": None if cert.key is None else name(cert.key),
        "value": None if cert.value is None else sign * cert.value,
        "epsilon": cert.epsilon,
        "delta": cert.delta,
        "identified": cert.identified,
        "guaranteed": cert.guaranteed,
        "certified": cert.certified,
        "statement": cert.sentence(),
        "reason": cert.reason,
        "rule": cert.rule,
        "bias_source": cert.bias_source,
        "counts": dict(cert.counts),
        "uncovered": [name(u) for u in cert.uncovered],
    }


def _times_row(row: Sequence[float] | None, M: int) -> np.ndarray:
    out = np.full(M, np.nan)
    if row is not None:
        a = np.asarray(row, dtype=float).ravel()[:M]
        out[: a.size] = a
    return out


def _curve(
    given: tuple[Sequence[float], Sequence[float]] | None, resources: tuple[float, ...], rung_values: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The run's curve, sorted by resource, with its rung values merged in (a curve may miss a rung's point: an
    objective that ended with `finish`); NaN and infinite points dropped."""
    xs = [float(r) for r, v in zip(resources, rung_values) if not math.isnan(v)]
    ys = [float(v) for v in rung_values if not math.isnan(v)]
    if given is not None:
        gx = np.asarray(given[0], dtype=float).ravel()
        gy = np.asarray(given[1], dtype=float).ravel()
        if gx.shape != gy.shape:
            raise ValueError(f"a curve needs as many resources as values; got {gx.size} and {gy.size}")
        ok = np.isfinite(gx) & np.isfinite(gy)
        pts = dict(zip(gx[ok].tolist(), gy[ok].tolist()))
        for x, y in zip(xs, ys):
            pts.setdefault(x, y)
        xs, ys = [list(t) for t in zip(*sorted(pts.items()))] if pts else ([], [])
    return np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)


def _bounds_by_rung(engine: RungEliminator, keys: list[Hashable], vals: np.ndarray) -> np.ndarray:
    """The optimistic bound on each run's final value after each rung it reached (engine orientation)."""
    n, M = vals.shape
    out = np.full((n, M), np.nan)
    if n == 0:
        return out
    if engine.rule != "race":  # IISE: v + B + margin, compared with the best lower bound at the rung (Eq. 3)
        margin = [row["margin"] for row in engine.rung_table()]
        for i, k in enumerate(keys):
            for m in np.flatnonzero(~np.isnan(vals[i])).tolist():
                out[i, m] = vals[i, m] + engine.radius(k, m) + margin[m]
        return out
    from mf_sched._serialize import decode, encode

    try:
        state = decode(engine.state_dict())
        full = np.asarray(state["values"], dtype=float)
        for m in range(M):
            rows = np.flatnonzero(~np.isnan(full[:, m]))
            if rows.size == 0:
                continue
            masked = full.copy()
            masked[:, m + 1 :] = np.nan
            clone = RungEliminator.from_state_dict(encode({**state, "values": masked}))
            for i in rows.tolist():
                out[i, m] = clone.upper_bound(keys[i])
    except Exception:  # a state this reader does not know: the latest bound only, at the rung it was reached
        out[:] = np.nan
        for i, k in enumerate(keys):
            have = np.flatnonzero(~np.isnan(vals[i]))
            if have.size:
                out[i, have[-1]] = engine.upper_bound(k)
    return out


def _explain_stop(
    run: RaceRun,
    engine: RungEliminator,
    i: int,
    keys: list[Hashable],
    vals: np.ndarray,
    tm: np.ndarray,
    history: list[IncumbentStep],
    name_of: Mapping[Hashable, str],
    sign: float,
    recorded: dict[str, Any],
) -> None:
    """Fill the stop's time, evidence and reason; numbers recorded at the decision win over reconstructed ones."""
    m = run.stop_rung if run.stop_rung is not None else run.reached
    t_rung = float(tm[i, m]) if m >= 0 and not math.isnan(tm[i, m]) else math.nan
    ev: dict[str, Any] = {"rung": m, "value": None if m < 0 else _num(run.rung_values[m])}
    if run.fate == "halted":
        run.stop_time = None if math.isnan(t_rung) else t_rung
        run.evidence = {**ev, **recorded}
        run.reason = recorded.get("reason") or f"halted at rung {m} by the heuristic η cut (outside the guarantee)"
        return
    if engine.rule == "race":
        u = engine.upper_bound(keys[i])  # engine orientation; a stopped run keeps the bound it was stopped with
        ev["bound"] = _num(sign * u)
        # the incumbent when the run reached its stop rung, if it already beat the run; else the first later one
        before = [s for s in history if math.isnan(t_rung) or s.time <= t_rung]
        inc = before[-1] if before and not math.isnan(t_rung) and sign * before[-1].bound > u else None
        when = t_rung
        if inc is None:
            later = [s for s in history if (math.isnan(t_rung) or s.time > t_rung) and sign * s.bound > u]
            if later:
                inc, when = later[0], later[0].time
            elif history:
                inc = history[-1]
        if inc is not None:
            ev.update(incumbent=inc.name, incumbent_value=inc.value, incumbent_bound=inc.bound)
        run.stop_time = None if when is None or math.isnan(when) else float(when)
    else:  # IISE at the rung: the best lower bound there
        best, who = -math.inf, None
        for j, k in enumerate(keys):
            if not math.isnan(vals[j, m]):
                lb = vals[j, m] - engine.radius(k, m)
                if lb > best:
                    best, who = lb, j
        ev["bound"] = _num(run.bounds[m])
        if who is not None:
            ev.update(
                incumbent=name_of[keys[who]],
                incumbent_value=float(sign * vals[who, m]),
                incumbent_bound=float(sign * best),
            )
        run.stop_time = None if math.isnan(t_rung) else t_rung
    ev.update({k: v for k, v in recorded.items() if v is not None})
    run.evidence = ev
    run.reason = recorded.get("reason") or stop_reason(ev, sign, engine.rule)


def stop_reason(ev: Mapping[str, Any], sign: float, rule: str = "race") -> str:
    """The sentence that explains a stop from its numbers (`rung`, `value`, `bound`, `incumbent`,
    `incumbent_value`, `incumbent_bound`)."""
    rung = ev.get("rung")
    head = f"stopped at rung {rung}" + (f" (value {fmt(ev.get('value'))})" if ev.get("value") is not None else "")
    if ev.get("bound") is None or ev.get("incumbent") is None:
        return head + " by the rule"
    what = "the best final value it could still reach" if rule == "race" else "value + radius + 2ζ at the rung"
    if sign > 0:
        return (
            f"{head}: {what}, {fmt(ev['bound'])}, is below the lower bound {fmt(ev.get('incumbent_bound'))} of "
            f"{ev['incumbent']} (value {fmt(ev.get('incumbent_value'))})"
        )
    what = "the lowest final value it could still reach" if rule == "race" else "value − radius − 2ζ at the rung"
    return (
        f"{head}: {what}, {fmt(ev['bound'])}, is above the upper bound {fmt(ev.get('incumbent_bound'))} of "
        f"{ev['incumbent']} (value {fmt(ev.get('incumbent_value'))})"
    )
