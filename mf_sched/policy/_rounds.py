"""Round policies: hand out a round of pulls, wait for all of them, then decide.

Successive elimination and halving, IISE, LUCB1, Hyperband's brackets and the constrained mixtures (SFSR, USLP) all
have this shape. :class:`RoundPolicy` implements the protocol's hooks for them over a queue of the current round
(so a subclass only builds rounds and accumulates their results), and offers simulators a sufficient-statistics
path (:meth:`RoundPolicy.round_counts`, :meth:`RoundPolicy.observe_round_totals`); :class:`ArmSumRoundPolicy` adds
the per-arm sum of a round's results that elimination and halving rules read.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import numpy as np

from mf_sched import _serialize
from mf_sched.ladder import FidelityLadder
from mf_sched.policy._errors import PolicyError
from mf_sched.policy._persistence import _state_int
from mf_sched.policy._protocol import Policy

__all__ = ["RoundPolicy", "ArmSumRoundPolicy"]


class RoundPolicy(Policy):
    """Base for policies that hand out a *round* of pulls, wait for all of them, then decide.

    Subclasses implement :meth:`_next_round` (the next round's (arms, fidelities), or None when they
    have finished) and :meth:`_observe_round` (accumulate one round's results); :meth:`_round_complete`
    runs when a round's last result arrives. With `W` parallel workers a whole round is handed out at
    once and the next round waits for every outstanding pull of the current one (a barrier).

    Adopted pulls that match unissued work of the current round fill that slot; other adopted pulls
    are extras. Given-back pulls are queued again, ahead of the rest of the round.

    A subclass ends its constructor with `self._start()`, which builds the first round.

    Args:
        n_arms: number of arms `K ≥ 1`; see :class:`~mf_sched.policy.Policy`.
        ladder: the :class:`~mf_sched.ladder.FidelityLadder`; see :class:`~mf_sched.policy.Policy`.
        **kwargs: the other arguments of :class:`~mf_sched.policy.Policy` (`noise`, `budget`, `seed`). A budget
            can stop a round part-way: the pulls of the round that fit are handed out, then the policy is done.
    """

    _ROUND_STATE: ClassVar[tuple[str, ...]] = ("_q_arms", "_q_fids", "_q_pos", "_q_pending", "_finished", "_round")
    _variable_shape: ClassVar[tuple[str, ...]] = ("_q_arms", "_q_fids")

    def __init__(self, n_arms: int, ladder: FidelityLadder, **kwargs: Any) -> None:
        super().__init__(n_arms, ladder, **kwargs)
        self._q_arms = np.zeros(0, dtype=np.int64)
        self._q_fids = np.zeros(0, dtype=np.int64)
        self._q_pos = 0
        self._q_pending = 0
        self._finished = False
        self._round = 0

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = tuple(a for a in getattr(cls, "_state_attrs", ()) if a not in RoundPolicy._ROUND_STATE)
        cls._state_attrs = RoundPolicy._ROUND_STATE + tuple(dict.fromkeys(own))

    def _validate_state(self, sub: dict[str, Any]) -> None:
        qa, qf, pos, pending = sub["_q_arms"], sub["_q_fids"], sub["_q_pos"], sub["_q_pending"]
        if qa.shape != qf.shape or qa.ndim != 1:
            raise _serialize.StateFormatError("state round queue: arms and fidelities must be vectors of one length")
        if qa.size and (qa.min() < 0 or qa.max() >= self.n_arms or qf.min() < 0 or qf.max() >= self.M):
            raise _serialize.StateFormatError("state round queue holds an arm or a fidelity out of range")
        if not (0 <= pos <= qa.size and 0 <= pending <= pos):
            raise _serialize.StateFormatError(
                f"state round position {pos} / pending {pending} is out of range for a round of {qa.size} pulls"
            )
        for name in ("_round", "_t"):  # round counters (``_t``: rounds so far, in the phase or in all)
            if name in sub:
                _state_int(sub, name, 0)

    def _start(self) -> None:
        """Call at the end of the subclass constructor to build the first round."""
        self._advance()

    @abc.abstractmethod
    def _next_round(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(arms, fidelities) of the next round (non-empty), or None when the policy has finished."""

    @abc.abstractmethod
    def _observe_round(self, arms: np.ndarray, fidelities: np.ndarray, values: np.ndarray) -> None:
        """Accumulate results of the current round (called once per tell or per batch)."""

    def _observe_round_one(self, arm: int, fidelity: int, value: float) -> None:
        """Scalar version of :meth:`_observe_round` (override for speed; default wraps arrays)."""
        self._observe_round(np.array([arm]), np.array([fidelity]), np.array([value]))

    def _round_complete(self) -> None:
        """Hook run when the current round's last result is in, before the next round is built."""

    def _advance(self) -> None:
        while True:
            if self._finished:
                return
            nxt = self._next_round()
            if nxt is None:
                self._finished = True
                self._q_arms = np.zeros(0, dtype=np.int64)
                self._q_fids = np.zeros(0, dtype=np.int64)
                self._q_pos = 0
                return
            arms, fids = (np.asarray(x, dtype=np.int64).ravel() for x in nxt)
            if arms.shape != fids.shape:
                raise RuntimeError("a round's arms and fidelities must have the same length")
            if arms.size == 0:
                raise RuntimeError(f"{type(self).__name__}._next_round returned an empty round")
            self._round += 1
            self._q_arms, self._q_fids, self._q_pos = arms, fids, 0
            return

    def _propose(self) -> tuple[int, int] | None:
        if self._q_pos < self._q_arms.size:
            return int(self._q_arms[self._q_pos]), int(self._q_fids[self._q_pos])
        return None

    def _on_issue(self, arm: int, fidelity: int) -> None:
        self._q_pos += 1
        self._q_pending += 1

    def _propose_batch(self, n: int) -> tuple[np.ndarray, np.ndarray] | None:
        end = min(self._q_arms.size, self._q_pos + n)
        return self._q_arms[self._q_pos : end], self._q_fids[self._q_pos : end]

    def _on_issue_batch(self, arms: np.ndarray, fidelities: np.ndarray) -> None:
        self._q_pos += arms.size
        self._q_pending += arms.size

    def _on_give_back(self, arm: int, fidelity: int) -> None:
        # put the work back just before the unissued part of the queue
        self._q_pending -= 1
        self._q_pos -= 1
        self._q_arms = self._q_arms.copy()
        self._q_fids = self._q_fids.copy()
        # the slot at _q_pos was issued; overwrite it with the given-back work (order within a round is free)
        self._q_arms[self._q_pos] = arm
        self._q_fids[self._q_pos] = fidelity

    def _claim(self, arm: int, fidelity: int) -> bool:
        if self._finished:
            return False
        rest_a = self._q_arms[self._q_pos :]
        rest_f = self._q_fids[self._q_pos :]
        hit = np.flatnonzero((rest_a == arm) & (rest_f == fidelity))
        if hit.size == 0:
            return False
        j = self._q_pos + int(hit[0])
        self._q_arms = self._q_arms.copy()
        self._q_fids = self._q_fids.copy()
        # swap the claimed slot to the front of the unissued part, then issue it
        self._q_arms[[self._q_pos, j]] = self._q_arms[[j, self._q_pos]]
        self._q_fids[[self._q_pos, j]] = self._q_fids[[j, self._q_pos]]
        self._on_issue(arm, fidelity)
        return True

    def _observe(self, arm: int, fidelity: int, value: float) -> None:
        self._observe_round_one(arm, fidelity, value)
        self._q_pending -= 1
        self._maybe_close_round()

    def _observe_batch(self, arms: np.ndarray, fidelities: np.ndarray, values: np.ndarray) -> None:
        if arms.size <= 32:
            rows = values.tolist() if values.ndim == 1 else list(values)
            for a, f, v in zip(arms.tolist(), fidelities.tolist(), rows):
                self._observe_round_one(a, f, v)
        else:
            self._observe_round(arms, fidelities, values)
        self._q_pending -= arms.size
        self._maybe_close_round()

    def _maybe_close_round(self) -> None:
        if self._q_pending == 0 and self._q_pos >= self._q_arms.size and not self._finished:
            self._round_complete()
            self._advance()

    # ------------------------------------------------------------------ sufficient-statistics hooks
    def _at_round_boundary(self) -> bool:
        """True when nothing of the current round has been handed out (nor anything else is outstanding)."""
        return not self._outstanding and self._q_pos == 0 and self._q_pending == 0

    def round_counts(self) -> np.ndarray:
        """Pulls of the current round not yet handed out, counted per arm (a fresh vector of length
        `n_arms`; all zeros once the policy has finished).

        With :meth:`observe_round_totals` this lets a simulator draw a whole round as per-arm totals.

        >>> from mf_sched import FidelityLadder
        >>> from mf_sched.policies.successive_halving import SuccessiveHalving
        >>> p = SuccessiveHalving(4, FidelityLadder([1.0, 3.0], [0.1, 0.0]), samples_per_rung=2)
        >>> p.round_counts().tolist()
        [2, 2, 2, 2]
        """
        return np.bincount(self._q_arms[self._q_pos :], minlength=self.n_arms)

    def observe_round_totals(self, counts: Any, sums: Any, sumsq: Any) -> None:
        """Complete the current round from per-arm totals instead of one `tell` per pull.

        For simulators' sufficient-statistics paths (e.g. :func:`mf_sched.constrained.runner.run_constrained`
        with `fast=True`): `counts` must equal :meth:`round_counts` (the unissued part of the round, all
        at one fidelity; nothing may be outstanding), `sums[a]` is the sum of arm `a`'s observations in
        the round (a vector per arm for vector observations, `value_width > 1`) and `sumsq[a]` the sum
        of its squared rewards. The policy then ends in the state the per-pull protocol would give for
        pulls with these totals — for policies whose round decisions depend on a round's results only
        through per-arm totals; those policies implement :meth:`_observe_round_totals` (others raise
        :class:`~mf_sched.policy.PolicyError`). Not recorded in :attr:`~mf_sched.policy.Policy.history`.

        Raises :class:`~mf_sched.policy.PolicyError` (and changes nothing) when the policy has finished, a pull is
        outstanding, the rest of the round spans several fidelities, `counts`
        differ from :meth:`round_counts`, or history is being recorded.

        Args:
            counts: pulls per arm in the rest of the round, equal to :meth:`round_counts` (a length-`K` integer
                vector).
            sums: per-arm sum of the round's observations: a length-`K` vector, or `(K, value_width)` for vector
                observations (reward first, then the costs).
            sumsq: per-arm sum of the squared rewards (the first component), a length-`K` vector.
        """
        if self._finished or self._outstanding:
            raise PolicyError("round totals can only complete a round with no pull outstanding")
        if self._events is not None:
            raise PolicyError("observe_round_totals cannot be used while history is being recorded")
        if type(self)._observe_round_totals is RoundPolicy._observe_round_totals:
            raise PolicyError(f"{self.name} cannot observe a round from per-arm totals")
        fids = self._q_fids[self._q_pos :]
        if fids.size and np.any(fids != fids[0]):
            raise PolicyError("observe_round_totals needs a round at one fidelity")
        counts = np.asarray(counts)
        if not np.array_equal(self.round_counts(), counts):
            raise PolicyError("counts do not match the current round (see round_counts)")
        sums, sumsq = np.asarray(sums, dtype=float), np.asarray(sumsq, dtype=float)
        self._record_totals(slice(None), int(fids[0]), counts, sums if sums.ndim == 1 else sums[:, 0], sumsq)
        self._observe_round_totals(counts, sums)
        self._q_pos = self._q_arms.size
        self._q_pending = 0
        self._maybe_close_round()

    def _observe_round_totals(self, counts: np.ndarray, sums: np.ndarray) -> None:
        """Accumulate a whole round from per-arm `counts` and observation `sums` (the subclass's own
        statistics; the base ones are already updated). Override to support :meth:`observe_round_totals`."""
        raise NotImplementedError

    def _count_rounds(self, n: int, *, requeue: bool) -> None:
        """Count `n` whole rounds that a subclass recorded from totals (copies of the queued round, e.g.
        :meth:`mf_sched.policies.iise.IISE.record_rounds`); `requeue`: the subclass's decisions changed
        its next round, so the queued round is replaced by a freshly built one."""
        self._round += n
        if requeue:
            self._round -= 1
            self._advance()

    def _observe_extra(self, arm: int, fidelity: int, value: float) -> None:
        """Extras never count towards a round; policies that read the shared statistics
        (:attr:`_counts`, :attr:`_sums`) see them there automatically."""

    def _is_done(self) -> bool:
        return self._finished

    def _describe(self) -> dict[str, Any]:
        return {"round": self._round, "round_remaining": int(self._q_arms.size - self._q_pos)}


class ArmSumRoundPolicy(RoundPolicy):
    """A :class:`RoundPolicy` that sums each arm's results of the current round(s) into `self._rsum` (a
    length-`K` float vector the subclass creates and resets), as elimination and halving rules do."""

    def _observe_round(self, arms: np.ndarray, fidelities: np.ndarray, values: np.ndarray) -> None:
        np.add.at(self._rsum, arms, values)

    def _observe_round_one(self, arm: int, fidelity: int, value: float) -> None:
        self._rsum[arm] += value
