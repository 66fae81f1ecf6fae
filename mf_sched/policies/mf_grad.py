"""MF-GRAD: asymptotically optimal multi-fidelity best-arm identification (Poiani et al. 2024).

Paper: R. Poiani, R. Degenne, E. Kaufmann, A. M. Metelli, M. Restelli, *Optimal Multi-Fidelity Best-Arm
Identification*, NeurIPS 2024 (arXiv 2406.03033), algorithm MF-GRAD; constants and step order from the
authors' released code (`riccardopoiani/adv-mf-bai`, `algorithms/gradient.py`, `utils/lb_tool_fast_stopping.py`).
The paper's body could not be read when this was written: where this docstring says "the code", the paper's
text is unverified.

**Model.** K arms, M fidelities with costs `λ_1 < … < λ_M` and bias bounds `ζ` (`ζ_M = 0`);
Gaussian observations with known σ (the noise model's σ; for bounded rewards the Hoeffding σ); the
true means satisfy `|µ_{i,m} − µ_{i,M}| ≤ ζ_m` (the set `M_MF`); the best arm is `argmax_i µ_{i,M}`.
Objective: stop with the best arm with probability ≥ 1 − δ at the smallest expected cost.

**Algorithm** (one gradient step per pull; `t` = pulls so far including the current one):

1. *Initialisation*: pull every (arm, fidelity) once, arm-major order (cost `K Σ_m λ_m`).
2. *Gradient* (as in the code): at the previous iterate `ω̃` (cost proportions, initially uniform) and
   the current empirical means `µ̂`, solve the closest alternative with weights `ω̃/λ` over all
   answers (:func:`mf_sched.sim.alternative.best_response`: answer `i`, challenger `b`, alternative
   `θ*`); the supergradient is `g_{j,m} = d(µ̂_{j,m}, θ*_{j,m})/λ_m` for `j ∈ {i, b}`, 0 elsewhere.
3. *Cost-of-round factor*: `g ← g · c(π̃)` with `c(π̃) = 1/Σ ω̃/λ` (the code's step order: the online
   learner is fed gains `c_t F(·, µ̂_t)`, which also makes the step invariant to the unit of cost).
4. *Exponential weights* on the simplex of the K·M pairs: `G ← G + g`, `ω̃ ∝ exp(η_n G)` with
   `η_n = 0.25` (default, the code's MF-GRAD-CONST) or `1/√(n + 1)` (`learning_rate="theory"`),
   `n` = gradient steps so far.
5. *Pull proportions and forced exploration* (in pull space, as in the code): `π̃ ∝ ω̃/λ`,
   `π′ = (1 − γ_t) π̃ + γ_t/(KM)`, `γ_t = 1/(4√t)`.
6. *C-tracking*: `Cum ← Cum + π′`; pull `argmax (Cum − N)`; ties go to the lowest fidelity, then
   the lowest arm (the code's M×K layout).
7. *Stopping* (after every observation, once every pair has a sample): the GLR statistic
   `Z = max_i min_{b≠i} f(i, b; N, µ̂)` (pull counts as weights, maximum over every
   answer as in the code) against `β(t, δ) = log(K/δ) + M log(1 + log t)` (`threshold=
   "practical"`, every experiment of the paper; not covered by the theory) or the code's theoretical
   form (`threshold="theory"`, :func:`mf_sched.confidence.glr_threshold`); stop when `Z ≥ β` and
   recommend the maximising answer.

**Paper/code ambiguities and how they are resolved here**:

* Threshold: default practical (as in the paper's experiments); `"theory"` follows the code's
  commented-out form, which we could not check against the paper.
* Learning rate: default 0.25 (MF-GRAD-CONST, empirically better in the paper's appendix and in our
  runs); `"theory"` gives `1/√(n + 1)`.
* The GLR is not reduced by the projection cost of `µ̂` onto `M_MF` (as in the code). It stays
  δ-correct: a wrong answer `î` can only stop when the true `µ` restricted to arms `î` and `i*`
  is an admissible alternative, whose cost is a 2M-coordinate deviation; the same union bound as the
  theoretical threshold covers it.
* **The authors' single-fidelity bug is not reproduced**: their pair solver returns "no value" when
  the ordering constraint is slack, which with `M = 1` makes the statistic pick a wrong answer
  (counts (10, 10, 10), means (1.0, 0.9, 0.0), σ = 1 gave arm 2 with 2.025). Here a slack pair is
  worth `v_i + v_b` exactly (:mod:`mf_sched.sim.alternative`); that case gives the first arm with 0.025
  (tested).
* Gradient components: `gradient="useful"` (default, the code) zeroes, for `m < M`, the
  components along which the constraint pushes the wrong way (`θ*_{b,M} ≤ µ̂_{b,m} + ζ_m` for the
  challenger, `θ*_{i,M} ≥ µ̂_{i,m} − ζ_m` for the answer); they are 0 anyway once `µ̂ ∈ M_MF`.
  `gradient="danskin"` keeps the exact supergradient.
* The code's extreme-interval candidates are replaced by the exact derivative root; exponential
  weights in float64 with the maximum subtracted (the code uses `float128` and the minimum, which
  overflows in float64 and is missing on some platforms); exact zeros after underflow are handled
  exactly by the solver. No clipping of `µ̂`. Stop on "≥", the statistic is evaluated only
  once every pair has a sample.
* The threshold's `t` is the number of samples in the statistic (told pulls); `γ_t`'s `t` counts
  pulls handed out including the current one (the code's `t` when there is one worker).

**Cost per step**: the closest alternative with the K-reduction of :mod:`mf_sched.sim.alternative`, kept
between steps (:class:`mf_sched.sim.alternative.IncrementalResponse`): a step with a constant learning rate
only increases the two rows of `ω̃` it touches (up to a common factor, which changes neither the
answer, the challenger nor the alternative), so every kept pair value `f(i, b)` stays a lower bound and
only the pairs whose bound falls below the best exact value are re-solved (typically a few, instead of
the `K − 1` challengers of every evaluated answer); a new sample invalidates its arm's pairs only. The
result is a function of the current weights and means alone (kept values only save work), so a restored
policy decides exactly as the original (tested). The exponential weights are kept as `E = exp(η G +
prior − C)` with an offset `C` that depends only on `max(η G + prior)`, updated in the two touched
rows; C-tracking is a few vectorised passes over the K×M table. After each observation the exact GLR
statistic is computed only when an upper bound built from the last exact solution and updated row by row
(:class:`mf_sched.sim.alternative.ResponseUpperBound`, `O(K)` per sample) reaches the threshold, so the
stopping time and answer are exactly those of evaluating it every time (tested) at a fraction of the cost.
With `learning_rate="theory"` every weight moves at every step: the closest alternative is then solved
afresh (`O(K M log M)` while `µ̂` satisfies the constraints; the paper's `O(K² M²)` is the worst
case, approached only while many arms are inconsistent).

**Parallel workers** (`W` outstanding pulls; our design, the paper is sequential): every `ask` takes one gradient
step and tracks `Cum − (N + pending)`, where *pending* counts the pulls handed out and not yet told, so `W`
workers receive `W` different pulls that follow the target proportions instead of `W` copies of the
same deficit. Estimates, gradients and the GLR use told observations only. The initial sweep is handed
out at once; until its last result is back `ask` returns None (the gradient needs every mean). The
stopping rule is checked after each `tell` (once per `tell_batch`); pulls still outstanding when it
fires are paid for and recorded, but the answer does not change. Given-back pulls leave the tracking
deficit open, so the work is handed out again.

**Options that are not the paper's** (`benchmarks/mf_grad_improvements.py` measures them; both off by
default, see that script's verdict): `forced_exploration="cost"` spends the forced exploration
uniformly in cost rather than in pulls (same √t growth of every count, so the asymptotic argument is
unchanged; cheaper when the top fidelity is expensive); `warm_start=True` starts the exponential
weights, after the sweep, from the prior `½ ω*(µ̃) + ½ uniform` where `ω*` are the optimal cost
proportions of the lower bound for the plug-in model `µ̃` (the sweep's means projected on the model);
an exponential-weights prior with full support keeps the regret bound up to an additive
`log(2KM)`.

**Semantics**: *independent pulls* only (every pull is a fresh Gaussian sample costing `λ_m`). Every
sample of a pair (adopted pulls included) enters its mean and count (`sample_agnostic`): the GLR is
valid whatever the sampling rule. With resumable training runs, repeated pulls of (arm, fidelity) need
independent replicas (seeds); without them the model, hence the guarantee, does not hold.

Example:
    >>> from mf_sched import FidelityLadder, SubGaussian
    >>> from mf_sched.policies.mf_grad import MFGrad
    >>> import numpy as np
    >>> mu = np.array([[0.4, 0.5], [0.5, 0.6], [0.3, 0.35]])
    >>> p = MFGrad(n_arms=3, ladder=FidelityLadder([0.5, 5.0], [0.1, 0.0]), noise=SubGaussian(0.1), delta=0.01)
    >>> rng = np.random.default_rng(0)
    >>> while not p.done:
    ...     pull = p.ask(); p.tell(pull, mu[pull.arm, pull.fidelity] + 0.1 * rng.standard_normal())
    >>> rec = p.recommendation()
    >>> rec.arm, rec.certified
    (1, True)
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, NamedTuple

import numpy as np

from mf_sched._validate import check_choice, check_delta, check_real
from mf_sched.confidence import glr_threshold
from mf_sched.ladder import FidelityLadder
from mf_sched.policy import Policy, Recommendation
from mf_sched.registry import register
from mf_sched.sim.alternative import (
    IncrementalResponse,
    ResponseUpperBound,
    alternative_means,
    best_response,
    project,
)
from mf_sched.sim.tight_bound import tight_lower_bound

_THRESHOLDS = ("practical", "theory")
_GRADIENTS = ("useful", "danskin")
_EXPLORATION = ("pulls", "cost")


@register
class MFGrad(Policy):
    """MF-GRAD (Poiani et al. 2024): sub-gradient ascent on cost proportions, C-tracking, GLR stopping.

    Args:
        n_arms: see :class:`~mf_sched.policy.Policy`.
        ladder: see :class:`~mf_sched.policy.Policy`.
        **kwargs: `noise` (gives σ (Gaussian noise with known σ is the paper's model)), `budget`, `seed`; see
            :class:`~mf_sched.policy.Policy`.
        delta: confidence; the answer is the best arm with probability ≥ 1 − δ (with the theoretical
            threshold; the practical one is the paper's experimental choice).
        learning_rate: a constant step `> 0` (default 0.25, MF-GRAD-CONST) or `"theory"`
            (`1/√(n + 1)`).
        threshold: `"practical"` (default) or `"theory"`, see :func:`mf_sched.confidence.glr_threshold`.
        gradient: `"useful"` (default, the authors' code) or `"danskin"` (exact supergradient).
        forced_exploration: `"pulls"` (default, the authors' code: uniform over the K·M pairs in pull
            space) or `"cost"` (uniform in cost space, ∝ 1/λ in pull space).
        warm_start: start the exponential weights, after the initial sweep, from the plug-in optimal cost
            proportions mixed half-and-half with the uniform ones instead of the uniform ones.
    """

    name = "mf-grad"
    paper = (
        "Poiani, Degenne, Kaufmann, Metelli, Restelli 2024 (NeurIPS), Optimal Multi-Fidelity Best-Arm "
        "Identification, MF-GRAD"
    )
    summary = "asymptotically optimal multi-fidelity BAI: gradient ascent on cost proportions, GLR stopping"
    sample_agnostic = True
    _state_attrs = ("_G", "_omega", "_cum", "_pending", "_n_grad", "_identified", "_log_prior")
    #: GRAD: use the highest fidelity only
    _top_only: ClassVar[bool] = False

    def __init__(
        self,
        n_arms: int,
        ladder: FidelityLadder,
        *,
        delta: float = 0.05,
        learning_rate: float | str = 0.25,
        threshold: str = "practical",
        gradient: str = "useful",
        forced_exploration: str = "pulls",
        warm_start: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(n_arms, ladder, **kwargs)
        self.delta = check_delta(delta)
        if isinstance(learning_rate, str):
            if learning_rate != "theory":
                raise ValueError(f"learning_rate = {learning_rate!r} is unknown; accepted: a number > 0 or 'theory'")
        else:
            learning_rate = check_real("learning_rate", learning_rate, gt=0.0, accepted="a number > 0 or 'theory'")
        check_choice("threshold", threshold, _THRESHOLDS)
        check_choice("gradient", gradient, _GRADIENTS)
        check_choice("forced_exploration", forced_exploration, _EXPLORATION)
        if not isinstance(warm_start, bool):
            raise ValueError(f"warm_start must be True or False, got {warm_start!r}")
        self.learning_rate = learning_rate
        self.threshold = threshold
        self.gradient = gradient
        self.forced_exploration = forced_exploration
        self.warm_start = warm_start
        self._set_config(
            delta=self.delta,
            learning_rate=learning_rate,
            threshold=threshold,
            gradient=gradient,
            forced_exploration=forced_exploration,
            warm_start=warm_start,
        )
        M = self.M
        self._off = M - 1 if self._top_only else 0
        self._sl = slice(self._off, M)
        Mu = M - self._off
        self._Mu = Mu
        self._lam = self._costs[self._sl].copy()
        self._z = self._zeta[self._sl].copy()
        K = self.n_arms
        self._G = np.zeros((K, Mu))
        self._cumT = np.zeros((Mu, K))  # Cum, fidelity-major (the order of C-tracking's tie-breaking)
        self._pending = np.zeros((K, Mu), dtype=np.int64)
        self._n_grad = 0
        self._identified = 0 if K == 1 else -1
        self._log_prior = np.zeros((K, Mu))
        # forced-exploration distribution over pairs, in pull space
        explore = np.ones((K, Mu)) if forced_exploration == "pulls" else np.broadcast_to(1.0 / self._lam, (K, Mu))
        self._explore = explore / explore.sum()
        self._exploreT = np.ascontiguousarray(self._explore.T)
        self._after_load()

    # ----------------------------------------------------------------------------- caches
    def _after_load(self) -> None:
        sl = self._sl
        self._n_zero = int(np.count_nonzero(self._counts[:, sl] == 0))
        self._free_ptr = 0  # no pair before it has N + pending == 0 (a lower bound; advanced lazily)
        self._tentative: _Step | None = None
        # the GLR's upper bound from its last exact solution (a cache: decisions never depend on it)
        self._glr_ub: ResponseUpperBound | None = None
        # per-pair statistics kept up to date by the tells: counts N, means x, and N + pending (fidelity-major)
        self._N = self._counts[:, sl].astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            self._x = self._sums[:, sl] / self._N
        self._NPT = np.ascontiguousarray((self._N + self._pending).T)
        self._tot = float(self._NPT.sum())
        self._set_weights()
        self._ir: IncrementalResponse | None = None  # the gradient's closest alternative, kept between steps

    def _set_weights(self) -> None:
        """The exponential weights `E = exp(η_n G + prior − C)` of the iterate `ω̃ = E / ΣE` (uniform
        before the first step), `R = E/λ` (∝ `ω̃/λ`, the gradient's weights) and their sums. The offset
        `C` is a function of `max(η_n G + prior)` (:meth:`_offset`), so that the values kept while running
        and those rebuilt from a saved state are the same numbers."""
        if self._n_grad == 0:
            e = np.zeros_like(self._G)
        else:
            e = self._lr(self._n_grad) * self._G + self._log_prior
        self._emax = float(e.max())
        self._C = self._offset(self._emax)
        self._ET = np.ascontiguousarray(np.exp(e - self._C).T)
        self._RT = self._ET / self._lam[:, None]
        self._sumE = float(self._ET.sum())
        self._sumR = float(self._RT.sum())

    @staticmethod
    def _offset(emax: float) -> float:
        """The offset `C` of the exponential weights: `max(e)` rounded down to a multiple of 32 (so that
        `E ≤ e³²`, and `C` changes, with every weight, only when the maximum crosses a multiple)."""
        return 32.0 * math.floor(emax / 32.0)

    @property
    def _omega(self) -> np.ndarray:
        """The iterate `ω̃` (K×M): a function of `G`, the step count and the prior, rebuilt on load."""
        return (self._ET / self._sumE).T.copy()

    @_omega.setter
    def _omega(self, value: np.ndarray) -> None:
        pass  # derived (see the getter); a restored state rebuilds it in _after_load

    @property
    def _cum(self) -> np.ndarray:
        """The C-tracking sums `Cum` (K×M)."""
        return self._cumT.T.copy()

    @_cum.setter
    def _cum(self, value: np.ndarray) -> None:
        self._cumT = np.ascontiguousarray(np.asarray(value, dtype=float).T)

    def _first_free(self) -> int | None:
        """First pair (arm-major) with no sample and no pending pull, or None."""
        n = self._counts[:, self._sl].ravel()
        pend = self._pending.ravel()
        j = self._free_ptr
        while j < n.size and (n[j] > 0 or pend[j] > 0):
            j += 1
        self._free_ptr = j
        return j if j < n.size else None

    def _means(self) -> tuple[np.ndarray, np.ndarray]:
        N = self._counts[:, self._sl].astype(float)
        return N, self._sums[:, self._sl] / N

    # ----------------------------------------------------------------------------- sampling rule
    def _lr(self, n: int) -> float:
        return 1.0 / math.sqrt(n + 1) if self.learning_rate == "theory" else float(self.learning_rate)

    def _response(self) -> Any:
        """The closest alternative at the current iterate (weights ∝ `ω̃/λ`: it is scale-free). With a
        constant learning rate a step only increases the two rows it touches, so the kept pair values of
        :class:`~mf_sched.sim.alternative.IncrementalResponse` stay lower bounds; `"theory"` moves every row."""
        if self.learning_rate == "theory":
            return best_response(self._RT.T, self._x, self._z, self.sigma, check=False)
        if self._ir is None:
            self._ir = IncrementalResponse(self._RT.T, self._x, self._z, self.sigma)
        return self._ir.solve()

    def _supergradient(self, r: Any, x: np.ndarray) -> tuple[list[int], np.ndarray]:
        """The rows `[answer, challenger]` of `c(π̃) · g` (steps 2–3; `g` is 0 elsewhere)."""
        inv = 1.0 / (2.0 * self.sigma**2 * self._lam)
        rows = [r.answer, r.challenger]
        g = np.empty((2, self._Mu))
        for k, (j, eta, sign) in enumerate(((r.answer, r.eta_answer, -1.0), (r.challenger, r.eta_challenger, 1.0))):
            theta = alternative_means(x[j], self._z, eta)
            gj = (x[j] - theta) ** 2 * inv
            if self.gradient == "useful" and self._Mu > 1:
                # keep, below the top fidelity, only the directions the constraint pushes usefully:
                # the challenger pushed up (η > x + ζ), the answer pulled down (η < x − ζ)
                lo = gj[:-1]
                useful = (eta > x[j, :-1] + self._z[:-1]) if sign > 0 else (eta < x[j, :-1] - self._z[:-1])
                lo[~useful] = 0.0
            g[k] = gj
        # c(π̃) = 1 / Σ ω̃/λ = ΣE / ΣR
        return rows, g * (self._sumE / self._sumR)

    def _step(self) -> _Step:
        """One gradient step and the tracked pull (steps 2–6), without committing it."""
        x = self._x
        rows, g = self._supergradient(self._response(), x)
        G_rows = self._G[rows] + g
        n = self._n_grad + 1
        lr = self._lr(n)
        e_rows = lr * G_rows + self._log_prior[rows]
        emax = max(self._emax, float(e_rows.max()))  # a constant rate only increases e
        C = self._offset(emax)
        full = self.learning_rate == "theory" or self._n_grad == 0 or C != self._C
        if full:  # every weight moves (or the offset C is renewed): recompute them all
            G = self._G.copy()
            G[rows] = G_rows
            e = lr * G + self._log_prior
            emax = float(e.max())
            C = self._offset(emax)
            ET = np.ascontiguousarray(np.exp(e - C).T)
            RT = ET / self._lam[:, None]
            sumE = float(ET.sum())
            E_rows = ET  # all of E: the commit replaces it
        else:  # only the two rows move (the same elementwise arithmetic as a full recomputation)
            E_rows = np.exp(e_rows - C).T
            ET = self._ET.copy()
            ET[:, rows] = E_rows
            sumE = float(ET.sum())
            RT = self._RT.copy()
            RT[:, rows] = E_rows / self._lam[:, None]
        sumR = float(RT.sum())
        gamma = 0.25 / math.sqrt(self._tot + 1.0)
        cum = self._cumT + ((1.0 - gamma) / sumR) * RT  # π̃ = (ω̃/λ) / Σ(ω̃/λ) = R / ΣR
        if self.forced_exploration == "pulls":
            cum += gamma * float(self._exploreT[0, 0])
        else:
            cum += gamma * self._exploreT
        k = int(np.argmax(cum - self._NPT))  # fidelity-major: lowest fidelity first, then lowest arm, among ties
        m, arm = divmod(k, self.n_arms)
        return _Step(arm, m + self._off, rows, G_rows, ET, RT, sumE, sumR, C, emax, cum, n, full)

    def _commit(self, st: _Step) -> None:
        self._G[st.rows] = st.G_rows
        self._ET = st.ET
        self._RT = st.RT
        self._sumE, self._sumR, self._C, self._emax = st.sumE, st.sumR, st.C, st.emax
        self._cumT = st.cum
        self._n_grad = st.n
        if self._ir is not None:
            if st.full:
                self._ir.reset(self._RT.T, self._x)
            else:  # the touched rows only grew
                self._ir.set_rows(st.rows, w=self._RT[:, st.rows].T, grow=True)

    def _propose(self) -> tuple[int, int] | None:
        if self._identified >= 0:
            return None
        if self._n_zero > 0:
            j = self._first_free()
            if j is None:
                return None  # the initial sweep is out; the gradient needs every mean
            arm, m = divmod(j, self._Mu)
            return arm, m + self._off
        self._tentative = self._step()
        return self._tentative.arm, self._tentative.fidelity

    def _on_issue(self, arm: int, fidelity: int) -> None:
        if self._n_zero == 0 and self._identified < 0:
            step = self._tentative
            if step is None or (step.arm, step.fidelity) != (arm, fidelity):
                step = self._step()  # after a restore: recompute (deterministic)
            self._commit(step)
        self._tentative = None
        self._pend(arm, fidelity - self._off, +1)

    def _pend(self, arm: int, m: int, d: int) -> None:
        self._pending[arm, m] += d
        self._NPT[m, arm] += d
        self._tot += d

    def _on_give_back(self, arm: int, fidelity: int) -> None:
        self._tentative = None
        m = fidelity - self._off
        self._pend(arm, m, -1)
        if self._counts[arm, fidelity] == 0 and self._pending[arm, m] == 0:
            self._free_ptr = min(self._free_ptr, arm * self._Mu + m)

    def _claim(self, arm: int, fidelity: int) -> bool:
        # an adopted pull in the working fidelities is tracked like our own (no gradient step)
        self._tentative = None
        if fidelity < self._off:
            return False
        self._pend(arm, fidelity - self._off, +1)
        return True

    # ----------------------------------------------------------------------------- observations
    def _told(self, rows: np.ndarray) -> None:
        """Refresh N, x of `rows` from the shared statistics after their tells."""
        sl = self._sl
        self._N[rows] = self._counts[rows, sl]
        with np.errstate(divide="ignore", invalid="ignore"):
            self._x[rows] = self._sums[rows, sl] / self._N[rows]
        if self._ir is not None:
            self._ir.set_rows(rows, x=self._x[rows])

    def _observe(self, arm: int, fidelity: int, value: float) -> None:
        self._tentative = None
        m = fidelity - self._off
        self._pending[arm, m] -= 1  # N + pending is unchanged
        n = self._N[arm, m] = float(self._counts[arm, fidelity])
        self._x[arm, m] = self._sums[arm, fidelity] / n
        if self._ir is not None:
            self._ir.set_rows([arm], x=self._x[arm])
        if self._n_zero and self._counts[arm, fidelity] == 1:
            self._n_zero -= 1
            if self._n_zero == 0:
                self._sweep_done()
        self._check_stop(arm)

    def _observe_batch(self, arms: np.ndarray, fidelities: np.ndarray, values: np.ndarray) -> None:
        self._tentative = None
        np.subtract.at(self._pending, (arms, fidelities - self._off), 1)
        rows = np.unique(arms)
        self._told(rows)
        if self._n_zero:
            self._n_zero = int(np.count_nonzero(self._counts[:, self._sl] == 0))
            if self._n_zero == 0:
                self._sweep_done()
        self._check_stop(rows)

    def _sweep_done(self) -> None:
        """Every pair has a sample. With `warm_start`, the exponential weights get the prior
        `½ ω*(µ̃) + ½ uniform`, `ω*` the optimal cost proportions of the plug-in model `µ̃` (the
        empirical means projected on the model, :func:`mf_sched.sim.tight_bound.tight_lower_bound`)."""
        if not self.warm_start or self.n_arms < 2:
            return
        N, x = self._means()
        proj = project(N, x, self._z, self.sigma)
        plug = alternative_means(x, self._z, proj.lo[:, None])
        try:
            opt = tight_lower_bound(plug, self._lam, self._z, self.delta, sigma=self.sigma, tol=1e-4).cost_proportions
        except ValueError:  # tied plug-in leaders: no lower bound, keep the uniform start
            return
        self._log_prior = np.log(0.5 * opt + 0.5 / opt.size)

    def _observe_extra(self, arm: int, fidelity: int, value: float) -> None:
        """A sample outside the working fidelities (GRAD): kept in the shared statistics only."""

    def _check_stop(self, rows: Any) -> None:
        """The stopping rule after the tells of `rows` (arms)."""
        if self._identified >= 0 or self._n_zero > 0:
            return
        N, x = self._N, self._x
        beta = self.beta(N.sum())
        ub = self._glr_ub
        # the exact statistic is needed only once a cheap upper bound (kept up to date row by row from the
        # last exact solution) reaches the threshold: the same stopping time as evaluating it after every
        # sample, at O(K) per sample instead of a full solve
        if ub is not None:
            ub.update(rows)
            if ub.value() < beta:
                return
        r = best_response(N, x, self._z, self.sigma, check=False)
        self._glr_ub = ResponseUpperBound(N, x, self._z, self.sigma, r)
        if r.value >= beta:
            self._identified = int(r.answer)

    def statistic(self) -> tuple[float, int] | None:
        """The current GLR statistic `Z` and its answer, or None before every pair has a sample."""
        if self._n_zero > 0:
            return None
        N, x = self._means()
        r = best_response(N, x, self._z, self.sigma, check=False)
        return float(r.value), int(r.answer)

    def beta(self, t: float) -> float:
        """The stopping threshold `β(t, δ)` after `t` samples.

        Args:
            t: the number of samples in the statistic (values below 1 count as 1).
        """
        return float(glr_threshold(max(float(t), 1.0), self.delta, self.n_arms, self._Mu, self.threshold))

    # ----------------------------------------------------------------------------- answers
    def _is_done(self) -> bool:
        return self._identified >= 0

    def _recommend(self) -> Recommendation:
        """The identified arm (certified); before that, the answer of the current GLR statistic."""
        details: dict[str, Any] = {"gradient_steps": self._n_grad}
        if self._identified >= 0:
            arm, certified, reason = self._identified, True, "identified"
        else:
            stat = self.statistic()
            if stat is None:
                return self._empirical_recommendation(certified=False, reason=self._default_reason(), **details)
            details["glr"] = stat[0]
            arm, certified, reason = stat[1], False, self._default_reason()
        return self._answer(arm, certified=certified, reason=reason, details=details)

    @property
    def cost_proportions(self) -> np.ndarray:
        """The current iterate `ω̃` (K×M; zero outside the working fidelities): the share of the cost
        the sampling rule currently aims to spend on each (arm, fidelity)."""
        out = np.zeros((self.n_arms, self.M))
        out[:, self._sl] = self._omega
        return out

    def _describe(self) -> dict[str, Any]:
        N = self._counts[:, self._sl]
        t = float(N.sum())
        stat = self.statistic()
        return {
            "glr": None if stat is None else stat[0],
            "threshold": self.beta(t) if t >= 1 else None,
            "gradient_steps": self._n_grad,
            "initialising": self._n_zero > 0,
            "pending": int(self._pending.sum()),
        }


class _Step(NamedTuple):
    """A gradient step computed by :meth:`MFGrad._step` and committed when its pull is issued."""

    arm: int
    fidelity: int
    rows: list[int]
    G_rows: np.ndarray
    ET: np.ndarray
    RT: np.ndarray
    sumE: float
    sumR: float
    C: float
    emax: float
    cum: np.ndarray
    n: int
    full: bool
