"""Shared base of the constrained best-mixed-arm policies (SFSR, USLP; Tang et al. 2024).

Not registered (the module name starts with an underscore). It holds what both policies share: the
problem description (thresholds, known arms, the pull budget N), vector observations
`[reward, cost_1, …, cost_L]` (`value_width = 1 + L`), the per-arm sums, the empirical means of eq.
(4)–(5) and the recommendation (a :class:`~mf_sched.constrained.mixture.Mixture`).

Arm numbering: the policy pulls arms `0 .. n_arms − 1` (the paper's *unknown* arms `1..K0`); known
arms (exact means given, never pulled) follow as `n_arms .. K − 1` in the order given; the slack of
constraint `l` is standard-form column `K + l`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from mf_sched._validate import check_int
from mf_sched.constrained.mixture import Mixture, _standard_form, check_problem, solve_mixture_lp
from mf_sched.ladder import FidelityLadder
from mf_sched.noise import NoiseModel, SubGaussian
from mf_sched.policy import Recommendation, RoundPolicy

__all__ = ["MixturePolicy"]


class MixturePolicy(RoundPolicy):
    """Base for fixed-budget constrained best-mixed-arm policies.

    Args:
        n_arms: `K0 ≥ 1` arms to pull (the paper's unknown arms).
        ladder: a one-level :class:`~mf_sched.ladder.FidelityLadder` (default `FidelityLadder([1.0])`):
            these papers have no fidelities; its cost prices a pull for the `budget` cap.
        thresholds: `c̄` (length `L ≥ 0`): the constraints are `E[cost_l] ≤ c̄_l` for the mixture.
        pull_budget: `N`, the total number of pulls the fixed-budget schedule is built for.
        known_rewards, known_costs: optional known arms (`K − K0` rewards and a `(K − K0) × L` cost
            matrix): part of the LP, never pulled (Remark 1(ii) of the paper).
        noise: what the policy may assume about rewards; the algorithms do not use it, it only
            validates observations (default `SubGaussian(1.0)`, which accepts any finite reward).
        budget: optional cost cap (a safety stop; the schedule itself uses `pull_budget`).
        seed: seed of the tie-breaking generator.
    """

    objective = "mixture"
    finite_armed = False
    _state_attrs: ClassVar[tuple[str, ...]] = ("_vsum", "_n")

    def __init__(
        self,
        n_arms: int,
        ladder: FidelityLadder | Mapping[str, Any] | None = None,
        *,
        thresholds: Any,
        pull_budget: int,
        known_rewards: Any = None,
        known_costs: Any = None,
        noise: NoiseModel | Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        ladder = FidelityLadder([1.0]) if ladder is None else ladder
        super().__init__(n_arms, ladder, noise=SubGaussian(1.0) if noise is None else noise, **kwargs)
        if self.M != 1:
            raise ValueError(
                f"ladder has {self.M} fidelities; {self.name} is single-fidelity (use FidelityLadder([1.0]))"
            )
        t = np.array(thresholds, dtype=float) if thresholds is not None else None
        if t is None or t.ndim != 1 or not np.all(np.isfinite(t)):
            raise ValueError(f"thresholds must be a vector of L finite numbers (L >= 0), got {thresholds!r}")
        self.thresholds = t
        self.L = int(t.size)
        self.value_width = 1 + self.L
        self.pull_budget = check_int("pull_budget", pull_budget, 1)
        if (known_rewards is None) != (known_costs is None):
            raise ValueError("known_rewards and known_costs must be given together")
        if known_rewards is None or np.size(known_rewards) == 0:
            kr, kc = np.zeros(0), np.zeros((0, self.L))
        else:
            try:
                kr, kc, _ = check_problem(known_rewards, known_costs, t)
            except ValueError as e:
                raise ValueError(f"known arms: {e}") from None
        self.known_rewards, self.known_costs = kr, kc
        self.K = self.n_arms + int(kr.size)
        self._vsum = np.zeros((self.n_arms, self.value_width), dtype=float)
        self._n = np.zeros(self.n_arms, dtype=np.int64)

    def _set_problem_config(self, **extra: Any) -> None:
        self._set_config(
            thresholds=self.thresholds.tolist(),
            pull_budget=self.pull_budget,
            known_rewards=None if self.known_rewards.size == 0 else self.known_rewards.tolist(),
            known_costs=None if self.known_rewards.size == 0 else self.known_costs.tolist(),
            **extra,
        )

    # ----------------------------------------------------------------------------- observations
    def _observe_round(self, arms: np.ndarray, fidelities: np.ndarray, values: np.ndarray) -> None:
        K0 = self.n_arms
        values = values.reshape(arms.size, self.value_width)  # L = 0: scalar rewards
        self._n += np.bincount(arms, minlength=K0)
        for j in range(self.value_width):
            self._vsum[:, j] += np.bincount(arms, weights=values[:, j], minlength=K0)

    def _observe_round_one(self, arm: int, fidelity: int, value: Any) -> None:
        self._n[arm] += 1
        self._vsum[arm] += value

    def _observe_round_totals(self, counts: np.ndarray, sums: np.ndarray) -> None:
        # a round's observations enter these policies only through per-arm totals, so
        # RoundPolicy.observe_round_totals (the simulator's sufficient-statistics path) is exact here
        self._n += counts
        self._vsum += sums

    # ----------------------------------------------------------------------------- empirical problem
    def empirical_means(self) -> tuple[np.ndarray, np.ndarray]:
        """`(r̂, ĉ)` over all `K` arms: sample means of the pulled arms (NaN without data; pulls
        adopted from outside a round are not included) and the exact means of the known arms."""
        with np.errstate(invalid="ignore", divide="ignore"):
            m = self._vsum / self._n[:, None]
        m[self._n == 0] = np.nan
        r = np.concatenate([m[:, 0], self.known_rewards])
        c = np.concatenate([m[:, 1:], self.known_costs], axis=0)
        return r, c

    def _empirical_problem(self, scale: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r, c = self.empirical_means()
        t = self.thresholds
        if scale is not None:
            c, t = c / scale, t / scale
        return _standard_form(np.nan_to_num(r), np.nan_to_num(c), t)

    def _has_data(self) -> np.ndarray:
        """Standard-form columns whose means are known (pulled arms, known arms, slacks)."""
        return np.concatenate([self._n > 0, np.ones(self.K - self.n_arms + self.L, dtype=bool)])

    def _lp_mixture(self, columns: np.ndarray, note: str) -> Mixture:
        r, c = self.empirical_means()
        return solve_mixture_lp(np.nan_to_num(r), np.nan_to_num(c), self.thresholds, columns=columns, note=note)

    # ----------------------------------------------------------------------------- recommendation
    def _final_mixture(self) -> tuple[Mixture, str]:
        """(mixture, reason) once the schedule has finished."""
        raise NotImplementedError

    def _interim_columns(self) -> np.ndarray:
        """Columns the interim answer may use (default: all)."""
        return np.ones(self.K + self.L, dtype=bool)

    def _details(self) -> dict[str, Any]:
        return {"pull_budget": self.pull_budget, "pulls_used": int(self._n.sum())}

    def _recommend(self) -> Recommendation:
        if self._finished:
            mix, reason = self._final_mixture()
        else:
            reason = self._default_reason()
            cols = np.flatnonzero(self._interim_columns() & self._has_data())
            if self.n_arms and not (self._n > 0).any() and self.K == self.n_arms:
                mix = None
            else:
                mix = self._lp_mixture(cols, "interim empirical LP (the schedule has not finished)")
        if mix is not None and not mix.feasible and reason == "finished":
            reason = "infeasible"
        return self._answer(
            None if mix is None else mix.heaviest_arm, reason=reason, mixture=mix, details=self._details()
        )

    def _describe(self) -> dict[str, Any]:
        d = super()._describe()
        d.update(L=self.L, K=self.K, pulls_used=int(self._n.sum()), pull_budget=self.pull_budget)
        return d
