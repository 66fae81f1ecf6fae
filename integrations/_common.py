"""What the Optuna and Ray adapters share: the ladder (given, calibrated or inferred), ζ⁺ (given or the shipped
prior, refined by the study) and σ (given or a default per metric family).

Adapters translate a framework's objects into a :class:`~mf_sched.racing.engine.RungEliminator`; this module holds the
decisions both make the same way, so that a study behaves alike under Optuna and Ray:

* **Ladder.** Given (`ladder=`), from a calibration (`calibration=`), or inferred from the maximum
  resource `R` (an argument, Ray's `max_t` / `stop`, or the first trial that finished):
  :func:`auto_resources` gives geometric rungs `r_0 η^k` (`η = reduction_factor`, default 3) from
  `r_0 ≈ 2%` of `R` (the earliest fraction the prior is calibrated for) up to `R`, dropping a rung that
  would sit within `√η` of `R`. Costs are the resources (epochs).
* **The bound.** Given (`race_bias=`: a :class:`~mf_sched.racing.curve_bound.CurveBound`, a
  :class:`~mf_sched.racing.bias.RaceBias`, a list, a calibration), or the one shipped with mf-sched for the metric's
  family (:func:`mf_sched.racing.bias.metric_transform` on the values the study reported, or `metric_family=`): the
  curve-aware bound (:func:`mf_sched.racing.shipped_curve_bound`, for the study's size, α = δ, the tolerance
  and the rungs' fractions of `R`; `bound="zeta+"`: the unconditional ζ⁺ prior,
  :func:`mf_sched.racing.bias.race_prior`), raised by the study's own runs as they finish (`refine`). A metric
  outside every family (a reward, a score of both signs) gets no bound: nothing is stopped until the user names
  the family or gives a bound — said once per study in a warning.
* **σ** (seed-to-seed noise of one value): given, the calibration's, or a default: 0.01 for metrics in
  [0, 1], 1% of the median absolute value reported otherwise (losses). Documented as an assumption; pass the
  real one when you know it.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mf_sched.ladder import FidelityLadder
from mf_sched.racing.bias import NAMED_FAMILIES, RaceBias, metric_transform, race_prior
from mf_sched.racing.curve_bound import CurveBound, CurveBoundFit, shipped_curve_bound

__all__ = [
    "auto_resources",
    "inferred_ladder",
    "resolve_ladder",
    "RungArgs",
    "resolve_rungs",
    "check_sigma",
    "default_sigma",
    "coerce_race_bias",
    "auto_race_bias",
    "no_family_message",
    "bound_kwargs",
    "check_budget",
    "warn_no_family",
    "check_tolerance",
    "BOUNDS",
    "DEFAULT_TOLERANCE",
    "UNKNOWN_ZETA",
]

#: the ζ written into an inferred ladder: the all-arm bias bound is unknown there; only the racing rule, which
#: uses ζ⁺ instead, may run on such a ladder (rule="iise" and ζ-based policies refuse it)
UNKNOWN_ZETA = 1e12
FIRST_FRACTION = 0.02


def auto_resources(
    max_resource: float, *, min_resource: float | None = None, reduction_factor: float = 3.0
) -> list[float]:
    """Geometric rungs up to `max_resource` (see the module docstring).

    >>> auto_resources(27), auto_resources(52), auto_resources(100), auto_resources(1000)[:2]
    ([1.0, 3.0, 9.0, 27.0], [1.0, 3.0, 9.0, 27.0, 52.0], [2.0, 6.0, 18.0, 54.0, 100.0], [20.0, 60.0])
    """
    R = float(max_resource)
    if not (math.isfinite(R) and R > 0):
        raise ValueError(f"max_resource = {max_resource!r} is out of range; accepted: a finite number > 0")
    eta = float(reduction_factor)
    if not (math.isfinite(eta) and eta > 1):
        raise ValueError(f"reduction_factor = {reduction_factor!r} is out of range; accepted: a number > 1")
    r0 = max(1.0, float(round(FIRST_FRACTION * R))) if min_resource is None else float(min_resource)
    if not (math.isfinite(r0) and 0 < r0 <= R):
        raise ValueError(f"min_resource = {min_resource!r} is out of range; accepted: 0 < min_resource <= {R:g}")
    out, r = [], r0
    while r < R / math.sqrt(eta) - 1e-9:
        out.append(float(r))
        r *= eta
    return out + [R]


def inferred_ladder(resources: Sequence[float]) -> FidelityLadder:
    """A ladder over `resources` with costs = resources and an unknown all-arm ζ (:data:`UNKNOWN_ZETA`)."""
    res = [float(r) for r in resources]
    return FidelityLadder(costs=res, zeta=[UNKNOWN_ZETA] * (len(res) - 1) + [0.0], resources=res)


def is_inferred(ladder: FidelityLadder) -> bool:
    return ladder.M > 1 and ladder.zeta[0] == UNKNOWN_ZETA


def resolve_ladder(
    ladder: FidelityLadder | None,
    calibration: Any,
    who: str,
    *,
    integer_steps: bool = False,
    resources: Sequence[float] | None = None,
) -> FidelityLadder | None:
    """The ladder given, calibrated, or over the `resources` given (rungs without a known ζ: racing only);
    `None` when none is given (to be inferred)."""
    pairs = (("ladder", ladder), ("calibration", calibration), ("resources", resources))
    given = [name for name, v in pairs if v is not None]
    if len(given) > 1:
        raise ValueError(f"{who}: give one of ladder=, calibration= or resources=, not {' and '.join(given)}")
    if resources is not None:
        res = list(resources)
        if len(res) < 1 or any(isinstance(r, bool) or not isinstance(r, (int, float)) for r in res):
            raise ValueError(f"{who}: resources = {resources!r} must be a list of numbers (e.g. epochs [1, 3, 9, 27])")
        if any(not (math.isfinite(r) and r > 0) for r in res) or any(b <= a for a, b in zip(res, res[1:])):
            raise ValueError(f"{who}: resources = {res} must be positive and strictly increasing")
        ladder = inferred_ladder(res)
    if ladder is None and calibration is None:
        return None
    lad = ladder if ladder is not None else calibration.ladder()
    if not isinstance(lad, FidelityLadder):
        raise TypeError(f"{who}: ladder must be a FidelityLadder, got {type(lad).__name__}")
    if lad.resources is None:
        raise ValueError(f"{who}: the ladder needs resources (the step/epoch of each fidelity, e.g. [1, 3, 9, 27])")
    if integer_steps:
        bad = [r for r in lad.resources if r != int(r)]
        if bad:
            raise ValueError(f"{who}: ladder resources must be whole steps (Optuna reports integer steps), got {bad}")
    return lad


_REAL = (int, float, np.integer, np.floating)


def _check_above(name: str, value: Any, low: float, *, allow_none: bool = False) -> None:
    """A finite number `> low` (or None where `allow_none`); the error names it and the range."""
    if allow_none and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, _REAL) or not (math.isfinite(value) and value > low):
        raise ValueError(f"{name} = {value!r} is out of range; accepted: a number > {low:g}" + ", or None" * allow_none)


@dataclass(frozen=True)
class RungArgs:
    """An adapter's rung arguments, checked by :func:`resolve_rungs`: the ladder known now (given, from a
    calibration, or over the given resources; None: inferred once the maximum resource is known), σ, the user's
    ζ⁺ argument, and how a ladder is inferred (`max_resource`, `min_resource`, `reduction_factor`)."""

    ladder: FidelityLadder | None
    sigma: float | np.ndarray | None
    race_bias: Any
    max_resource: float | None
    min_resource: float | None
    reduction_factor: float

    def inferred(self, max_resource: float) -> FidelityLadder:
        """The ladder inferred for the maximum resource `max_resource` (:func:`auto_resources`)."""
        return inferred_ladder(
            auto_resources(max_resource, min_resource=self.min_resource, reduction_factor=self.reduction_factor)
        )

    def initial_ladder(self) -> FidelityLadder | None:
        """The ladder known before any trial: given, or inferred from `max_resource`; else None."""
        if self.ladder is not None or self.max_resource is None:
            return self.ladder
        return self.inferred(self.max_resource)

    def given_bias(self, M: int) -> RaceBias | CurveBound | None:
        """The user's bound for a ladder of `M` rungs (:func:`coerce_race_bias`); None: use the shipped one,
        or the user's :class:`~mf_sched.racing.curve_bound.CurveBoundFit` (:attr:`fit`) chosen like it."""
        return None if self.fit is not None else coerce_race_bias(self.race_bias, M)

    @property
    def fit(self) -> CurveBoundFit | None:
        """A fitted curve bound given as `race_bias=` (:func:`mf_sched.racing.fit.fit_curve_bound`): selected
        for the study's size, δ, tolerance, rungs and metric like the shipped one, and refined by the study."""
        return self.race_bias if isinstance(self.race_bias, CurveBoundFit) else None


