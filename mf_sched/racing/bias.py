"""ζ⁺: how much the *best* configuration can still improve after each rung — the bias bound of the racing rule.

The papers bound the bias of *every* arm, `|µ_k(m) − µ_k(M)| ≤ ζ(m)` (Poiani et al. 2022 §2, Kandasamy et
al. 2016 §2). On real learning curves that bound is driven by a tail of slow or diverging runs that can never
be the best, so a rule that needs it prunes little. The racing rule of :class:`~mf_sched.racing.engine.RungEliminator`
(`rule="race"`) needs far less: a one-sided bound on the improvement of the best arm `*` alone,

```text
µ_*(M) − µ_*(m) ≤ ζ⁺(m)                  (form="absolute", metric units), or
µ_*(M) − µ_*(m) ≤ ρ(m) (ideal − µ_*(m))  (form="relative": a fraction ρ(m) ∈ [0, 1] of the
distance to the best attainable value, e.g. ideal = 1 for an accuracy or 0 for a loss),
```

in the maximisation orientation (adapters negate losses, so a loss `L` is the score `−L` and its ideal is
`−0 = 0`). Both forms are affine in the value, so a valid optimistic bound on the best arm's final value
from a value `v` observed at rung `m` (plus its confidence radius) is :meth:`RaceBias.optimistic`.

ζ⁺ is estimated across the *tasks* of learning-curve benchmarks (:func:`mf_sched.curves.calibration.calibrate_race`)
and shipped as a prior per metric family (:func:`race_prior`); the guarantee it carries is then "δ for the
noise, plus the calibration's miscoverage over tasks" (see :mod:`mf_sched.racing.engine`).

Example:
    >>> b = RaceBias(upper=[0.3, 0.1, 0.0], typical=[0.1, 0.03, 0.0], source="hand-made")
    >>> b.optimistic(0.5, 0), b.estimate(0.5, 1)
    (0.8, 0.53)
    >>> r = RaceBias(upper=[0.5, 0.2, 0.0], form="relative", ideal=1.0)
    >>> r.optimistic(0.8, 0)          # 0.8 + 0.5 · (1 − 0.8)
    0.9
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from mf_sched._validate import check_numbers

__all__ = [
    "RaceBias",
    "race_prior",
    "prior_families",
    "metric_family",
    "metric_transform",
    "MetricFamily",
    "NAMED_FAMILIES",
    "FORMS",
]

FORMS = ("absolute", "relative")


def _floats(name: str, values: Any) -> tuple[float, ...]:
    out = check_numbers(name, values, kinds=(Sequence, np.ndarray), what="a sequence of numbers (one per rung)")
    for i, f in enumerate(out):
        if math.isnan(f) or f < 0:
            raise ValueError(f"{name}[{i}] = {values[i]!r} is out of range; accepted: a number >= 0 (inf: no bound)")
    if not out:
        raise ValueError(f"{name} is empty; give one value per rung")
    return tuple(out)


@dataclass(frozen=True)
class RaceBias:
    """The best arm's improvement bound per rung (see the module docstring).

    Args:
        upper: `ζ⁺(m)` per rung (absolute) or `ρ(m) ∈ [0, 1]` (relative); `inf` at a rung means "no
            bound" (nothing is stopped there); the last rung's value must be 0.
        typical: a point estimate of the same quantity per rung (e.g. the median over tasks), used to
            *estimate* final values when an answer is needed before a run reaches the top (never for a
            decision with a guarantee); default `upper`.
        form: `"absolute"` or `"relative"`.
        ideal: the best attainable score (maximisation orientation), required for `"relative"`.
        source: where the numbers come from (shown in certificates).
        details: JSON-safe provenance (quantile, confidence, tasks, held-out coverage ...).
    """

    upper: tuple[float, ...]
    typical: tuple[float, ...] | None = None
    form: str = "absolute"
    ideal: float | None = None
    source: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        up = _floats("upper", self.upper)
        object.__setattr__(self, "upper", up)
        if up[-1] != 0.0:
            raise ValueError(f"upper[-1] = {up[-1]} must be 0: the top rung is the target (no bias)")
        typ = up if self.typical is None else _floats("typical", self.typical)
        if len(typ) != len(up):
            raise ValueError(f"typical has {len(typ)} values for {len(up)} rungs")
        object.__setattr__(self, "typical", typ)
        if self.form not in FORMS:
            raise ValueError(f"form = {self.form!r} is unknown; accepted: {', '.join(map(repr, FORMS))}")
        if self.form == "relative":
            if self.ideal is None or not math.isfinite(float(self.ideal)):
                raise ValueError("form = 'relative' needs ideal= (the best attainable score, e.g. 1.0 or 0.0)")
            bad = [i for i, v in enumerate(up + typ) if v > 1.0 and math.isfinite(v)]
            if bad:
                raise ValueError("relative bounds are fractions of the distance to ideal; accepted: 0 <= value <= 1")
            object.__setattr__(self, "ideal", float(self.ideal))
        elif self.ideal is not None:
            object.__setattr__(self, "ideal", float(self.ideal))

    @property
    def M(self) -> int:
        return len(self.upper)

    def _apply(self, table: tuple[float, ...], value: Any, rung: Any) -> Any:
        v = np.asarray(value, dtype=float)
        b = np.asarray(table, dtype=float)[np.asarray(rung)]
        if self.form == "absolute":
            out = v + b
        else:
            room = np.maximum(float(self.ideal) - v, 0.0)  # type: ignore[arg-type]
            with np.errstate(invalid="ignore"):
                out = np.where(np.isinf(b), np.inf, v + np.where(room > 0, b * room, 0.0))
        return float(out) if np.ndim(out) == 0 else out

    def optimistic(self, value: Any, rung: Any) -> Any:
        """An upper bound on the best arm's final value if `value` is the best arm's (vectorised).

        Args:
            value: an upper confidence value of the arm's mean at `rung` (a number or an array).
            rung: the rung `0..M−1` of each value (broadcast with `value`).
        """
        return self._apply(self.upper, value, rung)

    def estimate(self, value: Any, rung: Any) -> Any:
        """A point estimate of the final value of a strong arm seen at `value` on `rung` (with `typical`).

        Args:
            value: the arm's value at `rung` (a number or an array).
            rung: the rung `0..M−1` of each value (broadcast with `value`).
        """
        return self._apply(self.typical, value, rung)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, Any]:
        def num(x: float) -> float | str:
            return "inf" if math.isinf(x) else x

        return {
            "upper": [num(x) for x in self.upper],
            "typical": [num(x) for x in self.typical],  # type: ignore[union-attr]
            "form": self.form,
            "ideal": self.ideal,
            "source": self.source,
            "details": dict(self.details),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RaceBias:
        """Rebuild from :meth:`to_dict` output (validated; `"inf"` is the only string accepted).

        Args:
            d: the mapping :meth:`to_dict` wrote (`upper` required).
        """
        if not isinstance(d, Mapping) or "upper" not in d:
            raise ValueError("a RaceBias needs a mapping with 'upper'")

        def back(xs: Any, name: str) -> Any:
            if xs is None:
                return None
            if not isinstance(xs, (list, tuple)):
                raise ValueError(f"{name} must be a list")
            return [math.inf if x == "inf" else x for x in xs]

        details = d.get("details") or {}
        if not isinstance(details, Mapping):
            raise ValueError("details must be a mapping")
        return cls(
            upper=back(d["upper"], "upper"),
            typical=back(d.get("typical"), "typical"),
            form=str(d.get("form", "absolute")),
            ideal=d.get("ideal"),
            source=str(d.get("source", "")),
            details=dict(details),
        )

    @classmethod
    def coerce(cls, value: RaceBias | Sequence[float] | Mapping[str, Any], M: int) -> RaceBias:
        """A :class:`RaceBias` from itself, a dict, or a plain sequence of absolute ζ⁺ values.

        Args:
            value: a RaceBias, its :meth:`to_dict` mapping, or one absolute ζ⁺ per rung.
            M: the number of rungs of the ladder it must match (ValueError otherwise).
        """
        if isinstance(value, RaceBias):
            out = value
        elif isinstance(value, Mapping):
            out = cls.from_dict(value)
        else:
            out = cls(upper=tuple(value), source="given")  # type: ignore[arg-type]
        if out.M != M:
            raise ValueError(f"race_bias has {out.M} rungs but the ladder has {M}")
        return out


# ------------------------------------------------------------------------------------------ the shipped prior
_PRIOR_FILE = "race_prior.json"


@lru_cache(maxsize=1)
def _prior_table() -> dict[str, Any]:
    text = resources.files("mf_sched").joinpath("data", _PRIOR_FILE).read_text(encoding="utf-8")
    d = json.loads(text)
    if not isinstance(d, dict) or not isinstance(d.get("families"), dict):
        raise ValueError(f"mf_sched/data/{_PRIOR_FILE} is malformed: no 'families' mapping")
    for name, fam in d["families"].items():
        fr = fam.get("fractions")
        if not (isinstance(fr, list) and fr and all(isinstance(x, (int, float)) for x in fr)):
            raise ValueError(f"mf_sched/data/{_PRIOR_FILE}: family {name!r} has no numeric 'fractions'")
        if sorted(fr) != fr or fr[-1] != 1.0:
            raise ValueError(f"mf_sched/data/{_PRIOR_FILE}: family {name!r} fractions must increase to 1.0")
        for key in ("upper", "typical"):
            vals = fam.get(key)
            if not (isinstance(vals, list) and len(vals) == len(fr)):
                raise ValueError(f"mf_sched/data/{_PRIOR_FILE}: family {name!r} needs {key!r} per fraction")
            if not all(isinstance(x, (int, float)) or x == "inf" for x in vals):
                raise ValueError(f"mf_sched/data/{_PRIOR_FILE}: family {name!r} {key!r} holds a non-number")
        if fam.get("form") not in FORMS:
            raise ValueError(f"mf_sched/data/{_PRIOR_FILE}: family {name!r} has an unknown form")
    return d


def prior_families() -> dict[str, str]:
    """The metric families the shipped prior covers, with a one-line description of each."""
    return {k: str(v.get("description", "")) for k, v in _prior_table()["families"].items()}


@dataclass(frozen=True)
class MetricFamily:
    """How a study's metric is read by the shipped bounds: its family and the affine map of its *scores*
    (the metric, negated when minimised) to the family's units, `(score − offset) / scale`.

    Attributes:
        name: `"unit"` (accuracy-like, in [0, 1]) or `"loss"` (non-negative, lower is better).
        offset: `offset` of the map `(score − offset) / scale` (an accuracy: 0; a percentage: 0; an error rate,
            minimised: −1, so that `1 − error` reads like an accuracy; a percent error: −100).
        scale: `scale` of the map (an accuracy: 1; a percentage: 100; an error rate: 1; a percent error: 100).
        kind: what was recognised, in words (for messages and certificates).
    """

    name: str
    offset: float = 0.0
    scale: float = 1.0
    kind: str = ""


#: the families a user may name (``metric_family=`` of the adapters), with the map of each
NAMED_FAMILIES: dict[str, MetricFamily] = {
    "accuracy": MetricFamily("unit", 0.0, 1.0, "a score in [0, 1], higher is better"),
    "error": MetricFamily("unit", -1.0, 1.0, "an error rate in [0, 1], lower is better"),
    "percent": MetricFamily("unit", 0.0, 100.0, "a percentage (0-100), higher is better"),
    "percent_error": MetricFamily("unit", -100.0, 100.0, "a percent error (0-100), lower is better"),
    "loss": MetricFamily("loss", 0.0, 1.0, "a non-negative loss, lower is better"),
    "negated_loss": MetricFamily("loss", 0.0, 1.0, "a negated loss (<= 0), higher is better"),
}


def metric_transform(values: Any, mode: str, family: str | None = None) -> MetricFamily | None:
    """The family that fits a study's reported `values` (the metric as reported, `mode` `"max"` or
    `"min"`), or the one named by `family` (a key of :data:`NAMED_FAMILIES`); None when none fits.

    Recognised, reading the range between the 1% and 99% quantiles (a stray value does not decide):
    maximised in [0, 1] — an accuracy; minimised in [0, 1] — an error rate (a loss that stays below 1 reads the
    same way: name `family="loss"` if it is one); maximised in [0, 100] with values above 1 — a percentage;
    minimised and `≥ 0` otherwise — a loss; maximised and `≤ 0` — a negated loss (scikit-learn's
    `neg_log_loss`). Anything else (a reward, a score of both signs) has no family.

    Args:
        values: the values reported so far (non-finite ones are ignored).
        mode: `"max"` or `"min"`, the study's direction.
        family: a key of :data:`NAMED_FAMILIES` that overrides the reading of `values`; `None` reads them.

    >>> cases = [([0.1, 0.93], "max"), ([0.3, 0.05], "min"), ([12.0, 97.5], "max"), ([2.3, 0.4], "min"),
    ...          ([-0.7, -0.2], "max")]
    >>> [metric_transform(v, m).kind.split(",")[0] for v, m in cases]
    ['a score in [0', 'an error rate in [0', 'a percentage (0-100)', 'a non-negative loss', 'a negated loss (<= 0)']
    >>> metric_transform([-3.0, 2.0], "max") is None
    True
    """
    if family is not None:
        if family not in NAMED_FAMILIES:
            raise ValueError(f"metric_family = {family!r} is unknown; accepted: {', '.join(map(repr, NAMED_FAMILIES))}")
        return NAMED_FAMILIES[family]
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return None
    lo, hi = (float(x) for x in np.quantile(v, [0.01, 0.99]))
    if 0.0 <= lo and hi <= 1.0:
        return NAMED_FAMILIES["accuracy" if mode == "max" else "error"]
    if mode == "max" and 0.0 <= lo and hi <= 100.0:
        return NAMED_FAMILIES["percent"]
    if mode == "min" and lo >= 0.0:
        return NAMED_FAMILIES["loss"]
    if mode == "max" and hi <= 0.0:
        return NAMED_FAMILIES["negated_loss"]
    return None


def metric_family(values: Any, mode: str) -> str | None:
    """The prior family that fits a study's reported values, or None when none does (the name of
    :func:`metric_transform`'s family: `"unit"` for accuracies, error rates and percentages, `"loss"` for
    losses and negated losses).

    Args:
        values: the values reported so far.
        mode: `"max"` or `"min"`, the study's direction.

    >>> metric_family([0.1, 0.93], "max"), metric_family([2.3, 0.4], "min"), metric_family([-3.0, 2.0], "max")
    ('unit', 'loss', None)
    """
    fam = metric_transform(values, mode)
    return None if fam is None else fam.name


def race_prior(family: str, fractions: Sequence[float]) -> RaceBias:
    """The shipped ζ⁺ prior of a metric `family` at rungs given as fractions of the maximum resource.

    The prior is tabulated on a grid of fractions (package data `mf_sched/data/race_prior.json`, made by
    `benchmarks/race_prior.py` from LCBench, TaskSet, DeepOBS and AlgoPerf with
    :func:`mf_sched.curves.calibration.calibrate_race`; its provenance and held-out-task coverage are in
    `details`). Between grid points the value at the grid point *at or below* the rung's fraction is used
    (ζ⁺ does not increase with training, so this is conservative); rungs below the first grid point get no
    bound (`inf`: nothing is stopped there); the last rung (fraction 1) gets 0.

    Args:
        family: `"unit"` or `"loss"` (see :func:`metric_family`).
        fractions: each rung's resource as a fraction of the maximum, increasing strictly and ending at 1.

    >>> b = race_prior("unit", [1 / 27, 1 / 9, 1 / 3, 1.0])
    >>> b.form, b.upper[-1], b.upper[1] >= b.upper[2]
    ('absolute', 0.0, True)
    """
    table = _prior_table()["families"]
    if family not in table:
        raise ValueError(f"family = {family!r} has no prior; accepted: {', '.join(sorted(table))}")
    fam = table[family]
    grid = np.asarray(fam["fractions"], dtype=float)
    fr = np.asarray(list(fractions), dtype=float)
    if fr.size == 0 or not np.all(np.isfinite(fr)) or np.any(fr <= 0) or np.any(fr > 1 + 1e-9):
        raise ValueError(f"fractions = {list(fractions)} are out of range; accepted: numbers in (0, 1]")
    if np.any(np.diff(fr) <= 0) or abs(fr[-1] - 1.0) > 1e-9:
        raise ValueError("fractions must increase strictly and end at 1 (the maximum resource)")
    idx = np.searchsorted(grid, fr + 1e-9, side="right") - 1
    up, typ = np.asarray(fam["upper"], dtype=float), np.asarray(fam["typical"], dtype=float)
    upper = np.where(idx >= 0, up[np.maximum(idx, 0)], np.inf)
    typical = np.where(idx >= 0, typ[np.maximum(idx, 0)], typ[0])
    upper[-1] = typical[-1] = 0.0
    typical = np.minimum(typical, upper)
    return RaceBias(
        upper=tuple(upper.tolist()),
        typical=tuple(typical.tolist()),
        form=fam["form"],
        ideal=fam.get("ideal"),
        source=f"mf-sched prior '{family}' ({fam.get('description', '')})",
        details={"family": family, "fractions": fr.tolist(), **dict(fam.get("provenance", {}))},
    )
