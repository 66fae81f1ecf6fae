"""UCB1 at a single fidelity (Auer, Cesa-Bianchi, Fischer 2002).

Paper: P. Auer, N. Cesa-Bianchi, P. Fischer, *Finite-time Analysis of the Multiarmed Bandit Problem*,
Machine Learning 47 (2002), Figure 1 (UCB1): play each arm once, then the arm maximising
`x̄_j + √(2 ln n / n_j)` for rewards in [0, 1]; generalised to σ-sub-Gaussian rewards as
`µ̂_j + 2σ √(2 ln n / n_j)` (:func:`mf_sched.confidence.ucb1_bonus`; σ = 1/2 recovers the paper).
`n` is the number of plays so far.

`rho` (optional) turns the bonus into the ψ-UCB width of Bubeck & Cesa-Bianchi (2012, §2.2), the
single-fidelity UCB that Kandasamy et al. (2016) compare MF-UCB with:
`µ̂_j + ψ⁻¹(ρ ln n / n_j) = µ̂_j + σ √(2ρ ln n / n_j)` (:func:`mf_sched.confidence.psi_ucb_width`).
`ρ = 4` is UCB1 itself; Kandasamy et al.'s experiments run both UCB and MF-UCB with `ρ = 2`, so a
like-for-like comparison passes `rho=2` to both.

It is the single-fidelity baseline of the regret papers (Kandasamy et al. 2016 compare MF-UCB with
UCB at the highest fidelity; Wang et al. 2023 §4). Objective: cumulative regret under a cost budget
(the capital Λ); pass `budget`. It never stops by itself.

Parallel workers (a choice, not in the paper): with pulls outstanding, the exploration bonus uses the
count of told *plus* outstanding pulls (as if pending pulls had already shrunk the interval), so W
workers spread over arms instead of all pulling the current leader; an arm whose only pulls are still
outstanding waits for its first result. With one worker this is exactly UCB1.

Every sample of an arm at the working fidelity (adopted extras included) enters its mean.
A given-back pull is handed out again before any new decision (the same arm: "the work" of a
failed evaluation is redone rather than re-decided, which would depend on random tie-breaking).

Cost per decision: the indices sit in a kinetic tournament (:mod:`mf_sched._kinetic`), so a pull
updates one arm in O(log K) and the growth of `ln n` re-decides only the comparisons whose
certificate expires; the argmax and its ties are exactly those of recomputing every index (tested
side by side with that recomputation).

Example:
    >>> from mf_sched import FidelityLadder
    >>> from mf_sched.policies.ucb1 import UCB1
    >>> p = UCB1(n_arms=2, ladder=FidelityLadder([1.0]), budget=50, seed=0)
    >>> while not p.done:
    ...     pull = p.ask(); p.tell(pull, [0.2, 0.8][pull.arm])
    >>> int(p.counts[1, 0]) > int(p.counts[0, 0])
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from mf_sched._kinetic import KineticMax, LeafModel
from mf_sched._validate import check_real
from mf_sched.ladder import FidelityLadder
from mf_sched.policy import Policy, Recommendation, argmax_random
from mf_sched.registry import register


@register
class UCB1(Policy):
    """UCB1 (Auer et al. 2002) at one fidelity; regret baseline.

    Args:
        n_arms: see :class:`~mf_sched.policy.Policy`.
        ladder: see :class:`~mf_sched.policy.Policy`.
        **kwargs: `noise`, `budget` (the capital Λ; without it the policy never finishes (the simulator then needs
            its own budget)), `seed`; see :class:`~mf_sched.policy.Policy`.
        fidelity: fidelity to play (default: the highest).
        rho: exploration constant ρ > 0 of the ψ-UCB bonus `σ √(2ρ ln n / n_j)`; None (default) is
            UCB1's `2σ √(2 ln n / n_j)`, i.e. ρ = 4.
    """

    name = "ucb1"
    paper = "Auer, Cesa-Bianchi, Fischer 2002 (Machine Learning 47), UCB1"
    objective = "regret"
    summary = "UCB1 at the highest fidelity only (regret baseline)"
    sample_agnostic = True
    _state_attrs = ("_pending", "_requeue")

    def __init__(
        self,
        n_arms: int,
        ladder: FidelityLadder,
        *,
        fidelity: int | None = None,
        rho: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(n_arms, ladder, **kwargs)
        self.fidelity = ladder.top if fidelity is None else ladder.check_index(fidelity)
        rho = check_real("rho", rho, gt=0.0, none_ok=True, accepted="a finite number > 0, or None (UCB1)")
        self.rho = rho
        # bonus = coefficient · √(ln n) / √(n_j): UCB1's 2σ√2, or σ√(2ρ) for the ψ-UCB form
        self._coef = 2.0 * self.sigma * math.sqrt(2.0) if rho is None else self.sigma * math.sqrt(2.0 * rho)
        self._set_config(fidelity=fidelity, rho=rho)
        self._pending = np.zeros(self.n_arms, dtype=np.int64)
        self._requeue: list[int] = []  # arms of given-back pulls, handed out again first
        self._after_load()

    def _after_load(self) -> None:
        # caches derived from the state (rebuilt after a restore): number of untouched arms, total plays,
        # and the kinetic tournament over the arms' indices (mf_sched._kinetic)
        n_eff = self._counts[:, self.fidelity] + self._pending
        self._fresh = int(np.count_nonzero(n_eff == 0))
        self._plays = int(n_eff.sum())
        self._tree = KineticMax(self.n_arms, _UCB1Leaves(self._arm_stats, self.n_arms), s=self._coef_t())

    def _arm_stats(self, k: int) -> tuple[int, int, float]:
        """Arm `k` at the working fidelity: told plays, plays counting the outstanding ones, sum of values."""
        f = self.fidelity
        return int(self._counts[k, f]), int(self._counts[k, f]) + int(self._pending[k]), float(self._sums[k, f])

    def _coef_t(self) -> float:
        """The bonus coefficient of the current round, `coefficient · √(ln n)` (the tree's parameter)."""
        return self._coef * math.sqrt(math.log(max(self._plays, 1)))

    def _touch(self, arm: int, d_pending: int, just_counted: int = 0) -> None:
        """Update the caches after arm's pending count changed by `d_pending` (and its told count at the
        working fidelity by `just_counted`, already applied to the shared statistics)."""
        before = int(self._counts[arm, self.fidelity]) - just_counted + int(self._pending[arm])
        self._pending[arm] += d_pending
        n_eff = before + just_counted + d_pending
        self._plays += n_eff - before
        self._fresh += (n_eff == 0) - (before == 0)
        self._tree.update(arm)

    def index(self) -> np.ndarray:
        """Current UCB1 index of every arm (`+inf` for arms never played nor pending, `−inf` for arms
        whose only plays are still outstanding)."""
        f = self.fidelity
        n = self._counts[:, f]
        n_eff = n + self._pending
        with np.errstate(divide="ignore", invalid="ignore"):
            mu = np.where(n > 0, self._sums[:, f] / np.maximum(n, 1), -np.inf)
            w = np.where(n_eff > 0, 1.0 / np.sqrt(n_eff), np.inf)
            idx = mu + self._coef_t() * np.where(np.isinf(w), 0.0, w)
        return np.where(np.isinf(w), np.inf, idx)

    def _propose(self) -> tuple[int, int] | None:
        if self._requeue:
            return self._requeue[0], self.fidelity
        tree = self._tree
        tree.set_s(self._coef_t())
        if self._fresh > 0:  # play every arm once first (UCB1's initialisation), in random order
            # the untouched arms are the tree's +inf leaves, in arm order
            return tree.select(int(self._rng.integers(self._fresh))), self.fidelity
        count, arm = tree.top()
        if tree.top_value() == -np.inf:  # every arm is waiting for its first result: spread the load
            return argmax_random(-self._pending.astype(float), self._rng), self.fidelity
        if count > 1:  # ties broken uniformly at random, in arm order (as argmax_random)
            arm = tree.select(int(self._rng.integers(count)))
        return arm, self.fidelity

    def _on_issue(self, arm: int, fidelity: int) -> None:
        if self._requeue and self._requeue[0] == arm:
            self._requeue.pop(0)
        self._touch(arm, +1)

    def _on_give_back(self, arm: int, fidelity: int) -> None:
        if fidelity == self.fidelity:
            self._requeue.append(arm)
        self._touch(arm, -1)

    def _observe(self, arm: int, fidelity: int, value: float) -> None:
        # the shared statistics already hold the value; a sample at another fidelity only frees the slot
        self._touch(arm, -1, just_counted=int(fidelity == self.fidelity))

    def _is_done(self) -> bool:
        return False

    def _recommend(self) -> Recommendation:
        return self._empirical_recommendation(certified=False, reason=self._default_reason())


class _UCB1Leaves(LeafModel):
    """UCB1's index as the kinetic tournament's leaves: `µ̂_j + s · (1/√n_j)` with `s` the round's
    coefficient; `+inf` for untouched arms, `−inf` for arms whose only plays are outstanding.
    `stats(k)` gives arm `k`'s `(told plays, plays with the outstanding ones, sum of values)`."""

    def __init__(self, stats: Callable[[int], tuple[int, int, float]], n_arms: int) -> None:
        self.stats = stats
        self.line: list[tuple[float, float]] = [(math.inf, 0.0)] * n_arms  # each leaf's line as last loaded

    def lines(self, k: int) -> tuple[tuple[tuple[float, float], ...], Any]:
        n, n_eff, total = self.stats(k)
        if n_eff == 0:
            self.line[k] = (math.inf, 0.0)
            return ((math.inf, 0.0),), "untouched"
        if n == 0:
            self.line[k] = (-math.inf, 0.0)
            return ((-math.inf, 0.0),), "waiting"
        line = self.line[k] = (total / n, 1.0 / math.sqrt(n_eff))
        return (line,), line

    def exact(self, k: int, s: float) -> float:
        a, b = self.line[k]
        return a + b * s if b else a  # the index's own arithmetic: µ̂ + coefficient · (1/√n)
