"""MF-UCB: the multi-fidelity upper confidence bound of Kandasamy et al. (2016).

Paper: K. Kandasamy, G. Dasarathy, J. Schneider, B. Póczos, *The Multi-fidelity Multi-armed Bandit*,
NeurIPS 2016 (arXiv 1610.09726), Algorithm 1 (MF-UCB), Eqs. 3–4. Objective: cumulative regret under a
capital Λ (pass it as `budget`), Eq. 1: `R(Λ) = Λ µ⋆ − Σ_{t≤N} λ(m_t) µ_{I_t}` (the simulator
reports it as :attr:`~mf_sched.sim.simulate.RunResult.regret_kandasamy`, and
:func:`~mf_sched.sim.simulate.regret_curve` gives it at every capital from one run).

At round `t` (`t = 1, 2, …` counts plays at any fidelity) with `T_k^(m)` plays of arm `k` at
fidelity `m` and their mean `X̄_k^(m)`:

1. every arm gets the index (Eq. 3) `B_k = min_m B_k^(m)`,
   `B_k^(m) = X̄_k^(m) + ψ⁻¹(ρ log t / T_k^(m)) + ζ(m)` (`+∞` when `T_k^(m) = 0`), an upper bound
   on `µ_k^(M)` from each fidelity, the tightest one kept; `I_t = argmax_k B_k`;
2. the fidelity is the first `m` whose width is still at least `γ(m)`:
   `m_t = min{m : ψ⁻¹(ρ log t / T_{I_t}^(m)) ≥ γ(m) or m = M}`, computed in the equivalent count form
   `T_{I_t}^(m) ≤ ρ log t / ψ(γ(m))` (ψ is increasing);
3. the switching thresholds are Eq. 4, `γ(m) = ψ⁻¹((λ(m)/λ(m+1)) ψ(ζ(m)))`
   (:func:`mf_sched.confidence.mfucb_gamma`; `√(λ(m)/λ(m+1)) ζ(m)` for the quadratic ψ below), or
   the `gamma` argument (the appendix analyses MF-UCB for any `γ > 0`).

`ψ(ε) = ε²/(2σ²)` with the noise model's σ (:func:`mf_sched.confidence.psi`): Gaussian rewards use
their σ, rewards in [0, 1] (Bernoulli) σ = ½, i.e. Hoeffding's `2ε²`. `ρ = 2` by default, the value
of the paper's experiments; the theory needs `ρ > 4` (Theorem 2; `ρ > 2` for Lemmas 5–9).

Consequence used by the tests (proof of Lemma 8): fidelity `ℓ < M` is chosen for arm `k` only while
`T_k^(ℓ) ≤ ρ log t / ψ(γ(ℓ))`, so after `n` plays `T_k^(ℓ) ≤ ⌊ρ log n / ψ(γ(ℓ))⌋ + 1`
deterministically (:func:`mf_sched.sim.regret_bounds.mfucb_low_fidelity_caps`).

Resolutions of what the paper leaves open (Algorithm 1 in §3 does not fix them):

* `t` is 1-based and counts plays at any fidelity; the index and the switching rule at round `t` use
  `log t` and the counts after `t − 1` plays. An unplayed (arm, fidelity) has width `+∞`, so
  `0/0` is never evaluated and the first `K` plays are one fidelity-1 play per arm.
* Ties in `argmax` (all `+∞` at the start) are broken uniformly at random with the policy's seeded
  generator.
* Every sample of `(k, m)` enters `X̄_k^(m)`, adopted ones included (`sample_agnostic`).
* ζ need not be strictly decreasing here (the paper assumes it): the algorithm is well defined for any
  ζ ≥ 0; a `ζ(m) = 0` below `M` gives `γ(m) = 0` and that fidelity is never left, as Eq. 4 says.
  The theory's regularity condition is reported by :func:`mf_sched.sim.regret_bounds.mfucb_analysis`.
* The paper defines no recommendation (only regret). :meth:`recommendation` returns, as an extension, the
  arm played most often at the highest fidelity (ties: higher mean there), which is where MF-UCB puts
  its Ω(n) plays of the optimum.
* A pull that is given back is handed out again next (the state is as before it was issued).

Parallel workers (a choice, not in the paper): with pulls outstanding, `t − 1` counts issued pulls
(told + outstanding) and the widths and the switching rule use told + outstanding counts (as if the
pending pulls had already shrunk their intervals); the means use told samples only. An arm whose only
plays are still outstanding waits for its first result (index `−∞`). W workers therefore spread over
arms and fidelities instead of all pulling the current leader, and the deterministic cap above still
holds with `n` = issued pulls. With one worker this is exactly Algorithm 1.

Cost per decision: the arms' indices `B_k = min_m(a + c √log t)` (cached `a = X̄ + ζ` and
`c = σ √(2ρ / T)`) sit in a kinetic tournament (:mod:`mf_sched._kinetic`): a pull updates one arm in
O(M + log K), the growth of `√log t` re-decides only the comparisons whose certificate expires, and the
argmax with its ties is exactly that of recomputing every index (tested side by side).

Example (`M = 2`, `ζ = (0.2, 0)`, `λ = (1, 10)`, so `2γ(1) = 0.1265` by Eq. 4): the bad arm is
dropped on cheap plays.

    >>> from mf_sched import FidelityLadder, Instance, run_policy
    >>> inst = Instance([[0.4, 0.5], [0.8, 0.9]], FidelityLadder([1.0, 10.0], [0.2, 0.0]),
    ...                 {"kind": "gaussian", "sigma": 1.0})
    >>> p = MFUCB(n_arms=2, ladder=inst.ladder, noise=inst.policy_noise, budget=20_000, seed=0)
    >>> r = run_policy(p, inst, seed=0)
    >>> p.recommendation().arm, int(p.counts[0, 1])  # never paid λ(2) = 10 for the bad arm
    (1, 0)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mf_sched._kinetic import KineticMax, LeafModel
from mf_sched._validate import check_real
from mf_sched.confidence import mfucb_gamma, psi
from mf_sched.ladder import FidelityLadder
from mf_sched.policy import Policy, Recommendation, argmax_random
from mf_sched.registry import register


@register
class MFUCB(Policy):
    """MF-UCB (Kandasamy et al. 2016, Algorithm 1): optimistic index over fidelities, climb when a
    fidelity's width falls below γ(m).

    Args:
        n_arms: see :class:`~mf_sched.policy.Policy`.
        ladder: see :class:`~mf_sched.policy.Policy`.
        **kwargs: `noise`, `budget` (the capital Λ; MF-UCB never uses it in its decisions (it is anytime) and stops
            when the next play would exceed it), `seed`; see :class:`~mf_sched.policy.Policy`.
        rho: exploration constant ρ > 0 (default 2, as in the paper's experiments; theory: ρ > 4).
        gamma: the `M − 1` switching thresholds γ(1..M−1) ≥ 0; default Eq. 4. Not the ladder's
            `gamma` (Poiani et al.'s bias spread, used by IISE-γ), which MF-UCB ignores.
    """

    name = "mf-ucb"
    paper = "Kandasamy, Dasarathy, Schneider, Póczos 2016 (NeurIPS), The Multi-fidelity Multi-armed Bandit, Alg. 1"
    objective = "regret"
    summary = "MF-UCB: index = min over fidelities of mean + width + zeta; move up once the width is below gamma"
    sample_agnostic = True
    _state_attrs = ("_pending", "_redo")

    def __init__(
        self,
        n_arms: int,
        ladder: FidelityLadder,
        *,
        rho: float = 2.0,
        gamma: Sequence[float] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(n_arms, ladder, **kwargs)
        self.rho = check_real("rho", rho, gt=0.0, accepted="a finite number > 0 (theory: > 4)")
        M = self.M
        if gamma is None:
            g = mfucb_gamma(self._costs, self._zeta, self.sigma)
        else:
            try:
                g = np.asarray(gamma, dtype=float).ravel()
            except (TypeError, ValueError):
                raise ValueError(f"gamma must be {M - 1} numbers >= 0, got {gamma!r}") from None
            if g.size != M - 1:
                raise ValueError(f"gamma has {g.size} values; accepted: M - 1 = {M - 1} (one per fidelity below M)")
            if not (np.all(np.isfinite(g)) and (g.size == 0 or g.min() >= 0)):
                raise ValueError(f"gamma = {g.tolist()} is out of range; accepted: finite numbers >= 0")
        self.gamma = g
        self._set_config(rho=self.rho, gamma=None if gamma is None else g.tolist())
        # ρ / ψ(γ(m)): fidelity m < M is played while T^(m) <= this · log t (+inf when γ(m) = 0)
        pg = psi(g, self.sigma)
        with np.errstate(divide="ignore"):
            self._thr = np.where(pg > 0, self.rho / np.where(pg > 0, pg, 1.0), np.inf)
        self._width_coef = self.sigma * math.sqrt(2.0 * self.rho)  # ψ⁻¹(ρ log t / n) = this · √(log t / n)
        self._pending = np.zeros((self.n_arms, M), dtype=np.int64)
        self._redo: list[list[int]] = []
        self._after_load()

    # ----------------------------------------------------------------------------- caches
    def _after_load(self) -> None:
        # caches (K × M), rebuilt after a restore: a = X̄ + ζ (+inf without a told sample),
        # c = σ√(2ρ/(told + pending)) (0 without a told sample, where a already rules the cell out);
        # per-arm told / issued totals; total issued plays; thresholds as Python floats for step 2
        n = self._counts
        eff = n + self._pending
        with np.errstate(divide="ignore", invalid="ignore"):
            self._a = np.where(n > 0, self._sums / np.maximum(n, 1) + self._zeta[None, :], np.inf)
            self._c = np.where(n > 0, self._width_coef / np.sqrt(np.maximum(eff, 1)), 0.0)
        self._told_arm = n.sum(axis=1)
        self._eff_arm = eff.sum(axis=1)
        self._plays = int(eff.sum())
        self._n_pending = int(self._pending.sum())
        self._thr_list = [float(x) for x in self._thr]
        self._tree = KineticMax(self.n_arms, _MFUCBLeaves(self._index_lines, self.n_arms), s=self._sqrt_log_t())

    def _index_lines(self, k: int) -> tuple[tuple[tuple[float, float], ...], Any]:
        """Arm `k`'s index as lines `(a_km, c_km)` over the fidelities with a told sample, with the
        kinetic tournament's signature (see :class:`_MFUCBLeaves`)."""
        if self._told_arm[k] == 0:
            if self._eff_arm[k] > 0:
                return ((-math.inf, 0.0),), "waiting"
            return ((math.inf, 0.0),), "untouched"
        lines = tuple((a, c) for a, c in zip(self._a[k].tolist(), self._c[k].tolist()) if a != math.inf)
        return lines, lines

    def _refresh(self, arm: int, fid: int) -> None:
        n = int(self._counts[arm, fid])
        if n > 0:
            eff = n + int(self._pending[arm, fid])
            self._a[arm, fid] = self._sums[arm, fid] / n + self._zeta[fid]
            self._c[arm, fid] = self._width_coef / math.sqrt(eff)

    def _issued(self, arm: int, fid: int, d: int) -> None:
        self._pending[arm, fid] += d
        self._eff_arm[arm] += d
        self._plays += d
        self._n_pending += d
        self._refresh(arm, fid)
        self._tree.update(arm)

    def _sqrt_log_t(self) -> float:
        """`√(log t)`, the factor of every width at the current round (the tree's parameter)."""
        return math.sqrt(math.log(self._plays + 1))

    # ----------------------------------------------------------------------------- the algorithm
    @property
    def t(self) -> int:
        """The current round `t` (1-based): plays issued so far (told + outstanding) plus one."""
        return self._plays + 1

    def index(self) -> np.ndarray:
        """`B_k` of Eq. 3 for every arm at the current round (`+inf` for untouched arms, `−inf` for
        arms whose only plays are still outstanding)."""
        return self._index().copy()

    def _index(self) -> np.ndarray:
        B = np.min(self._c * self._sqrt_log_t() + self._a, axis=1)
        if self._n_pending:
            B[(self._told_arm == 0) & (self._eff_arm > 0)] = -np.inf
        return B

    def fidelity_for(self, arm: int) -> int:
        """Step 2 of Algorithm 1 for `arm` at the current round (0-based fidelity).

        Args:
            arm: the arm, an integer in `0 .. K − 1`.
        """
        logt = math.log(self._plays + 1)
        cnt, pend = self._counts, self._pending
        for m, thr in enumerate(self._thr_list):
            T = int(cnt[arm, m]) + int(pend[arm, m])
            if T == 0 or thr == math.inf or T <= thr * logt:
                return m
        return self.M - 1

    def _propose(self) -> tuple[int, int] | None:
        if self._redo:
            a, f = self._redo[0]
            return a, f
        tree = self._tree
        tree.set_s(self._sqrt_log_t())
        count, arm = tree.top()
        if tree.top_value() == -np.inf:  # every arm waits for its first result (W > K): spread the load
            arm = argmax_random(-self._eff_arm.astype(float), self._rng)
        elif count > 1:  # ties broken uniformly at random, in arm order (as argmax_random)
            arm = tree.select(int(self._rng.integers(count)))
        return arm, self.fidelity_for(arm)

    def _on_issue(self, arm: int, fidelity: int) -> None:
        if self._redo and self._redo[0] == [arm, fidelity]:
            self._redo.pop(0)
        self._issued(arm, fidelity, +1)

    def _on_give_back(self, arm: int, fidelity: int) -> None:
        self._issued(arm, fidelity, -1)
        self._redo.append([arm, fidelity])

    def _observe(self, arm: int, fidelity: int, value: float) -> None:
        # the shared statistics already hold the sample; it moves from pending to told
        self._pending[arm, fidelity] -= 1
        self._n_pending -= 1
        self._told_arm[arm] += 1
        self._refresh(arm, fidelity)
        self._tree.update(arm)

    def _is_done(self) -> bool:
        return False

    def _recommend(self) -> Recommendation:
        top = self._counts[:, -1]
        if top.max() == 0:
            return self._empirical_recommendation(certified=False, reason=self._default_reason(), rule="empirical")
        with np.errstate(divide="ignore", invalid="ignore"):
            mu = np.where(top > 0, self._sums[:, -1] / np.maximum(top, 1), -np.inf)
        arm = int(np.lexsort((-mu, -top))[0])  # most plays at M, then the higher mean
        return self._answer(
            arm, details={"rule": "most plays at the highest fidelity (extension: the paper has no recommendation)"}
        )

    def _describe(self) -> dict[str, Any]:
        return {"t": self.t, "plays_per_fidelity": self._counts.sum(axis=0).tolist(), "gamma": self.gamma.tolist()}


class _MFUCBLeaves(LeafModel):
    """MF-UCB's index as the kinetic tournament's leaves: `min_m (a_km + c_km s)` with `s = √log t`,
    over the fidelities with a told sample; `+inf` for untouched arms, `−inf` for arms whose only
    plays are outstanding. `index_lines(k)` gives arm `k`'s `(lines, signature)`."""

    def __init__(self, index_lines: Callable[[int], tuple[tuple[tuple[float, float], ...], Any]], n_arms: int) -> None:
        self.index_lines = index_lines
        self.last: list[tuple[tuple[float, float], ...]] = [((math.inf, 0.0),)] * n_arms  # as last loaded

    def lines(self, k: int) -> tuple[tuple[tuple[float, float], ...], Any]:
        lines, sig = self.index_lines(k)
        self.last[k] = lines
        return lines, sig

    def exact(self, k: int, s: float) -> float:
        # the index's own arithmetic: fl(fl(c · s) + a), minimised over the fidelities
        return min(c * s + a for a, c in self.last[k])
