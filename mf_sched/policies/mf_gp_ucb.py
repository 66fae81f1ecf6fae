"""MF-GP-UCB: GP bandit optimisation with multi-fidelity evaluations, over a continuous search space.

Paper: K. Kandasamy, G. Dasarathy, J. Oliva, J. Schneider, B. Póczos, *Gaussian Process Bandit
Optimisation with Multi-fidelity Evaluations*, NeurIPS 2016 — Algorithm 1 (theory) and the practical
version of Appendix B ("More Implementation Details") with the heuristics of the authors' released
code (`kirthevasank/mf-gp-ucb`). Only the
appendix text was available; where it is silent we follow the code and say so.

**Model.** One independent GP per fidelity `m` (0-based here; the paper counts `1..M`), each
conditioned only on that fidelity's data `D^(m)` and with its own hyper-parameters (App. D.1). The
upper confidence bound on the target `f^(M)` that fidelity `m` provides, and the combined bound
(notation table, App. A.1):

```text
φ_t^(m)(x) = µ_{t−1}^(m)(x) + β_t^{1/2} σ_{t−1}^(m)(x) + ζ^(m)        φ_t(x) = min_m φ_t^(m)(x)
```

**Iteration t.** `x_t = argmax_x φ_t(x)` (DIRECT, then an L-BFGS-B polish of the float coordinates);
`m_t` = the first `m < M` with `β_t^{1/2} σ_{t−1}^(m)(x_t) ≥ γ^(m)`, else `M` (Algorithm 1 step 2;
Fig. 6 caption). `β_t = 0.2·d·log(2t)` (App. B, "Choice of β_t"; `t` counts iterations after the
initialisation, ζ-check queries excluded).

**Practice (App. B + code).** Initialisation capital `Λ_0` (default `10·λ^(M)`, code) spent on a
design at fidelities 1 and 2 (code counts: `n_2 = ⌊Λ_0/(2λ^(M))⌋`, `n_1 = min(200, 10·M·d,
⌊(Λ_0 − n_2 λ^(2))/λ^(1)⌋)`, `n_2 ← min(n_1, n_2)`, the fidelity-2 points are the first `n_2` of
the fidelity-1 points); GP-UCB spends it at fidelity `M` (`⌊Λ_0/λ^(M)⌋` points). From the initial
values `Y_0` (range `r`): a constant prior mean `max Y_0 + 2r` for every GP, noise variance
`η² = 10⁻⁴ var Y_0`, `γ^(m) = 0.01 r`, `ζ^(m) = 0.01 r·(M − m)`. Hyper-parameters are refitted by
maximising the marginal likelihood after the initialisation and then every 25 iterations, fidelity by
fidelity; a fidelity with fewer than `min(10, n_{m−1})` points copies the one below. Adaptation
(code): after `λ^(m+1)/λ^(m)` consecutive iterations below fidelity `M` ending at `m`,
`γ^(m) ← 5γ^(m)` and every `γ` is raised to at least that; when a fidelity-`m` value `y` differs from
`µ^(m−1)(x)` by more than `0.9 (ζ^(m−1) − ζ^(m))`, `f^(m−1)(x)` is queried too (a *ζ-check*, not an
iteration) and if `y − y' > 0.9 (ζ^(m−1) − ζ^(m))` that increment becomes `2 (y − y')`, every increment is
raised to at least it, and `ζ` is their cumulative sum.

Resolved ambiguities (Kandasamy et al.'s text first, then their released code):

1. `β_t`: paper `0.2 d log(2t)` (default) vs code `0.2 d log(2dt)` (`beta="code"`). `d` is the
   encoded dimension `D` of the search space (one-hot categoricals count one per choice).
2. Initial ζ: paper "1% of the range", code 0 → `ζ^(m) = 0.01 r (M − m)` (strictly decreasing, as the
   code's structure). `zeta="ladder"` uses the ladder's ζ instead, fixed (Algorithm 1's known ζ).
3. γ increase: the code's ×5 with one counter of consecutive sub-`M` iterations (`gamma_factor`);
   the main text's factor is not available.
4. ζ increase: the code's signed gap, slack 0.9 and doubling (`zeta_factor`); its rounding of ζ and γ
   up to 10⁻⁴ is dropped (scale dependent).
5. Initialisation: the code's counts (the text's "Λ_0/2 at fidelity 1 and Λ_0/2 at fidelity 2" would
   give 5,000 fidelity-1 points on Hartmann-6); design `"random"` (the text's "uniform random",
   default), `"kmeans"` (the code: k-means++ centroids of `max(200, 10n)` uniform candidates) or
   `"lhs"`.
6. Kernel hyper-parameter box (code): bandwidth `h ∈ √d·[10⁻³, 10]` in the unit cube; the code bounds
   the signal variance by `[1, 10]·r` — a variance in units of `y` — which is not scale-invariant; we
   work in `y' = (y − prior mean)/r` and bound it by `[1, 10]` there (identical when `r = 1`).
   Hyper-parameter search: DIRECT with 200 evaluations on the log-box (code) + an L-BFGS-B polish.
7. The code's "perturb `x_t` if it is within 10⁻⁴h of a data point" step is a no-op there and is
   omitted; a proposal that coincides exactly with an evaluated point re-uses its arm.
8. Costs and the budget: the capital `Λ` is `budget`; the initialisation counts toward it (code).
   Unlike the code's loop, which may overshoot `Λ` by one query, no pull is issued that would exceed it.
9. The acquisition budget is the code's `⌈7·min(5, d)²·√min(t, 1000)⌉` DIRECT evaluations
   (`locally_biased=False`, `eps = 10⁻⁴`), then the polish (`polish=False` turns it off).

**The rules as functions.** The decision rules are pure functions the policy calls, for use and checks on
their own: :func:`fidelity_rule` (`m_t` from the widths `β_t^{1/2}σ^(m)(x_t)` and `γ`),
:func:`gamma_update` and :func:`zeta_update` (the adaptations of items 3 and 4). They live, with the
initialisation rules of items 2, 5 and 6, in `mf_sched.policies._mf_gp_ucb_rules`. The policy's current values
are :attr:`MFGPUCB.gamma_current` and :attr:`MFGPUCB.zeta_current`; its output normalisation
:attr:`MFGPUCB.prior_mean` and :attr:`MFGPUCB.y_scale`. The initial design, the acquisition optimiser and the
GP-BUCB step are :mod:`mf_sched.continuous.acquisition`; the GPs are :mod:`mf_sched.continuous.gp`.

**Search space and arms.** The policy owns a table of points (encoded in `[0, 1]^D`, see
:mod:`mf_sched.continuous.space`; the table, and the book of queued, pending and told pulls, are those of its
base class `PointPolicy` in `mf_sched.policies._point_policy`); `Pull.arm` indexes it and
:meth:`MFGPUCB.point` decodes it (floats, ints, categoricals). `n_arms` caps the number of distinct points
(default: what the budget can pay for at the cheapest fidelity used, at most 2,000); when the table is full the
policy is done (`"exhausted"`).
Integer and categorical coordinates are handled by snapping (:meth:`SearchSpace.snap`) inside the
acquisition function; only float coordinates are polished.

**Parallel workers** (not in the paper). With pulls outstanding, the next proposal conditions every
fidelity's GP on its pending points with their posterior mean as the observation (GP-BUCB,
Desautels, Krause and Burdick 2014): means are unchanged, the posterior standard deviation at and
around pending points shrinks, so `W` workers spread out instead of repeating `x_t`; `t` counts
issued iterations. The initialisation is handed out at once (every design pull may run in parallel)
and the first iteration waits for all of it. γ/ζ adaptation and refits happen in the order results
are told; a ζ-check compares with the lower fidelity's posterior mean at the time of the tell. With
one worker this is exactly the sequential algorithm.

**Other protocol details.** Every observation (extras from :meth:`adopt` / :meth:`adopt_point`
included) enters its fidelity's GP (`sample_agnostic`). An adopted pull fills a slot only when it
matches a queued initial or ζ-check pull. A given-back iteration is proposed afresh (an exactly
equal point re-uses its arm); given-back initial or ζ-check pulls are queued again. The
recommendation is the point with the best mean observed value **at fidelity M** (the paper's simple
regret `S(Λ)`); lower-fidelity values are never recommended. Hyper-parameter fits are deterministic
(no random restarts), and the policy's random generator only draws the initial design, so state
round-trips are exact and decisions are deterministic given the seed and the call sequence.

Needs scikit-learn (`pip install 'mf-sched[gp]'`), imported when the first GP is fitted.

Example:
    >>> from mf_sched.continuous.functions import get_function
    >>> f = get_function("currin")
    >>> policy = MFGPUCB(f.space, f.ladder, budget=150, seed=0, acq_maxfun=200)
    >>> while not policy.done:
    ...     pull = policy.ask()
    ...     policy.tell(pull, f(policy.x(pull), pull.fidelity))
    >>> rec = policy.recommendation()
    >>> sorted(rec.details["params"])
    ['x0', 'x1']
    >>> bool(f.f_star - rec.details["value"] < 0.5)
    True
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from mf_sched._validate import check_int
from mf_sched.continuous import gp as _gp
from mf_sched.continuous.acquisition import (
    DESIGNS,
    condition_on_pending,
    direct_budget,
    initial_design,
    maximize_acquisition,
)
from mf_sched.continuous.space import SearchSpace
from mf_sched.ladder import FidelityLadder
from mf_sched.noise import NoiseModel, SubGaussian
from mf_sched.policies._mf_gp_ucb_rules import (
    ZETA_SLACK,
    fidelity_rule,
    gamma_update,
    hyper_box,
    initial_counts,
    initial_scales,
    positive,
    zeta_update,
)
from mf_sched.policies._point_policy import PointPolicy, as_search_space
from mf_sched.policy import PolicyError, Recommendation
from mf_sched.registry import register

__all__ = ["MFGPUCB", "ROLE_NAMES", "fidelity_rule", "gamma_update", "zeta_update"]

ROLE_INIT, ROLE_MAIN, ROLE_CHECK, ROLE_EXTRA = 0, 1, 2, 3
#: names of the observation roles in :meth:`MFGPUCB.observations`
ROLE_NAMES = ("init", "iteration", "zeta-check", "extra")
#: default cap on the number of distinct points
DEFAULT_MAX_POINTS = 2000


@register
class MFGPUCB(PointPolicy):
    """MF-GP-UCB (Kandasamy et al. 2016) over a :class:`~mf_sched.continuous.space.SearchSpace`; see the module
    docstring for the algorithm and every choice made.

    Args:
        space: the search space (or its `to_dict()`).
        ladder: fidelity costs `λ(m)` (and `ζ(m)`, used only with `zeta="ladder"`).
        n_arms: cap on the number of distinct points (default: `budget / λ` of the cheapest fidelity
            used, at most 2,000; 2,000 without a budget).
        budget: the capital `Λ` (initialisation included). Without it the policy runs until the point
            table is full.
        seed: seed of the initial design.
        noise: only validates observations (default: any finite value; `Bounded(a, b)` rejects values
            outside `[a, b]`). The GP's noise is `noise_var`.
        init_capital: `Λ_0` (default `10·λ(M)`).
        init_design: `"random"` (paper), `"kmeans"` (code) or `"lhs"`.
        kernel: `"se"` (code: one bandwidth), `"se-ard"`, `"matern52"`, `"matern52-ard"`.
        beta: `"paper"` (`0.2 d log 2t`), `"code"` (`0.2 d log 2dt`) or a constant `β > 0`.
        refit_every: refit the hyper-parameters every this many iterations (paper: 25).
        noise_var: GP noise variance in units of `y²`: None (code: `10⁻⁴·var Y_0`), a number, or
            `"fit"` (a fitted white-noise term, for noisy objectives).
        zeta: `"adaptive"` (paper practice) or `"ladder"` (the ladder's ζ, fixed; no ζ-checks).
        gamma: initial thresholds `γ^(1..M−1)` in units of `y` (default `0.01·range Y_0`).
        gamma_factor: γ multiplier of the adaptation (code: 5; 1 disables it).
        zeta_factor: ζ-increment multiplier of the adaptation (code: 2).
        acq_maxfun: DIRECT evaluations per decision (default: the code's `⌈7 min(5,d)² √min(t,1000)⌉`).
        polish: polish DIRECT's optimum of the float coordinates with L-BFGS-B.
    """

    name = "mf-gp-ucb"
    paper = "Kandasamy, Dasarathy, Oliva, Schneider, Poczos 2016 (NeurIPS), MF-GP-UCB, Algorithm 1 + App. B"
    objective = "regret"
    summary = "GP-UCB bound min over fidelities; cheap fidelity until its uncertainty drops below gamma"
    sample_agnostic = True
    finite_armed = False
    #: GP-UCB (the subclass) works at the highest fidelity only
    single_fidelity: ClassVar[bool] = False

    _state_attrs = (
        "_X",
        "_n_points",
        "_obs_arm",
        "_obs_fid",
        "_obs_y",
        "_obs_role",
        "_queue",
        "_queue_y",
        "_pend",
        "_pend_y",
        "_initialised",
        "_y_center",
        "_y_scale",
        "_noise_scaled",
        "_theta",
        "_zeta_cur",
        "_gamma_cur",
        "_g_counter",
        "_t_issued",
        "_t_told",
        "_n_refits",
        "_prop_x",
    )
    _variable_shape = _state_attrs  # the data grow with every observation
    _optional_state = _state_attrs

    def __init__(
        self,
        space: SearchSpace | Mapping[str, Any],
        ladder: FidelityLadder,
        *,
        n_arms: int | None = None,
        budget: float | None = None,
        seed: int | None = None,
        noise: NoiseModel | Mapping[str, Any] | None = None,
        init_capital: float | None = None,
        init_design: str = "random",
        kernel: str = "se",
        beta: str | float = "paper",
        refit_every: int = 25,
        noise_var: float | str | None = None,
        zeta: str = "adaptive",
        gamma: Sequence[float] | None = None,
        gamma_factor: float = 5.0,
        zeta_factor: float = 2.0,
        acq_maxfun: int | None = None,
        polish: bool = True,
    ) -> None:
        space = as_search_space(space)
        if isinstance(ladder, Mapping):
            ladder = FidelityLadder.from_dict(ladder)
        if not isinstance(ladder, FidelityLadder):
            raise ValueError(f"ladder must be a FidelityLadder, got {type(ladder).__name__}")
        D = space.dim
        M = ladder.M
        self._fids = [M - 1] if (self.single_fidelity or M == 1) else list(range(M))
        costs = np.asarray(ladder.costs, dtype=float)

        # ---- initialisation counts (code rule; see the module docstring, item 5)
        lam0, n1, n2 = initial_counts(costs, D, init_capital, single_fidelity=len(self._fids) == 1)
        init_cost = n1 * (costs[-1] if len(self._fids) == 1 else costs[0]) + n2 * (costs[1] if n2 else 0.0)
        if budget is not None and init_cost > float(budget) * (1 + 1e-12):
            raise ValueError(
                f"init_capital: the initial design costs {init_cost:g} but budget = {budget}; lower init_capital "
                f"or raise the budget"
            )
        min_cost = float(costs[self._fids[0]])
        if n_arms is None:
            cap = DEFAULT_MAX_POINTS
            if budget is not None:
                cap = min(cap, int(math.floor(float(budget) / min_cost + 1e-9)))
            n_arms = max(cap, n1)
        n_arms = check_int("n_arms", n_arms, max(n1, 1))
        super().__init__(
            space, n_arms, ladder, noise=SubGaussian(1.0) if noise is None else noise, budget=budget, seed=seed
        )

        # ---- options
        if init_design not in DESIGNS:
            raise ValueError(f"init_design = {init_design!r}; accepted: {', '.join(DESIGNS)}")
        _gp.check_kernel(kernel)
        if isinstance(beta, str):
            if beta not in ("paper", "code"):
                raise ValueError(f"beta = {beta!r}; accepted: 'paper', 'code' or a number > 0")
        else:
            beta = positive("beta", beta)
        refit_every = check_int("refit_every", refit_every, 1)
        if isinstance(noise_var, str):
            if noise_var != "fit":
                raise ValueError(f"noise_var = {noise_var!r}; accepted: None, a number >= 0, or 'fit'")
        elif noise_var is not None:
            noise_var = positive("noise_var", noise_var, strict=False)
        if zeta not in ("adaptive", "ladder"):
            raise ValueError(f"zeta = {zeta!r}; accepted: 'adaptive', 'ladder'")
        gamma_list: list[float] | None = None
        if gamma is not None:
            gamma_list = [positive(f"gamma[{i}]", g) for i, g in enumerate(gamma)]
            if len(gamma_list) != M - 1:
                raise ValueError(f"gamma has {len(gamma_list)} entries; accepted: M − 1 = {M - 1} thresholds")
        gamma_factor = positive("gamma_factor", gamma_factor, 1.0, strict=False)
        zeta_factor = positive("zeta_factor", zeta_factor, 1.0, strict=False)
        if acq_maxfun is not None:
            acq_maxfun = check_int("acq_maxfun", acq_maxfun, 1)
        self.init_capital = lam0
        self.init_design = init_design
        self.kernel = kernel
        self.beta = beta
        self.refit_every = refit_every
        self.noise_var = noise_var
        self.zeta_mode = zeta
        self.gamma_init = gamma_list
        self.gamma_factor = gamma_factor
        self.zeta_factor = zeta_factor
        self.acq_maxfun = acq_maxfun
        self.polish = bool(polish)
        self._set_config(
            space=space.to_dict(),
            init_capital=init_capital,
            init_design=init_design,
            kernel=kernel,
            beta=beta,
            refit_every=refit_every,
            noise_var=noise_var,
            zeta=zeta,
            gamma=gamma_list,
            gamma_factor=gamma_factor,
            zeta_factor=zeta_factor,
            acq_maxfun=acq_maxfun,
            polish=self.polish,
        )
        self._bounds, default_theta = hyper_box(kernel, D, noise_var == "fit")

        # ---- state
        self._initialised = False
        self._y_center = 0.0
        self._y_scale = 1.0
        self._noise_scaled = 0.0
        self._theta = np.tile(default_theta, (M, 1))
        self._zeta_cur = np.zeros(M)
        self._gamma_cur = np.zeros(max(M - 1, 0))
        self._g_counter = 0
        self._t_issued = 0
        self._t_told = 0
        self._n_refits = 0
        self._prop_x = np.zeros(D)
        self._posts: list[_gp.Posterior | None] = [None] * M

        design = initial_design(space, n1, init_design, self._rng)
        arms = np.array([self._add_point(z) for z in design], dtype=np.int64)
        arms = arms[np.sort(np.unique(arms, return_index=True)[1])]  # snapped duplicates are evaluated once
        if len(self._fids) == 1:
            rows = [(a, M - 1) for a in arms.tolist()]
        else:
            rows = [(a, 0) for a in arms.tolist()] + [(a, 1) for a in arms[:n2].tolist()]
        self._queue = np.array([[a, f, ROLE_INIT] for a, f in rows], dtype=np.int64).reshape(-1, 3)
        self._queue_y = np.full(len(rows), np.nan)
        self._after_load()

    @property
    def fidelities_used(self) -> tuple[int, ...]:
        """The fidelities that have a GP of their own (all, or only the top one for a single-fidelity run)."""
        return tuple(self._fids)

    def gp_inputs(self, m: int) -> dict[str, Any]:
        """What fidelity `m`'s GP is fitted on, for checks and timings against a reference GP.

        Args:
            m: the 0-based fidelity, in `0 … M−1`.

        Returns:
            Copies of `X` (points in `[0, 1]^D`), `y` (values, centred and scaled as the GP sees them),
            `theta` (its log hyper-parameters) and `noise_var` (the noise variance in those units).
        """
        m = self.ladder.check_index(m)
        X, y = self._data(m)
        return {"X": X.copy(), "y": y.copy(), "theta": self._theta[m].copy(), "noise_var": self._noise_scaled}

    def refit(self) -> None:
        """Refit every used fidelity's hyper-parameters now (the policy does so itself every
        `refit_every` decisions); raises :class:`~mf_sched.policy.PolicyError` before the initial design
        is told."""
        if not self._initialised:
            raise PolicyError("refit needs the initial design told first")
        self._refit()

    @property
    def zeta_current(self) -> np.ndarray:
        """The current ζ per fidelity (units of `y`; zeros before the initialisation is told)."""
        return self._zeta_cur.copy()

    @property
    def gamma_current(self) -> np.ndarray:
        """The current switching thresholds `γ^(1..M−1)` (units of `y`)."""
        return self._gamma_cur.copy()

    @property
    def prior_mean(self) -> float:
        """The constant prior mean of every GP, in units of `y`: `max Y_0 + 2r` from the initial values
        `Y_0` with range `r` (App. B; 0 before the initial design is told). The GPs see
        `(y − prior_mean) / y_scale`.

        Example:
            >>> from mf_sched.continuous.functions import get_function
            >>> f = get_function("currin")
            >>> p = MFGPUCB(f.space, f.ladder, seed=0, init_capital=30.0)
            >>> pulls = p.ask_batch()  # 20 points at fidelity 0, one of them again at fidelity 1
            >>> p.tell_batch(pulls, [float(i) for i in range(len(pulls))])  # values 0 … 20: r = 20
            >>> p.prior_mean, p.y_scale, p.n_refits
            (60.0, 20.0, 1)
        """
        return float(self._y_center)

    @property
    def y_scale(self) -> float:
        """The unit of `y` the GPs work in: the range `r` of the initial values (`max(|max Y_0|, 1)` when
        they are all equal; 1 before the initial design is told)."""
        return float(self._y_scale)

    @property
    def n_refits(self) -> int:
        """How many times the hyper-parameters have been fitted (once when the initial design is in, then
        every `refit_every` iterations and at each :meth:`refit`)."""
        return int(self._n_refits)

    # ------------------------------------------------------------------ caches
    def _after_load(self) -> None:
        super()._after_load()
        self._posts = [None] * self.M

    def _post(self, m: int) -> _gp.Posterior:
        p = self._posts[m]
        if p is None:
            X, y = self._data(m)
            p = _gp.fit_posterior(X, y, kernel=self.kernel, theta=self._theta[m], noise_var=self._gp_noise())
            self._posts[m] = p
        return p

    def _data(self, m: int) -> tuple[np.ndarray, np.ndarray]:
        mask = self._obs_fid == m
        return self._X[self._obs_arm[mask]], (self._obs_y[mask] - self._y_center) / self._y_scale

    def _gp_noise(self) -> float | None:
        return None if self.noise_var == "fit" else self._noise_scaled

    def beta_t(self, t: int) -> float:
        """`β_t` (item 1 of the module docstring): `0.2·d·log(2t)` (`beta="paper"`), `0.2·d·log(2dt)`
        (`beta="code"`) or the constant given.

        Args:
            t: the iteration, 1-based (iterations after the initialisation; ζ-checks are not iterations).

        Returns:
            `β_t`; the confidence width is `β_t^{1/2} σ`.
        """
        if not isinstance(self.beta, str):
            return float(self.beta)
        D = self.space.dim
        return 0.2 * D * math.log(2.0 * t * (D if self.beta == "code" else 1.0))

    # ------------------------------------------------------------------ initialisation and refits
    def _finish_init(self) -> None:
        """The initial design is in: set the scales, noise, γ and ζ from its values (:func:`initial_scales`,
        unless given) and fit every GP."""
        center, rng, noise, gamma, zeta = initial_scales(self._obs_y, self.M)
        self._y_center, self._y_scale = center, rng
        if self.noise_var is None:
            self._noise_scaled = noise
        elif self.noise_var != "fit":
            self._noise_scaled = max(float(self.noise_var) / rng**2, 1e-10)
        self._gamma_cur = gamma if self.gamma_init is None else np.array(self.gamma_init, dtype=float)
        self._zeta_cur = np.asarray(self.ladder.zeta, dtype=float).copy() if self.zeta_mode == "ladder" else zeta
        self._initialised = True
        self._refit()

    def _refit(self) -> None:
        """Refit each used fidelity's hyper-parameters on its own data (App. D.1), lowest first; a fidelity
        with too little data copies the one below (code)."""
        prev_n = None
        for i, m in enumerate(self._fids):
            X, y = self._data(m)
            n = X.shape[0]
            if i > 0 and (n < 2 or n < min(10, prev_n)):
                self._theta[m] = self._theta[self._fids[i - 1]]
                self._posts[m] = None
            elif n >= 2:
                post = _gp.fit_posterior(
                    X,
                    y,
                    kernel=self.kernel,
                    theta=self._theta[m],
                    noise_var=self._gp_noise(),
                    bounds=self._bounds,
                    optimize=True,
                )
                self._theta[m] = post.theta
                # rebuilt from the stored theta on first use, exactly as after a state restore
                self._posts[m] = None
            prev_n = n
        self._n_refits += 1

    # ------------------------------------------------------------------ the acquisition
    def _scaled_zeta(self) -> np.ndarray:
        return self._zeta_cur / self._y_scale

    def _posteriors_with_pending(self) -> list[_gp.Posterior]:
        """Each used fidelity's posterior, conditioned on its pending points at their posterior mean."""
        out = []
        for m in self._fids:
            post = self._post(m)
            rows = self._pend[:, 1] == m
            if np.any(rows):
                X, y = self._data(m)
                post = condition_on_pending(
                    post,
                    X,
                    y,
                    self._X[self._pend[rows, 0]],
                    kernel=self.kernel,
                    theta=self._theta[m],
                    noise_var=self._gp_noise(),
                )
            out.append(post)
        return out

    def acquisition(self, Z: np.ndarray) -> np.ndarray:
        """`φ_t` (units of `y`) at the rows of `Z`, for the next iteration `t`, including the effect of
        pending pulls (for plots and diagnostics).

        Args:
            Z: encoded points, shape `(n, D)` or `(D,)`, in `[0, 1]^D`; they are snapped to the space first.

        Returns:
            `φ_t` at each point (shape `(n,)`).

        Raises:
            PolicyError: the initial design has not been told yet (there is no GP).
        """
        if not self._initialised:
            raise PolicyError("the acquisition is defined once the initial design has been told")
        Z = self.space.snap(np.atleast_2d(np.asarray(Z, dtype=float)))
        rb = math.sqrt(self.beta_t(self._t_issued + 1))
        zs = self._scaled_zeta()
        phi = np.full(Z.shape[0], np.inf)
        for m, post in zip(self._fids, self._posteriors_with_pending()):
            mu, sd = post.predict(Z)
            phi = np.minimum(phi, mu + rb * sd + zs[m])
        return phi * self._y_scale + self._y_center

    def _choose(self) -> tuple[np.ndarray, int]:
        t = self._t_issued + 1
        rb = math.sqrt(self.beta_t(t))
        posts = self._posteriors_with_pending()
        zs = self._scaled_zeta()[self._fids]

        def phi(z: np.ndarray) -> float:
            best = math.inf
            for post, zeta in zip(posts, zs):
                mu, sd = post.predict_one(z)
                v = mu + rb * sd + zeta
                if v < best:
                    best = v
            return best

        maxfun = self.acq_maxfun or direct_budget(t, self.space.dim)
        z, _ = maximize_acquisition(phi, self.space, maxfun=maxfun, polish=self.polish)
        return z, self._fidelity_rule(z, posts, rb)

    def _fidelity_rule(self, z: np.ndarray, posts: list[_gp.Posterior], rb: float) -> int:
        """`m_t` at `z` by :func:`fidelity_rule` (Algorithm 1, step 2), the widths and `γ` both in the
        GPs' units; a single-fidelity run always answers its one fidelity."""
        if len(self._fids) == 1:
            return self._fids[0]
        widths = [rb * posts[m].predict_one(z)[1] for m in range(self.M - 1)]
        return fidelity_rule(widths, self._gamma_cur / self._y_scale)

    # ------------------------------------------------------------------ protocol hooks
    def _propose(self) -> tuple[int, int] | None:
        if self._queue.shape[0]:
            return int(self._queue[0, 0]), int(self._queue[0, 1])
        if not self._initialised or self._n_points >= self.n_arms:
            return None
        z, m = self._choose()
        self._prop_x = z
        arm = self._index.get(z.tobytes(), self._n_points)
        return arm, m

    def _on_issue(self, arm: int, fidelity: int) -> None:
        if self._issue_queued(arm, fidelity):
            return
        if arm == self._n_points:
            self._add_point(self._prop_x.copy())
        self._push_pending(np.array([arm, fidelity, ROLE_MAIN]), np.nan)
        self._t_issued += 1

    def _on_give_back(self, arm: int, fidelity: int) -> None:
        role, y = self._pop_pending(arm, fidelity)
        if role == ROLE_MAIN:
            self._t_issued -= 1
        else:
            self._queue_front(arm, fidelity, role, y)

    def _append_obs(self, arm: int, fidelity: int, value: float, role: int) -> None:
        super()._append_obs(arm, fidelity, value, role)
        self._posts[fidelity] = None  # rebuilt with the new point on its next use

    def _observe(self, arm: int, fidelity: int, value: float) -> None:
        role, y_high = self._pop_pending(arm, fidelity)
        if role == ROLE_CHECK:
            self._zeta_update(fidelity, y_high, value)
        self._append_obs(arm, fidelity, value, role)
        if role == ROLE_INIT:
            if (
                not self._initialised
                and not np.any(self._queue[:, 2] == ROLE_INIT)
                and not np.any(self._pend[:, 2] == ROLE_INIT)
            ):
                self._finish_init()
        elif role == ROLE_MAIN:
            self._t_told += 1
            self._gamma_update(fidelity)
            self._zeta_check(arm, fidelity, value)
            if self._t_told % self.refit_every == 0:
                self._refit()

    def _observe_extra(self, arm: int, fidelity: int, value: float) -> None:
        self._append_obs(arm, fidelity, value, ROLE_EXTRA)

    def _gamma_update(self, m: int) -> None:
        """Code's γ heuristic by :func:`gamma_update` (module docstring, item 3); none in a single-fidelity run."""
        if len(self._fids) == 1:
            return
        self._gamma_cur, self._g_counter = gamma_update(
            self._gamma_cur, self._g_counter, m, self._costs, factor=self.gamma_factor
        )

    def _zeta_check(self, arm: int, m: int, y: float) -> None:
        """Queue `f^(m−1)(x)` when `y` disagrees with fidelity `m−1`'s posterior mean (item 4)."""
        if len(self._fids) == 1 or self.zeta_mode != "adaptive" or m == 0:
            return
        inc = self._zeta_cur[m - 1] - self._zeta_cur[m]
        mu, _ = self._post(m - 1).predict_one(self._X[arm])
        mu = mu * self._y_scale + self._y_center
        if abs(y - mu) > ZETA_SLACK * inc:
            self._queue_front(arm, m - 1, ROLE_CHECK, y)

    def _zeta_update(self, m: int, y_high: float, y_low: float) -> None:
        """A ζ-check result, by :func:`zeta_update` (item 4)."""
        self._zeta_cur = zeta_update(self._zeta_cur, m, y_high, y_low, factor=self.zeta_factor)

    def _is_done(self) -> bool:
        return self._initialised and self._queue.shape[0] == 0 and self._n_points >= self.n_arms

    def _recommend(self) -> Recommendation:
        top = self.M - 1
        n = self._counts[: self._n_points, top]
        reason = "exhausted" if self._is_done() else self._default_reason()
        if not np.any(n > 0):
            return self._answer(None, reason=reason)
        mean = np.where(n > 0, self._sums[: self._n_points, top] / np.maximum(n, 1), -np.inf)
        arm = int(np.argmax(mean))
        details = {"params": self.point(arm), "value": float(mean[arm]), "n_points": self._n_points}
        return self._answer(arm, reason=reason, details=details)

    def _describe(self) -> dict[str, Any]:
        return {
            "initialised": self._initialised,
            "t": self._t_issued,
            "n_points": self._n_points,
            "zeta": self._zeta_cur.tolist(),
            "gamma": self._gamma_cur.tolist(),
            "refits": self._n_refits,
            "per_fidelity": np.bincount(self._obs_fid, minlength=self.M).tolist(),
        }