def resolve_rungs(
    who: str,
    *,
    ladder: FidelityLadder | None,
    calibration: Any,
    resources: Sequence[float] | None,
    sigma: Any,
    race_bias: Any,
    max_resource: float | None,
    min_resource: float | None,
    reduction_factor: float,
    integer_steps: bool = False,
    zeta_needed_by: str | None = None,
    names: tuple[str, str] = ("max_resource", "min_resource"),
) -> RungArgs:
    """The rung arguments both adapters take, checked at construction: the ladder (:func:`resolve_ladder`), σ
    (:func:`check_sigma`), ζ⁺ (:func:`coerce_race_bias`, once the ladder is known) and the inference recipe.

    `zeta_needed_by` names what needs a ζ for every rung (e.g. `"rule = 'iise'"`): an inferred or missing
    ladder is then refused. `names`: how the adapter calls `max_resource` and `min_resource` in errors.

    >>> r = resolve_rungs("demo", ladder=None, calibration=None, resources=None, sigma=None, race_bias=None,
    ...                   max_resource=27, min_resource=None, reduction_factor=3)
    >>> r.ladder is None, r.initial_ladder().resources
    (True, (1.0, 3.0, 9.0, 27.0))
    >>> resolve_rungs("demo", ladder=None, calibration=None, resources=None, sigma=None, race_bias=None,
    ...               max_resource=0, min_resource=None, reduction_factor=3, names=("max_t", "min_t"))
    Traceback (most recent call last):
    ...
    ValueError: max_t = 0 is out of range; accepted: a number > 0, or None
    """
    lad = resolve_ladder(ladder, calibration, who, integer_steps=integer_steps, resources=resources)
    if zeta_needed_by is not None and (lad is None or is_inferred(lad)):
        raise ValueError(
            f"{zeta_needed_by} needs ladder= or calibration= (a ζ for every rung; racing, the default, infers the "
            "ladder)"
        )
    checked_sigma = check_sigma(sigma, calibration, None if lad is None else lad.M)
    if lad is not None:
        coerce_race_bias(race_bias, lad.M)  # fail now on a bad ζ⁺
    _check_above(names[0], max_resource, 0, allow_none=True)
    _check_above(names[1], min_resource, 0, allow_none=True)
    _check_above("reduction_factor", reduction_factor, 1)
    if max_resource is not None and min_resource is not None and min_resource > max_resource:
        raise ValueError(
            f"{names[1]} = {min_resource!r} is out of range; accepted: 0 < {names[1]} <= {names[0]} = {max_resource!r}"
        )
    return RungArgs(lad, checked_sigma, race_bias, max_resource, min_resource, reduction_factor)


