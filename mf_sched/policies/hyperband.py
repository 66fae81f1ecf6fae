"""Hyperband over the fidelity ladder (Li, Jamieson, DeSalvo, Rostamizadeh, Talwalkar 2018).

Paper: *Hyperband: A Novel Bandit-Based Approach to Hyperparameter Optimization*, JMLR 18 (2018),
Algorithm 1. With `s_max + 1` rungs (the ladder levels from `min_fidelity` to the highest), each
iteration runs the brackets `s = s_max, …, 0`; bracket `s` draws

    n = ⌈ (s_max + 1) / (s + 1) · η^s ⌉

arms uniformly at random without replacement from the `K` arms (all of them when `n ≥ K`; the paper
samples fresh configurations, here the arm set is finite) and runs Successive Halving on them starting at
rung `s_max − s` (fidelity `top − s`), i.e. with `r = R η^{-s}` replaced by the ladder level. The
recommendation is the arm with the best mean at the highest fidelity over all brackets. `iterations`
full Hyperband iterations are run (default 1), or until the `budget` is spent.

Like SH, Hyperband assumes nothing about ζ and gives no δ-guarantee; it is Optuna's HyperbandPruner and
Ray's HyperBandScheduler baseline. Brackets run one after the other; within a bracket a rung is handed
out at once (synchronous), so W workers are busy only up to the rung's size.

Example:
    >>> from mf_sched import FidelityLadder
    >>> from mf_sched.policies.hyperband import Hyperband
    >>> ladder = FidelityLadder(costs=[1, 3, 9], zeta=[0.3, 0.1, 0.0])
    >>> hb = Hyperband(n_arms=20, ladder=ladder, eta=3, seed=1)
    >>> hb.brackets
    [(2, 9), (1, 5), (0, 3)]
    >>> while not hb.done:
    ...     pull = hb.ask(); hb.tell(pull, pull.arm / 100)
    >>> hb.recommendation().arm in range(20)
    True
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mf_sched._validate import check_int
from mf_sched.ladder import FidelityLadder
from mf_sched.policies.successive_halving import SuccessiveHalving
from mf_sched.registry import register


@register
class Hyperband(SuccessiveHalving):
    """Hyperband (Li et al. 2018) with the ladder levels as resources.

    Args:
        n_arms: see :class:`~mf_sched.policy.Policy`.
        ladder: see :class:`~mf_sched.policy.Policy`.
        **kwargs: `noise`, `budget`, `seed`, `eta` (reduction factor η > 1 (default 3)), `samples_per_rung`
            (evaluations of each survivor per rung (default 1)), `min_fidelity` (lowest rung (default 0)); see
            :class:`~mf_sched.policy.Policy`.
        iterations: number of full Hyperband iterations (each runs every bracket once; default 1).
    """

    name = "hyperband"
    paper = "Li, Jamieson, DeSalvo, Rostamizadeh, Talwalkar 2018 (JMLR 18), Hyperband Alg. 1"
    summary = "Hyperband brackets of Successive Halving over the ladder (heuristic baseline)"
    _state_attrs = SuccessiveHalving._state_attrs + ("_bracket", "_iteration")

    def __init__(
        self,
        n_arms: int,
        ladder: FidelityLadder,
        *,
        iterations: int = 1,
        **kwargs: Any,
    ) -> None:
        self.iterations = check_int("iterations", iterations, 1)
        super().__init__(n_arms, ladder, **kwargs)
        self._config["iterations"] = self.iterations

    @property
    def brackets(self) -> list[tuple[int, int]]:
        """`(s, n)` of each bracket in one iteration: start rung `top − s` with `n` arms."""
        s_max = self.ladder.top - self.min_fidelity
        out = []
        for s in range(s_max, -1, -1):
            n = math.ceil((s_max + 1) / (s + 1) * self.eta**s - 1e-9)
            out.append((s, min(n, self.n_arms)))
        return out

    def _init_brackets(self) -> None:
        self._bracket = -1
        self._iteration = 0
        self._survivors = np.zeros(0, dtype=np.int64)
        self._fid = self.ladder.top + 1
        if self.n_arms > 1:
            self._start_next_bracket()

    def _start_next_bracket(self) -> bool:
        brackets = self.brackets
        self._bracket += 1
        if self._bracket >= len(brackets):
            self._bracket = 0
            self._iteration += 1
        if self._iteration >= self.iterations:
            self._fid = self.ladder.top + 1
            return False
        s, n = brackets[self._bracket]
        self._survivors = np.sort(self._rng.choice(self.n_arms, size=n, replace=False)).astype(np.int64)
        self._fid = self.ladder.top - s
        return True

    def _bracket_finished(self, best: int) -> bool:
        self._winner = best
        return not self._start_next_bracket()

    def _describe(self) -> dict[str, Any]:
        d = super()._describe()
        d.update(bracket=self._bracket, iteration=self._iteration)
        return d
