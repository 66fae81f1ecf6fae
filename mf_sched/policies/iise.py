"""IISE: Iterative Imprecise Successive Elimination (Poiani, Metelli, Restelli 2022).

Paper: R. Poiani, A. M. Metelli, M. Restelli, *Multi-Fidelity Best-Arm Identification*, NeurIPS 2022,
Algorithm 1 (IISE), Eq. 3 (elimination), Eqs. 6–8 (thresholds), Assumption 1 (Eq. 5), §4.3 (ε-optimal
identification). Constants and the order of operations are confirmed by the authors' released code
(`riccardopoiani/mf-bai`, `MultiFidelitySuccessiveEliminationMaxBound`) and by reproducing the
deterministic phase lengths and noise-free costs of the paper's Table 1 configurations (§7).

The algorithm (fidelities `m = 1..M`; here 0-based, `0..M−1`):

* phases visit the fidelities in increasing order; in phase `m` every active arm is pulled once per
  *round* at fidelity `m`; after round `t` of the phase each active arm has `t` samples **of this
  phase** — samples of earlier phases are discarded, never pooled (the paper's `t` and `µ̂_{i,m,t}` are
  per phase, §4);
* elimination (Eq. 3): with `B(t, δ') = √(2σ² log(4t²/δ')/t)` (:func:`mf_sched.confidence.anytime_radius`)
  and `δ' = δ/(KM)`, arm `i` is eliminated when `max_{j∈S} µ̂_j − µ̂_i ≥ 2B(t, δ') + 2ξ_m`; all
  eliminations of a round are computed from one snapshot (simultaneous; the max runs over the arms
  pulled in the round, as in the authors' released code);
* phase switch: after the eliminations of round `t`, leave fidelity `m` when `α_m ≥ 4B(t, δ')`.
  The relation sign in line 4 of Algorithm 1 is not legible in our copy of the paper; we use `≥` as the
  authors' released code does. Phase `m`
  therefore lasts exactly `t_m = min{t ≥ 1 : 4B(t, δ') ≤ α_m}` rounds (:func:`phase_length`,
  :attr:`IISE.phase_lengths`) unless one arm is left earlier. `α_M = 0`: the last phase runs until one
  arm is left, which is what makes IISE δ-correct (Theorem 2, for any `α_m > 0`);
* thresholds, Eq. 8 (default): `α_m = max_{m'>m} 4(ξ_m − ξ_{m'})√λ_m / (√λ_{m'} − √λ_m)`
  (:func:`iise_thresholds`). Any other `α_m > 0` keeps δ-correctness (Theorem 2); `α_m = +∞` skips
  fidelity `m` (the pseudo-code's switch test at `t = 0`, where `B = +∞`).

Assumption 1 (Eq. 5) is what Theorem 3's cost bound needs, not correctness. :func:`check_assumption1`
tests it as a convex chain: the points `(−ξ_m, √λ_m)` must have non-decreasing slopes
`(√λ_{m+1} − √λ_m)/(ξ_m − ξ_{m+1})`; `fidelities="hull"` runs IISE on the lower convex hull of those
points (always keeping `M`), the pre-selection the paper says is always possible (§4, remark after Theorem 3; it does
not say how to choose the subset, the lower convex hull is our choice).

Ambiguities resolved (where the paper is silent or illegible; where the released code and the paper disagree the
paper wins):

* Phase switch — on `α_m ≥ 4B`, checked after the round's eliminations; never at `t = 0` unless
  `α_m = +∞`.
* Eliminations — simultaneous eliminations from one snapshot; the max is over the current active set.
* Statistics — per phase only. The shared statistics :attr:`Policy.counts` / :attr:`Policy.means`
  pool everything (diagnostics); the policy's decisions never read them.
* Synthetic A's `ξ_3 = 0.015` in the paper's text is a typo for `0.0105` (the released config
  and the generator agree); that is a property of the instance file, not of this code.
* **ε-optimal variant (reconstruction).** §4.3 says IISE is "easily" modified to return an
  ε-optimal arm but does not write the rule. We stop in phase `m` as soon as `4(B(t, δ') + ξ_m) ≤ ε`
  and return the empirical best active arm. On the good event every active arm's phase mean is within
  `B + ξ_m` of its true mean, so the answer is `2(B + ξ_m) ≤ ε/2`-optimal; the factor 4 is chosen
  because it reproduces the paper's two-arm claim exactly (fidelity `M` is never queried iff
  `ε ≥ 4ξ_m + α_m`) and its cost bound's `(ε − 4ξ_m)²`. Not in the paper's pseudo-code: flagged as
  reconstructed.
* `radius="practical"` reproduces the IISE *baseline of Poiani et al. 2024*: the released
  code of that paper (`riccardopoiani/adv-mf-bai`, `IISE.compute_ci`) eliminates with the LIL-style radius
  `√(2σ²(log log T + log(KM/δ))/t)` (:func:`mf_sched.confidence.lil_radius`, `T` = all pulls so far) and keeps `B`
  for the phase switch. It is a heuristic (no proof of δ-correctness); use it only to compare with that paper's
  numbers (IISE 185 on the 4×5 instance, 2063 on 5×2).

Parallel workers (`W` pulls outstanding): a round is handed out at once (`ask_batch`), so up to
`|S|` workers are busy; the next round — and any phase switch — waits until every pull of the current
round is told (a barrier), exactly like successive elimination. Decisions are therefore identical for
every `W` and every completion order; only wall-clock time changes. Workers idle at the end of a round
when `W > |S|` or when results straggle. A failed pull is given back and handed out again in the same
round; adopted pulls fill a matching slot of the current round, other adopted pulls are recorded as
extra samples (never used: they would break the equal-count structure of the radius).

Observation semantics. The guarantee is for *independent pulls* (each pull a fresh sample costing
`λ_m`). Under *resumable runs* (an arm is a training run advancing through epochs; mf-sched's Ray and
Optuna adapters), a sample of arm `i` at fidelity `m` is one *replica* (a seed) of the run evaluated
at `m`, and phase `m` needs `t_m` replicas per active arm:

* the δ-correctness argument still holds if replica `r` of arm `i` supplies the `r`-th sample of
  every phase (replica order fixed in advance, never chosen by observed values): for fixed `(i, m)`
  those samples are i.i.d. across replicas, the concentration events are defined on that pre-drawn table,
  and IISE never pools phases, so the dependence between a replica's values at `m` and `m + 1` does
  not matter. Resuming replica `r` from `m` to `m + 1` costs `λ_{m+1} − λ_m` (extra replicas cost
  `λ_{m+1}`), which the simulator meters with `semantics="resumable"`;
* with **one run per arm** (no seeds) only `t = 1` sample per arm per fidelity exists. Then IISE can only
  be run as a one-round-per-phase schedule: the observed value must be treated as exact (a tiny σ, with
  ζ(m) widened to cover seed-to-seed noise), giving a ζ-aware successive-halving-like rule
  (eliminate when `max µ̂ − µ̂_i ≥ 2ξ_m`). That is a modelling choice outside the paper's guarantee,
  and exact ties at the last fidelity then never separate: give such runs a `budget`.

Example:
    >>> from mf_sched import FidelityLadder
    >>> from mf_sched.policies.iise import IISE
    >>> ladder = FidelityLadder(costs=[1.0, 10.0], zeta=[0.2, 0.0])
    >>> p = IISE(n_arms=3, ladder=ladder, delta=0.1, noise={"kind": "subgaussian", "sigma": 0.05}, seed=0)
    >>> p.thresholds.round(4).tolist(), p.phase_lengths
    ([0.37, 0.0], [6, None])
    >>> while not p.done:
    ...     pulls = p.ask_batch()
    ...     p.tell_batch(pulls, [[0.2, 0.5, 0.9][q.arm] for q in pulls])
    >>> rec = p.recommendation()
    >>> rec.arm, rec.certified, p.counts.tolist()   # arm 0 out at fidelity 0; arms 1, 2 tie within 2ξ
    (2, True, [[2, 0], [6, 1], [6, 1]])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mf_sched._serialize import StateFormatError
from mf_sched._validate import check_choice, check_real
from mf_sched.confidence import anytime_radius, lil_radius
from mf_sched.ladder import FidelityLadder
from mf_sched.policy import (
    PolicyError,
    Recommendation,
    RoundPolicy,
    _state_int,
    active_mask_summary,
    argmax_random,
    check_delta,
)
from mf_sched.registry import register

__all__ = [
    "IISE",
    "Assumption1Report",
    "check_assumption1",
    "hull_fidelities",
    "iise_thresholds",
    "phase_length",
]


# ---------------------------------------------------------------------------------------------- helpers
def _as_vector(name: str, values: Any, M: int) -> np.ndarray:
    a = np.asarray(values, dtype=float)
    if a.shape != (M,):
        raise ValueError(f"{name} must have one value per fidelity ({M}), got shape {a.shape}")
    return a


@dataclass(frozen=True)
class Assumption1Report:
    """Result of :func:`check_assumption1` (Poiani et al. 2022, Assumption 1, Eq. 5).

    Attributes:
        holds: True when Eq. 5 holds for every fidelity `m < M`.
        slopes: `(√λ_{m+1} − √λ_m) / (ξ_m − ξ_{m+1})` for consecutive fidelities (`inf` when the bias
            does not decrease: that fidelity is dominated, footnote 1).
        violations: 0-based fidelities `m` at which Eq. 5 fails (the chain bends the wrong way).
        hull: the fidelities of the lower convex hull of `(−ξ_m, √λ_m)` (dominated ones removed, `M`
            kept); Assumption 1 holds on this subset.
        bias: which bias the check used (`"zeta"` for IISE/MFE, `"gamma"` for IISE-γ).
    """

    holds: bool
    slopes: tuple[float, ...]
    violations: tuple[int, ...]
    hull: tuple[int, ...]
    bias: str = "zeta"

    def to_dict(self) -> dict[str, Any]:
        return {
            "holds": self.holds,
            "slopes": [s if math.isfinite(s) else None for s in self.slopes],
            "violations": list(self.violations),
            "hull": list(self.hull),
            "bias": self.bias,
        }


def hull_fidelities(costs: Sequence[float], bias: Sequence[float]) -> tuple[int, ...]:
    """Fidelities on the lower convex hull of the points `(−ξ_m, √λ_m)`, always keeping the last one.

    A fidelity `m` is first dropped if it is *dominated* (some cheaper fidelity has a bias no larger:
    Poiani et al., footnote 1); the lower hull of the rest is the largest subset on which Assumption 1
    holds with the chain's end points kept.

    Args:
        costs: the costs `λ_m` of the fidelities, > 0 and increasing.
        bias: the bias bounds `ξ_m` (or the spreads γ), one per fidelity.

    >>> hull_fidelities([1, 2, 100, 1000], [1.0, 0.5, 0.45, 0.0])   # fidelity 2 lies above the chain
    (0, 1, 3)
    """
    lam = np.sqrt(np.asarray(costs, dtype=float))
    xi = np.asarray(bias, dtype=float)
    M = lam.size
    keep = [m for m in range(M) if m == M - 1 or not np.any(xi[:m] <= xi[m])]
    if keep[-1] != M - 1:  # pragma: no cover - the top is always kept above
        keep.append(M - 1)
    hull: list[int] = []
    for m in keep:
        # pop while the last two hull points and m do not turn counter-clockwise (lower hull, x = −ξ)
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            cross = (-xi[b] + xi[a]) * (lam[m] - lam[a]) - (lam[b] - lam[a]) * (-xi[m] + xi[a])
            if cross <= 0:
                hull.pop()
            else:
                break
        hull.append(m)
    return tuple(hull)


def check_assumption1(costs: Sequence[float], bias: Sequence[float], *, name: str = "zeta") -> Assumption1Report:
    """Check Assumption 1 of Poiani et al. (2022), Eq. 5, for costs `λ` and bias bounds `ξ` (or γ).

    For every `m ∈ [M − 1]`: `max_{k<m} (√λ_k − √λ_m)²/(ξ_m − ξ_k)² ≤ min_{k>m} (√λ_k − √λ_m)²/(ξ_m − ξ_k)²`
    — equivalently, the points `(−ξ_m, √λ_m)` form a convex chain. The report also gives the lower
    convex hull (:func:`hull_fidelities`), the subset to run IISE on when the assumption fails.

    Args:
        costs: the costs `λ_m` of the fidelities, > 0 and increasing.
        bias: the bias bounds `ξ_m` (or the spreads γ), as many as `costs`.
        name: the name of the bias sequence, for messages and the report (`"zeta"` or `"gamma"`).

    >>> check_assumption1([1, 10, 100, 1000], [1.15, 0.225, 0.0105, 0.0]).holds   # Synthetic A
    True
    >>> rep = check_assumption1([1, 2, 100, 1000], [1.0, 0.5, 0.45, 0.0])
    >>> rep.holds, rep.violations, rep.hull
    (False, (2,), (0, 1, 3))
    """
    lam = np.sqrt(np.asarray(costs, dtype=float))
    xi = np.asarray(bias, dtype=float)
    if lam.shape != xi.shape or lam.ndim != 1:
        raise ValueError(f"costs and {name} must be 1-D sequences of the same length")
    M = lam.size

    def slope(k: int, m: int) -> float:
        d = abs(xi[m] - xi[k])
        if (k < m and xi[k] <= xi[m]) or (k > m and xi[m] <= xi[k]):
            return math.inf  # the later fidelity is no less biased: dominated
        with np.errstate(over="ignore"):  # a bias difference of ~1e-308 gives an infinite slope
            return float(abs(lam[k] - lam[m]) / d)

    viol = []
    for m in range(1, M - 1):
        left = max(slope(k, m) for k in range(m))
        right = min(slope(k, m) for k in range(m + 1, M))
        if not left <= right * (1 + 1e-12):
            viol.append(m)
    # dominated fidelities (bias not strictly decreasing) also break the assumption
    for m in range(1, M):
        if xi[m] >= xi[m - 1] and m not in viol:
            viol.append(m)
    slopes = tuple(float(slope(m, m + 1)) for m in range(M - 1))
    return Assumption1Report(
        holds=not viol, slopes=slopes, violations=tuple(sorted(viol)), hull=hull_fidelities(costs, bias), bias=name
    )


def iise_thresholds(
    costs: Sequence[float], bias: Sequence[float], *, factor: float = 4.0, fidelities: Sequence[int] | None = None
) -> np.ndarray:
    """Eq. 8 of Poiani et al. (2022): `α_m = max_{m'>m} c(ξ_m − ξ_{m'})√λ_m / (√λ_{m'} − √λ_m)`, `α_M = 0`.

    `factor` `c` is 4 for IISE (bias bounds ξ) and 2 for IISE-γ (order-aware γ, "4ξ's are swapped with
    2γ's", §5). With `fidelities` (a subset that must contain the last fidelity) the max runs over the
    subset and the other fidelities get `+inf` (skipped). A value ≤ 0 (only when `ξ_m = 0` for some
    `m < M`: an unbiased cheaper fidelity) is returned as 0: that phase is then the final one.

    Args:
        costs: the costs `λ_m` of the fidelities, > 0 and increasing.
        bias: the bias bounds `ξ_m` (or the spreads γ), as many as `costs`.
        factor: the constant `c` of Eq. 8: 4 for IISE, 2 for IISE-γ.
        fidelities: the fidelities in use (0-based, containing the last one); `None`: all of them.

    >>> iise_thresholds([1, 10, 100, 1000], [1.15, 0.225, 0.0105, 0.0]).round(6).tolist()
    [1.711159, 0.396804, 0.019424, 0.0]
    """
    lam = np.sqrt(np.asarray(costs, dtype=float))
    xi = np.asarray(bias, dtype=float)
    M = lam.size
    used = list(range(M)) if fidelities is None else sorted(set(int(m) for m in fidelities))
    if not used or used[-1] != M - 1:
        raise ValueError(f"fidelities must include the highest fidelity {M - 1}, got {used}")
    alpha = np.full(M, np.inf)
    for j, m in enumerate(used):
        later = used[j + 1 :]
        if not later:
            alpha[m] = 0.0
            continue
        vals = [factor * (xi[m] - xi[k]) * lam[m] / (lam[k] - lam[m]) for k in later]
        alpha[m] = max(0.0, max(vals))
    return alpha


def phase_length(alpha: float, delta: float, sigma: float) -> int | None:
    """`t = min{t ≥ 1 : 4·B(t, δ) ≤ α}`, the number of rounds a phase with threshold `α` lasts.

    `None` when `α ≤ 0` (the phase never switches: it is the final one); `0` when `α = +inf` (the
    phase is skipped). A positive `α` so small that
    the phase would last more than `2^62` rounds (`ξ_m − ξ_{m'}` at rounding-error level: fidelity `m`
    is as good as the later ones) is treated as `α = 0`: the phase is the final one.

    Args:
        alpha: the phase's threshold `α_m`, `≥ 0` or `+inf`.
        delta: the per-(arm, fidelity) confidence `δ/(KM)`, `0 < δ < 1`.
        sigma: the sub-Gaussian scale `σ` of the rewards, > 0.

    >>> phase_length(1.711159, 0.001 / (2000 * 4), 1.0)   # Synthetic A (§7: K = 2000, M = 4), phase 1
    315
    """
    if alpha == math.inf:
        return 0
    if not alpha > 0:
        return None

    def ok(t: int) -> bool:
        return 4.0 * anytime_radius(t, delta, sigma) <= alpha

    if ok(1):
        return 1
    lo, hi = 1, 2
    while not ok(hi):
        lo, hi = hi, hi * 2
        if hi > 1 << 62:  # α ~ 1e-9 σ or less: the limit α → 0 (the final phase)
            return None
    while hi - lo > 1:  # B(·, δ) is decreasing for t ≥ 1 when δ < 1/2
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


# ---------------------------------------------------------------------------------------------- policy
@register
class IISE(RoundPolicy):
    """Iterative Imprecise Successive Elimination (Poiani et al. 2022, Algorithm 1). See the module docstring.

    Args:
        n_arms: see :class:`~mf_sched.policy.Policy`.
        ladder: see :class:`~mf_sched.policy.Policy`.
        **kwargs: `noise` (sets the sub-Gaussian σ of the radius (default: rewards in [0, 1], σ = 1/2)), `budget`,
            `seed`; see :class:`~mf_sched.policy.Policy`.
        delta: confidence; the answer is the best arm with probability ≥ 1 − δ (Theorem 2).
        thresholds: `α_m` for every fidelity (`α_m > 0` or `+inf` to skip it for `m < M`;
            `α_M = 0`). Default: Eq. 8 (:func:`iise_thresholds`).
        fidelities: run on a subset of fidelities (a list that contains the highest one), or `"hull"`
            for the lower convex hull on which Assumption 1 holds. Default: all (the paper's experiments).
            Not combinable with `thresholds` (give `+inf` thresholds instead).
        epsilon: ε ≥ 0; with ε > 0 stop as soon as `4(B + ξ_m) ≤ ε` and return an ε-optimal arm
            (§4.3; **reconstructed rule**, see the module docstring). 0: exact best arm — which never stops when
            two arms share the best mean (Theorem 2 assumes a unique best arm): pass `epsilon` or `budget`
            where a tie is possible; without them the policy warns after
            :attr:`~mf_sched.policy.Policy.stall_warning_pulls` pulls (:class:`~mf_sched.policy.NotStoppingWarning`).
        radius: `"theory"` (`B(t, δ/(KM))`, the paper) or `"practical"` (the heuristic LIL radius of
            Poiani et al. 2024's IISE baseline; not covered by Theorem 2).
    """

    name = "iise"
    paper = "Poiani, Metelli, Restelli 2022 (NeurIPS), Multi-Fidelity Best-Arm Identification, Algorithm 1 (IISE)"
    summary = "Iterative Imprecise Successive Elimination: ζ-aware elimination phase by phase up the fidelities"
    _state_attrs = ("_active", "_rsum", "_t", "_phase", "_stop_arm")

    #: which ladder sequence the elimination bias comes from, and Eq. 8's factor on it
    _bias_name = "zeta"
    _eq8_factor = 4.0

    def _validate_state(self, sub: dict[str, Any]) -> None:
        super()._validate_state(sub)  # RoundPolicy: _t is an integer >= 0
        t, m = sub["_t"], _state_int(sub, "_phase", 0, self.M - 1)
        tm = int(self._tm[m])
        if tm >= 0 and t > tm:
            raise StateFormatError(f"state field _t = {t} exceeds phase {m}'s length {tm}")
        if not sub["_active"].any():
            raise StateFormatError("state field _active has no active arm")
        _state_int(sub, "_stop_arm", -1, self.n_arms - 1)  # -1: no ε-stop yet

    def __init__(
        self,
        n_arms: int,
        ladder: FidelityLadder,
        *,
        delta: float = 0.05,
        thresholds: Sequence[float] | None = None,
        fidelities: Sequence[int] | str | None = None,
        epsilon: float = 0.0,
        radius: str = "theory",
        **kwargs: Any,
    ) -> None:
        super().__init__(n_arms, ladder, **kwargs)
        self.delta = check_delta(delta)
        self._init_extra()
        M = self.M
        self.epsilon = check_real("epsilon", epsilon, ge=0.0)
        self.radius_kind = check_choice("radius", radius, ("theory", "practical"))
        bias = self._bias()
        self.assumption1 = check_assumption1(ladder.costs, bias, name=self._bias_name)
        if thresholds is not None and fidelities is not None:
            raise ValueError("give thresholds or fidelities, not both (a +inf threshold skips a fidelity)")
        if fidelities is None:
            used: list[int] | None = None
        elif isinstance(fidelities, str):
            if fidelities not in ("all", "hull"):
                raise ValueError(f"fidelities = {fidelities!r} is unknown; accepted: 'all', 'hull' or a list")
            used = None if fidelities == "all" else list(self.assumption1.hull)
        else:
            used = sorted({ladder.check_index(int(m)) for m in fidelities})
            if not used or used[-1] != M - 1:
                raise ValueError(f"fidelities = {list(fidelities)} must include the highest fidelity {M - 1}")
        if thresholds is None:
            alpha = self._default_thresholds(used)
        else:
            alpha = _as_vector("thresholds", thresholds, M)
            if np.isnan(alpha).any():
                raise ValueError("thresholds must not be NaN")
            if alpha[-1] != 0.0:
                raise ValueError(f"thresholds[-1] = {alpha[-1]} must be 0 (the last phase runs until one arm is left)")
            bad = np.flatnonzero(~(alpha[:-1] > 0))
            if bad.size:
                m = int(bad[0])
                raise ValueError(f"thresholds[{m}] = {alpha[m]} is out of range; accepted: > 0 (or inf to skip)")
        alpha.setflags(write=False)
        self.thresholds = alpha
        self._delta_prime = self.delta / (self.n_arms * M)
        self.phase_lengths: list[int | None] = [phase_length(float(a), self._delta_prime, self.sigma) for a in alpha]
        self._tm = np.array([-1 if x is None else x for x in self.phase_lengths], dtype=np.int64)
        cfg: dict[str, Any] = {
            "delta": self.delta,
            "fidelities": fidelities if fidelities is None or isinstance(fidelities, str) else used,
            "epsilon": self.epsilon,
            "radius": radius,
        }
        if thresholds is not None:
            cfg["thresholds"] = [float(a) for a in np.asarray(thresholds, dtype=float)]
        cfg.update(self._extra_config())
        self._set_config(**cfg)
        self._active = np.ones(self.n_arms, dtype=bool)
        self._rsum = np.zeros(self.n_arms, dtype=float)
        self._t = 0
        self._phase = 0
        self._stop_arm = -1
        self._enter_phase()
        self._start()

    # ------------------------------------------------------------------ subclass hooks
    def _init_extra(self) -> None:
        """Validate subclass arguments (stored as attributes before `IISE.__init__` runs)."""

    def _extra_config(self) -> dict[str, Any]:
        return {}

    def _bias(self) -> np.ndarray:
        """The bias sequence of the elimination rule and of Eq. 8 (ξ for IISE, γ for IISE-γ)."""
        return np.asarray(self.ladder.zeta, dtype=float)

    def _default_thresholds(self, used: list[int] | None) -> np.ndarray:
        return iise_thresholds(self.ladder.costs, self._bias(), factor=self._eq8_factor, fidelities=used)

    def _elimination_bias(self, m: int) -> float:
        """What the empirical gap must exceed on top of `2B`: `2ξ_m` (Eq. 3)."""
        return 2.0 * float(self.ladder.zeta[m])

    def _epsilon_bias(self, m: int) -> float:
        """Bias term of the ε-stop: `4ξ_m` (reconstruction, see the module docstring)."""
        return 4.0 * float(self.ladder.zeta[m])

    # ------------------------------------------------------------------ mechanics
    def _enter_phase(self) -> None:
        """Skip phases whose threshold is +inf (fidelities not in use)."""
        while self._tm[self._phase] == 0:
            self._phase += 1

    def _radius(self, t: int, total: float | None = None) -> float:
        """Elimination radius after `t` rounds of the phase (`total`: pulls so far, practical radius)."""
        if self.radius_kind == "theory":
            return float(anytime_radius(t, self._delta_prime, self.sigma))
        T = float(self._n_told) if total is None else total
        return float(lil_radius(t, T, self._delta_prime, self.sigma))

    def switch_radius(self, t: int) -> float:
        """`B(t, δ/(KM))`, the radius the phase switch compares with `α_m/4`.

        Args:
            t: the number of rounds completed in the phase, `≥ 1`.
        """
        return float(anytime_radius(t, self._delta_prime, self.sigma))

    def _next_round(self) -> tuple[np.ndarray, np.ndarray] | None:
        if self._stop_arm >= 0:
            return None
        idx = np.flatnonzero(self._active)
        if idx.size <= 1:
            return None
        return idx, np.full(idx.size, self._phase, dtype=np.int64)

    def _observe_round(self, arms: np.ndarray, fidelities: np.ndarray, values: np.ndarray) -> None:
        self._rsum[arms] += values  # a round pulls each active arm once: no repeated index

    def _observe_round_one(self, arm: int, fidelity: int, value: float) -> None:
        self._rsum[arm] += value

    def _round_complete(self) -> None:
        self._t += 1
        t, m = self._t, self._phase
        idx = np.flatnonzero(self._active)
        mu = self._rsum[idx] / t
        b = self._radius(t)
        top = mu.max()
        out = top - mu >= 2.0 * b + self._elimination_bias(m)
        if out.any():
            self._active[idx[out]] = False
            idx, mu = idx[~out], mu[~out]
        self._post_round(idx, mu, b)

    def _post_round(self, idx: np.ndarray, mu: np.ndarray, b: float) -> None:
        """After a round's eliminations: the ε-stop (reconstruction), then the phase switch."""
        t, m = self._t, self._phase
        if idx.size > 1 and self.epsilon > 0 and 4.0 * b + self._epsilon_bias(m) <= self.epsilon:
            self._stop_arm = int(idx[argmax_random(mu, self._rng)])
            return
        tm = int(self._tm[m])
        if idx.size > 1 and tm > 0 and t >= tm:  # α_m ≥ 4B(t, δ/(KM)): next fidelity, fresh statistics
            self._phase = m + 1
            self._t = 0
            self._rsum[:] = 0.0
            self._enter_phase()

    # ------------------------------------------------------------------ answers and status
    def _recommend(self) -> Recommendation:
        idx = np.flatnonzero(self._active)
        details: dict[str, Any] = {"phase": self._phase, "rounds_in_phase": self._t}
        if self._stop_arm >= 0:  # ε-stop: ε-optimal with probability ≥ 1 − δ
            arm = self._stop_arm
            details.update(epsilon=self.epsilon, n_active=int(idx.size))
        elif self._finished and idx.size == 1:
            arm = int(idx[0])
        else:
            return self._empirical_recommendation(certified=False, reason=self._default_reason(), arms=idx, **details)
        return self._answer(arm, certified=True, details=details)

    def _describe(self) -> dict[str, Any]:
        d = super()._describe()
        d.update(active_mask_summary(self._active))
        d.update(
            phase=self._phase,
            rounds_in_phase=self._t,
            phase_length=self.phase_lengths[self._phase],
            assumption1=self.assumption1.to_dict(),
        )
        return d

    @property
    def active_arms(self) -> np.ndarray:
        """Indices of the arms still in the race."""
        return np.flatnonzero(self._active)

    @property
    def phase(self) -> int:
        """The current phase = the fidelity being sampled (0-based)."""
        return self._phase

    @property
    def rounds_in_phase(self) -> int:
        """Rounds completed in the current phase (its `t`)."""
        return self._t

    @property
    def phase_sums(self) -> np.ndarray:
        """Sum of each active arm's samples in the current phase (in :attr:`active_arms` order)."""
        return self._rsum[self._active].copy()

    def epsilon_stop_fires(self, ts: Any) -> np.ndarray:
        """Whether the ε-stop (reconstruction) fires after rounds `ts` of the current phase (vectorised;
        all False when `epsilon = 0`).

        Args:
            ts: round counts of the current phase (an integer or an array of them, `≥ 1`).
        """
        ts = np.asarray(ts, dtype=np.int64)
        if self.epsilon <= 0:
            return np.zeros(ts.shape, dtype=bool)
        b = (self.round_thresholds(ts) - self._elimination_bias(self._phase)) / 2.0
        return 4.0 * b + self._epsilon_bias(self._phase) <= self.epsilon

    # ------------------------------------------------------------------ simulator hooks
    def round_thresholds(self, ts: Any) -> np.ndarray:
        """Elimination thresholds after rounds `ts` (> the current `t`) of the current phase, assuming
        the active set stays as it is: an arm is eliminated after round `t` when
        `max µ̂ − µ̂_i ≥ threshold` (`2B(t) + 2ξ_m` for IISE, `2B(t) + γ_m` for IISE-γ). Vectorised.
        Simulators use it to find the first round of a stretch in which an elimination fires.

        Args:
            ts: round counts of the current phase, each greater than the current `t` (an integer or an array).
        """
        ts = np.asarray(ts, dtype=np.int64)
        if self.radius_kind == "theory":
            b = anytime_radius(ts, self._delta_prime, self.sigma)
        else:
            total = self._n_told + int(self._active.sum()) * (ts - self._t)
            b = lil_radius(ts, total, self._delta_prime, self.sigma)
        return 2.0 * np.asarray(b, dtype=float) + self._elimination_bias(self._phase)

    def rounds_left_in_phase(self) -> int | None:
        """Rounds until the phase switch (`t_m − t`), or None in the final phase."""
        tm = int(self._tm[self._phase])
        return None if tm < 0 else tm - self._t

    def record_rounds(self, n: int, sums: Any, sumsq: Any) -> None:
        """Simulator hook: record `n` complete rounds of the current phase at once.

        The caller guarantees that **no elimination fires after any of these rounds** (it checks the running means
        against :meth:`round_thresholds`); the policy then ends in exactly the state that `n` rounds of
        `ask_batch`/`tell_batch` with those samples would give (the ε-stop and the phase switch are applied after the
        last round, where they can first fire). This is how :mod:`mf_sched.sim.iise_runner` simulates the 10⁵–10⁹-round
        phases of the paper's experiments with vectorised sampling; it is not part of the ask/tell protocol and is not
        recorded in :attr:`history`.

        Raises :class:`PolicyError` (and changes nothing) when a pull of the current round is already
        issued, `n` would cross the phase switch, the ε-stop would fire before the last round, the rule
        of Eq. 3 fires after the last round, the budget cannot pay, or history is being recorded.

        Args:
            n: the number of complete rounds to record, `≥ 1`, not past the phase switch.
            sums: per active arm (in :attr:`active_arms` order), the sum of its `n` new samples.
            sumsq: per active arm, the sum of the squares of those samples.
        """
        if not self._at_round_boundary():
            raise PolicyError("record_rounds needs a round boundary: no pull of the current round may be issued")
        if self._events is not None:
            raise PolicyError("record_rounds cannot be used while history is being recorded")
        if self._finished or self._stop_arm >= 0:
            raise PolicyError("the policy has stopped")
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise PolicyError(f"n = {n!r} is out of range; accepted: an integer >= 1")
        n = int(n)
        m = self._phase
        left = self.rounds_left_in_phase()
        if left is not None and n > left:
            raise PolicyError(f"n = {n} crosses the phase switch ({left} rounds left in phase {m})")
        idx = np.flatnonzero(self._active)
        sums = np.asarray(sums, dtype=float)
        sumsq = np.asarray(sumsq, dtype=float)
        if sums.shape != idx.shape or sumsq.shape != idx.shape:
            raise PolicyError(f"sums and sumsq must have one entry per active arm ({idx.size})")
        if not (np.all(np.isfinite(sums)) and np.all(np.isfinite(sumsq))):
            raise PolicyError("sums and sumsq must be finite")
        c = float(self._costs[m]) * n * idx.size
        if not self._affordable(c):
            raise PolicyError("the budget cannot pay for these rounds: simulate them pull by pull")
        t_end = self._t + n
        total_end = float(self._n_told + n * idx.size)
        if self.epsilon > 0 and n > 1:
            b_prev = self._radius(t_end - 1, total_end - idx.size)
            if 4.0 * b_prev + self._epsilon_bias(m) <= self.epsilon:
                raise PolicyError("the ε-stop fires before the last of these rounds: record fewer rounds")
        mu = (self._rsum[idx] + sums) / t_end
        b = self._radius(t_end, total_end)
        if mu.max() - mu.min() >= 2.0 * b + self._elimination_bias(m):
            raise PolicyError("an elimination fires after the last of these rounds: record fewer rounds")
        self._record_totals(idx, m, n, sums, sumsq, cost=c)  # the base statistics, through the base class
        self._rsum[idx] += sums
        self._t = t_end
        self._post_round(idx, mu, b)
        self._count_rounds(n, requeue=self._phase != m or self._stop_arm >= 0)