def check_count(name: str, value: Any, low: int, *, allow_none: bool = False, unit: str | None = None) -> None:
    """An integer argument `>= low` (or None where `allow_none`); the error names it and the accepted range."""
    if allow_none and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        what = f"an integer >= {low}" + (f" ({unit})" if unit else "") + (", or None" if allow_none else "")
        raise ValueError(f"{name} = {value!r} is out of range; accepted: {what}")


def check_sigma(sigma: Any, calibration: Any, M: int | None) -> float | np.ndarray | None:
    """σ as given (one number, or one per rung), from a calibration, or `None` (a default is chosen later)."""
    if sigma is None and calibration is not None:
        s = np.asarray(calibration.sigma, dtype=float)
        if (M is None or s.size == M) and np.isfinite(s).all():
            return s
        raise ValueError("the calibration has no seed-to-seed σ (one seed per configuration): pass sigma=")
    if sigma is None:
        return None
    s = np.asarray(sigma, dtype=float)
    if not (np.isfinite(s).all() and (s > 0).all()) or s.ndim > 1:
        raise ValueError(f"sigma = {sigma!r} is out of range; accepted: finite numbers > 0 (one, or one per rung)")
    if s.ndim and M is not None and s.size != M:
        raise ValueError(f"sigma has {s.size} values but the ladder has {M} rungs; give one number or {M}")
    return s if s.ndim else float(s)


