"""IISE with one round per rung: the resumable-runs policy of the pruner and schedulers, for the simulator.

Paper: R. Poiani, A. M. Metelli, M. Restelli, *Multi-Fidelity Best-Arm Identification*, NeurIPS 2022,
Algorithm 1 (IISE) with its elimination rule, Eq. 3, executed with **one round per fidelity** instead of
the `t_m` rounds of Eq. 8. This is what a training run that advances through rungs can give (one value
per rung), and it is the rule that :class:`~mf_sched.racing.engine.RungEliminator` implements for the Optuna
pruner and the Ray schedulers; this policy runs the *same engine* on simulated instances, so that its
cost and error rate can be measured with `mf-sched simulate --policy iise-rungs --semantics resumable`
beside SH and Hyperband.

Rung `m`: every surviving arm is evaluated `replicas` times at fidelity `m` (the mean is its value
`v_i(m)`); then, simultaneously, arm `i` is eliminated when some arm `j` has
`v_j(m) − B_j − v_i(m) − B_i ≥ 2ζ(m)` (`bias="gamma"`: `γ(m)`), `B = σ √(2 log(2KM/δ) / r)`. The
survivors go up one rung. The policy stops when one arm is left (certified: the best arm with probability
`≥ 1 − δ`) or after the top rung; then the best top-rung arm is recommended, certified only if it is
alone, and `details["epsilon"]` says how close to optimal it is guaranteed to be (see
:meth:`~mf_sched.racing.engine.RungEliminator.certificate`).

Compared with IISE: no phase is repeated, so the cost is at most `K λ(M)` (every arm to the top) —
IISE's `t_m` rounds per phase can cost far more — but arms whose gaps are below `2B + 2ζ(M−1)` are not
separated: the answer is then ε-optimal rather than exact. Under `semantics="resumable"` (the intended
use) an arm that advances from rung `m − 1` to `m` pays `λ(m) − λ(m−1)`. The simulator draws the
rung values independently; real learning curves are correlated along a run, which the union-bound
argument of :mod:`mf_sched.racing.engine` allows.

How the policy and the engine relate, in code: :class:`IISERungs` is a
:class:`~mf_sched.policy.RoundPolicy` that *drives* one :class:`~mf_sched.racing.engine.RungEliminator` (built with
the default `rule="iise"`, one key per arm, exposed read-only as :attr:`IISERungs.engine`). The policy owns
the allocation — each round is rung `m`, `replicas` pulls of every arm in `engine.active()` — and the
per-rung sums; when a round's last result is in, it passes each survivor's mean to `engine.report` and
calls `engine.decide_rung(m)`, and the engine alone decides who is eliminated. The recommendation reads
`engine.certificate()`. The engine's state is saved inside the policy state as the nested field
`_engine_state` (the engine's own :meth:`~mf_sched.racing.engine.RungEliminator.state_dict`, restored with
:meth:`~mf_sched.racing.engine.RungEliminator.from_state_dict`; states saved with the older field `_engine_json`, a
JSON string, still load). The racing policy :class:`~mf_sched.racing.policy.Race` drives a
`RungEliminator(rule="race")` the same way but one pull at a time (`report`, `should_stop`,
`priority`); the Optuna pruner and the Ray schedulers drive the engine directly, without a policy.

Parallel workers: a rung is handed out at once (`K × replicas` pulls at most); the next rung waits for
all of them (a barrier, as in the Ray `IISEScheduler`).

Example:
    >>> from mf_sched import FidelityLadder
    >>> from mf_sched.policies.iise_rungs import IISERungs
    >>> ladder = FidelityLadder(costs=[1, 3, 9], zeta=[0.2, 0.05, 0.0])
    >>> p = IISERungs(n_arms=4, ladder=ladder, delta=0.05, noise={"kind": "subgaussian", "sigma": 0.01})
    >>> means = [0.2, 0.5, 0.8, 0.9]
    >>> while not p.done:
    ...     pulls = p.ask_batch()
    ...     p.tell_batch(pulls, [means[q.arm] - ladder.zeta[q.fidelity] for q in pulls])
    >>> rec = p.recommendation()
    >>> rec.arm, rec.certified, p.counts.sum(axis=0).tolist()
    (3, True, [4, 3, 2])
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from mf_sched import _serialize
from mf_sched._serialize import StateFormatError
from mf_sched._validate import check_delta
from mf_sched.ladder import FidelityLadder
from mf_sched.policy import ArmSumRoundPolicy, Recommendation
from mf_sched.racing.engine import RungEliminator
from mf_sched.registry import register

__all__ = ["IISERungs"]


@register
class IISERungs(ArmSumRoundPolicy):
    """IISE's elimination rule with one round per rung (resumable runs). See the module docstring.

    Args:
        n_arms: see :class:`~mf_sched.policy.Policy`.
        ladder: see :class:`~mf_sched.policy.Policy`.
        **kwargs: `noise` (gives σ), `budget`, `seed`; see :class:`~mf_sched.policy.Policy`.
        delta: confidence δ ∈ (0, 1).
        bias: `"zeta"` (IISE, `2ζ(m)`) or `"gamma"` (IISE-γ, `γ(m)`; needs `ladder.gamma`).
        replicas: evaluations averaged per arm and rung (seeds of a configuration), default 1.
        eta: optional successive-halving cut on top of the rule (heuristic; voids the guarantee).
    """

    name = "iise-rungs"
    paper = "Poiani, Metelli, Restelli 2022 (NeurIPS), Alg. 1 / Eq. 3 with one round per rung (resumable runs)"
    summary = "IISE's ζ-aware elimination, one round per rung: the rule of the pruner and schedulers"
    _state_attrs = ("_engine_state", "_rung", "_rsum", "_single")

    def __init__(
        self,
        n_arms: int,
        ladder: FidelityLadder,
        *,
        delta: float = 0.05,
        bias: str = "zeta",
        replicas: int = 1,
        eta: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(n_arms, ladder, **kwargs)
        self.delta = check_delta(delta)
        self._engine = RungEliminator(
            ladder, delta=self.delta, sigma=self.sigma, replicas=replicas, n_arms=self.n_arms, bias=bias, eta=eta
        )
        for k in range(self.n_arms):
            self._engine.register(k)
        self.replicas = self._engine.replicas
        self._set_config(delta=self.delta, bias=bias, replicas=self.replicas, eta=self._engine.eta)
        self._rung = 0
        self._rsum = np.zeros(self.n_arms, dtype=float)
        self._single = self.n_arms == 1
        self._start()

    # The engine's state is a nested field of the policy state: its own RungEliminator.state_dict(), taken
    # when the policy state is saved, restored with RungEliminator.from_state_dict.
    @property
    def _engine_state(self) -> dict[str, Any]:
        return self._engine.state_dict()

    @_engine_state.setter
    def _engine_state(self, state: dict[str, Any]) -> None:
        self._engine = self._engine_from(state)

    def _engine_from(self, state: dict[str, Any]) -> RungEliminator:
        """An engine rebuilt from a saved (decoded) engine state, checked against this policy's engine."""
        eng = RungEliminator.from_state_dict(_serialize.encode(state))
        if eng.config() != self._engine.config():
            raise StateFormatError("state field _engine_state holds an engine with another configuration")
        if sorted(eng.keys) != list(range(self.n_arms)):
            raise StateFormatError(f"state field _engine_state must hold the arms 0..{self.n_arms - 1}")
        return eng

    def _upgrade_state(self, sub: dict[str, Any]) -> dict[str, Any]:
        # states saved before the engine state was nested hold it as a JSON string, field _engine_json
        if "_engine_json" in sub and "_engine_state" not in sub:
            sub = dict(sub)
            old = sub.pop("_engine_json")
            if not isinstance(old, str):
                raise StateFormatError("state field _engine_json must be a JSON string")
            try:
                sub["_engine_state"] = _serialize.decode(json.loads(old))
            except ValueError as e:  # json.JSONDecodeError is a ValueError
                raise StateFormatError(f"state field _engine_json is not valid JSON: {e}") from None
        return sub

    def _validate_state(self, sub: dict[str, Any]) -> None:
        super()._validate_state(sub)
        self._engine_from(sub["_engine_state"])

    @property
    def engine(self) -> RungEliminator:
        """The elimination engine (read it, do not drive it: the policy does)."""
        return self._engine

    def _survivors(self) -> np.ndarray:
        return np.array(sorted(self._engine.active()), dtype=np.int64)

    def _next_round(self) -> tuple[np.ndarray, np.ndarray] | None:
        surv = self._survivors()
        if self._single or self._rung > self.ladder.top or surv.size <= 1:
            return None
        arms = np.repeat(surv, self.replicas)
        return arms, np.full(arms.size, self._rung, dtype=np.int64)

    def _round_complete(self) -> None:
        surv = self._survivors()
        mean = self._rsum[surv] / self.replicas
        self._rsum[surv] = 0.0
        for a, v in zip(surv.tolist(), mean.tolist()):
            self._engine.report(a, self._rung, v)
        self._engine.decide_rung(self._rung)
        self._rung += 1

    def _recommend(self) -> Recommendation:
        reason = "finished" if self._finished else self._default_reason()
        surv = self._survivors()
        if self._single:
            return self._answer(0, certified=True)
        cert = self._engine.certificate()
        guaranteed = cert.guaranteed
        if surv.size == 1:
            ok = guaranteed
            details = {"epsilon": 0.0 if ok else None, "guaranteed": ok, "rung": int(self._rung)}
            return self._answer(surv[0], certified=ok, reason="identified" if ok else reason, details=details)
        details = {"epsilon": cert.epsilon, "guaranteed": guaranteed, "rung": int(self._rung)}
        if cert.key is not None and self._finished:
            return self._answer(cert.key, reason=reason, details=details)
        rec = self._empirical_recommendation(certified=False, reason=reason, arms=surv)
        return self._answer(rec.arm, reason=reason, details=details)

    def _describe(self) -> dict[str, Any]:
        d = super()._describe()
        d.update(rung=int(self._rung), n_survivors=len(self._engine.active()))
        return d