def default_sigma(values: Any) -> float:
    """The σ assumed when none is given: 0.01 for values in [0, 1], else 1% of the median |value| (or 0.01)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0 or (v.min() >= 0 and v.max() <= 1):
        return 0.01
    med = float(np.median(np.abs(v)))
    return 0.01 * med if med > 0 else 0.01


def coerce_race_bias(race_bias: Any, M: int) -> RaceBias | CurveBound | None:
    """A user's bound — a :class:`~mf_sched.racing.curve_bound.CurveBound` (or its dict), or ζ⁺ (RaceBias,
    mapping, list, or a :class:`~mf_sched.curves.calibration.RaceCalibration`) — or None (the shipped one)."""
    if race_bias is None or race_bias == "auto":
        return None
    if isinstance(race_bias, CurveBound):
        return race_bias
    if isinstance(race_bias, Mapping) and "hi" in race_bias:
        return CurveBound.from_dict(race_bias)
    if isinstance(race_bias, CurveBoundFit):  # chosen per study by auto_race_bias(fit=...)
        return None
    if hasattr(race_bias, "bias") and callable(race_bias.bias):  # a RaceCalibration
        race_bias = race_bias.bias()
    return RaceBias.coerce(race_bias, M)


#: the default miss tolerance of the curve-aware bound: an answer within 0.5% of the full search's is good enough
DEFAULT_TOLERANCE = 0.005
#: the bounds an adapter can race with by default: the curve-aware bound, or the unconditional ζ⁺ prior
BOUNDS = ("curve", "zeta+")


def auto_race_bias(
    ladder: FidelityLadder,
    values: Any,
    mode: str,
    *,
    n_arms: int | None = None,
    alpha: float = 0.05,
    tolerance: float = DEFAULT_TOLERANCE,
    family: str | None = None,
    bound: str = "curve",
    fit: CurveBoundFit | None = None,
) -> CurveBound | RaceBias:
    """The bound shipped for the metric family of `values` (or the named `family`): the curve-aware bound
    (:func:`mf_sched.racing.shipped_curve_bound`, selected for the study's size, α = `alpha`, `tolerance` and
    the ladder's rung fractions) or, with `bound="zeta+"`, the unconditional ζ⁺ prior at the ladder's
    fractions. `fit`: the user's fitted curve bound instead of the shipped one (its family's map of the metric
    is used). "No bound" (`inf` below the top: nothing is stopped) when no family fits — the adapter warns
    once per study (:func:`no_family_message`)."""
    fr = fractions(ladder)
    fam = metric_transform(values, mode, family)
    if fam is None:
        return RaceBias(upper=[math.inf] * (ladder.M - 1) + [0.0], source="none: no prior fits this metric")
    if bound == "curve":
        try:
            fit = fit if fit is not None else shipped_curve_bound(fam.name)
        except (OSError, ValueError) as e:  # pragma: no cover - the package data is shipped and validated
            warnings.warn(f"the shipped curve bound cannot be read ({e}); racing with the ζ⁺ prior", stacklevel=2)
        else:
            b = fit.select(n_arms=n_arms, alpha=alpha, tolerance=tolerance, fractions=fr[:-1], offset=fam.offset,
                           scale=fam.scale)  # fmt: skip
            return dataclasses.replace(b, source=f"{b.source}; the metric read as {fam.kind}")
    prior = race_prior(fam.name, fr)
    if fam.scale != 1.0 and prior.form == "absolute":  # ζ⁺ of the unit family is in [0, 1] units
        prior = dataclasses.replace(
            prior, upper=tuple(u * fam.scale for u in prior.upper), typical=tuple(t * fam.scale for t in prior.typical)
        )  # type: ignore[union-attr]
    return prior


def check_tolerance(tolerance: Any) -> float:
    """The relative tolerance of the curve-aware bound: a number in [0, 1)."""
    ok = not isinstance(tolerance, bool) and isinstance(tolerance, _REAL) and 0 <= float(tolerance) < 1
    if not ok:
        raise ValueError(f"tolerance = {tolerance!r} is out of range; accepted: 0 <= tolerance < 1 (0.005: 0.5%)")
    return float(tolerance)


def bound_kwargs(tolerance: Any, metric_family: str | None, bound: str) -> dict[str, Any]:
    """The adapters' arguments of the shipped bound (:func:`auto_race_bias`), checked."""
    if metric_family is not None:
        metric_transform([], "max", metric_family)  # fails now on an unknown name
    if bound not in BOUNDS:
        raise ValueError(f"bound = {bound!r} is unknown; accepted: {', '.join(map(repr, BOUNDS))}")
    return {"tolerance": check_tolerance(tolerance), "family": metric_family, "bound": bound}


def check_budget(budget: Any) -> float | None:
    """An epoch budget: a number > 0, or None (no budget)."""
    _check_above("budget", budget, 0, allow_none=True)
    return None if budget is None else float(budget)


def warn_no_family(view: Any, study: Any, warned: set[Any], who: str) -> None:
    """Warn once per study (`warned` holds the studies warned) when its metric fits no family."""
    if getattr(view, "no_family", False):
        key = (id(study._storage), study._study_id)
        if key not in warned:
            warned.add(key)
            mode = "max" if study.direction.name == "MAXIMIZE" else "min"
            warnings.warn(no_family_message(mode, who), stacklevel=4)


def no_family_message(mode: str, who: str) -> str:
    """The one-time warning of a study whose metric fits no family (nothing is stopped early)."""
    return (
        f"{who}: the reported values fit no metric family (mode = {mode!r}; recognised: accuracies, error rates "
        "and percentages, non-negative losses and negated losses): nothing will be stopped early. Pass "
        f"metric_family= (one of {', '.join(map(repr, NAMED_FAMILIES))}) if the metric is one of those, or "
        "race_bias= (a bound fitted on earlier curves: mf_sched.racing.fit.fit_curve_bound)"
    )


def fractions(ladder: FidelityLadder) -> list[float]:
    res = np.asarray(ladder.resources, dtype=float)
    return (res / res[-1]).tolist()


def as_mapping(x: Any) -> Mapping[str, Any]:
    return x if isinstance(x, Mapping) else {}
