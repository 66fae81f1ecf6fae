"""Shared base of the policies whose arms are the points of a continuous search space (MF-GP-UCB, GP-UCB).

Not registered (the module name starts with an underscore). It keeps the book of what was asked, handed out
and told, so that the subclass holds only its algorithm:

* the *point table*: up to `n_arms` distinct points, encoded in `[0, 1]^D` (:mod:`mf_sched.continuous.space`),
  that `Pull.arm` indexes. A point joins the table when the policy proposes it (`_add_point`) or when an
  evaluation the policy did not choose is adopted (:meth:`PointPolicy.adopt_point`, recorded in the history
  as a `("point", z)` event so that :meth:`PointPolicy.replay` rebuilds the table); an exactly equal point
  re-uses its arm.
* the *queue* of pulls fixed in advance (an initial design, checks a result calls for), handed out before
  any new decision, and the *pending* pulls, issued and not yet told: rows `(arm, fidelity, role)`, each with
  a value attached (`_queue_y`, `_pend_y`; NaN when there is none). The role is the subclass's code for why
  the pull was made. An adopted pull that matches a queued one takes its place (`_claim`).
* the *log* of every told observation in order, with its role (:meth:`PointPolicy.observations`).

A subclass lists `_X`, `_n_points`, `_queue`, `_queue_y`, `_pend`, `_pend_y` and the `_obs_*` arrays in its
`_state_attrs` (and in `_variable_shape`: they grow during a run).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from mf_sched._validate import check_int
from mf_sched.continuous.space import SearchSpace
from mf_sched.ladder import FidelityLadder
from mf_sched.noise import NoiseModel
from mf_sched.policy import Policy, PolicyError, Pull

__all__ = ["PointPolicy", "as_search_space"]


def as_search_space(space: SearchSpace | Mapping[str, Any]) -> SearchSpace:
    """`space`, or the space its `to_dict()` describes.

    Args:
        space: a search space, or the mapping its `to_dict()` returns.

    Returns:
        The search space.

    Raises:
        ValueError: `space` is neither (the message names `space` and the type given).
    """
    if isinstance(space, Mapping):
        space = SearchSpace.from_dict(space)
    if not isinstance(space, SearchSpace):
        raise ValueError(f"space must be a SearchSpace (or its to_dict()), got {type(space).__name__}")
    return space


class PointPolicy(Policy):
    """A policy whose arms are the points of a table over a search space (see the module docstring).

    Args:
        space: the search space (:func:`as_search_space` converts a `to_dict()`).
        n_arms: the capacity of the point table (at least 1).
        ladder: the fidelity ladder.
        noise: the noise model that validates observations (see :class:`~mf_sched.policy.Policy`).
        budget: the total cost the policy may spend; None: no limit.
        seed: seed of the policy's random generator.
    """

    def __init__(
        self,
        space: SearchSpace,
        n_arms: int,
        ladder: FidelityLadder,
        *,
        noise: NoiseModel | Mapping[str, Any] | None = None,
        budget: float | None = None,
        seed: int | None = None,
    ) -> None:
        super().__init__(n_arms, ladder, noise=noise, budget=budget, seed=seed)
        self.space = space
        self._X = np.zeros((self.n_arms, space.dim))
        self._n_points = 0
        self._index: dict[bytes, int] = {}
        self._queue = np.zeros((0, 3), dtype=np.int64)
        self._queue_y = np.zeros(0)
        self._pend = np.zeros((0, 3), dtype=np.int64)
        self._pend_y = np.zeros(0)
        self._obs_arm = np.zeros(0, dtype=np.int64)
        self._obs_fid = np.zeros(0, dtype=np.int64)
        self._obs_y = np.zeros(0)
        self._obs_role = np.zeros(0, dtype=np.int64)

    def _after_load(self) -> None:
        self._index = {self._X[i].tobytes(): i for i in range(self._n_points)}

    def _add_point(self, z: np.ndarray) -> int:
        key = z.tobytes()
        arm = self._index.get(key)
        if arm is not None:
            return arm
        if self._n_points >= self.n_arms:
            raise PolicyError(f"the point table is full (n_arms = {self.n_arms}); raise n_arms to evaluate more points")
        arm = self._n_points
        self._X[arm] = z
        self._n_points += 1
        self._index[key] = arm
        return arm

    @property
    def n_points(self) -> int:
        """Number of distinct points in the table (initial design included)."""
        return self._n_points

    def _check_arm(self, arm: Pull | int) -> int:
        a = arm.arm if isinstance(arm, Pull) else arm
        return check_int("arm", a, 0, self._n_points - 1)

    def point(self, arm: Pull | int) -> dict[str, Any]:
        """The parameter setting of `arm` (or of a :class:`~mf_sched.policy.Pull`), decoded (name → value).

        Args:
            arm: a point's index in the table (`0 ≤ arm < n_points`), or a pull of it.

        Returns:
            The parameters, as the space decodes them (floats, ints, categorical choices).
        """
        return self.space.decode(self._X[self._check_arm(arm)])

    def params(self, pull: Pull | int) -> dict[str, Any]:
        """Alias of :meth:`point`: the parameters to evaluate for `pull`.

        Args:
            pull: a pull, or its point's index in the table.

        Returns:
            The parameters (name → value).
        """
        return self.point(pull)

    def x(self, arm: Pull | int) -> np.ndarray:
        """The point of `arm` as a float vector in dimension order (numeric spaces only).

        Args:
            arm: a point's index in the table (`0 ≤ arm < n_points`), or a pull of it.

        Returns:
            The parameter values in the order of the space's dimensions, in their own units.
        """
        return self.space.to_array(self.point(arm))

    def unit_point(self, arm: Pull | int) -> np.ndarray:
        """The encoded point of `arm` in `[0, 1]^D` (a copy).

        Args:
            arm: a point's index in the table (`0 ≤ arm < n_points`), or a pull of it.

        Returns:
            The encoded point (shape `(D,)`, one coordinate per choice of a categorical).
        """
        return self._X[self._check_arm(arm)].copy()

    def adopt_point(self, params: Mapping[str, Any], fidelity: int) -> Pull:
        """Register an evaluation of `params` at `fidelity` that the policy did not choose (a user-enqueued
        trial); returns the outstanding :class:`~mf_sched.policy.Pull` to tell. The point joins the table
        (or re-uses an equal one); its value is told like any other (MF-GP-UCB feeds it to the fidelity's GP).

        Args:
            params: the parameter setting (name → value, every dimension of the space); it is encoded and
                snapped to the space (an integer or categorical value outside it raises ValueError).
            fidelity: the 0-based fidelity it was evaluated at, in `0 … M−1`.

        Returns:
            The outstanding pull to :meth:`~mf_sched.policy.Policy.tell` its value with.

        Raises:
            PolicyError: the point is new and the table is full (`n_arms` points).
        """
        fidelity = check_int("fidelity", fidelity, 0, self.M - 1)
        z = self.space.snap(self.space.encode(params))
        self._proposal = None
        arm = self._add_point(z)
        if self._events is not None:
            self._events.append(("point", z.tolist()))
        return self.adopt(arm, fidelity)

    def replay(self, events: Iterable[Sequence[Any]]) -> None:
        """:meth:`Policy.replay` plus the `("point", z)` events that :meth:`adopt_point` records (an
        outside point joining the table, before its `adopt` event).

        Args:
            events: a recorded :attr:`~mf_sched.policy.Policy.history`, applied to a fresh policy with the
                same configuration.

        Raises:
            PolicyError: an event does not apply (the message names its index; a replayed `ask` that differs
                from the record raises :class:`~mf_sched.policy.ReplayMismatchError`).
        """
        for i, ev in enumerate(events):
            if ev[0] == "point":
                self._proposal = None
                self._add_point(self.space.snap(np.asarray(ev[1], dtype=float)))
                continue
            try:
                super().replay([ev])
            except (PolicyError, ValueError) as e:
                msg = str(e)
                msg = msg.replace("event 0", f"event {i}", 1) if msg.startswith("event 0") else f"event {i}: {msg}"
                raise (type(e) if isinstance(e, PolicyError) else PolicyError)(msg) from None

    def adopt(self, arm: int, fidelity: int) -> Pull:
        """:meth:`Policy.adopt` for a point already in the table; for a new point use :meth:`adopt_point`.

        Args:
            arm: the point's index in the table (`0 ≤ arm < n_points`).
            fidelity: the 0-based fidelity it was evaluated at, in `0 … M−1`.

        Returns:
            The outstanding pull to tell its value with.
        """
        check_int("arm", arm, 0, self._n_points - 1)
        return super().adopt(arm, fidelity)

    def observations(self) -> dict[str, np.ndarray]:
        """Every told observation in order: `arm`, `fidelity`, `value`, `role` (the subclass's code for why
        the pull was made: an index into :data:`~mf_sched.policies.mf_gp_ucb.ROLE_NAMES` for the GP policies)
        and the cumulative `cost` after it."""
        return {
            "arm": self._obs_arm.copy(),
            "fidelity": self._obs_fid.copy(),
            "value": self._obs_y.copy(),
            "role": self._obs_role.copy(),
            "cost": np.cumsum(self._costs[self._obs_fid]),
        }

    # ------------------------------------------------------------------ queued, pending and told pulls
    def _queue_front(self, arm: int, fidelity: int, role: int, y: float) -> None:
        """Queue the pull `(arm, fidelity)`, with its role and attached value, ahead of every other."""
        self._queue = np.vstack([np.array([[arm, fidelity, role]], dtype=np.int64), self._queue])
        self._queue_y = np.concatenate([[y], self._queue_y])

    def _issue_queued(self, arm: int, fidelity: int) -> bool:
        """Move the head of the queue to the pending pulls if it is `(arm, fidelity)`; say whether it was."""
        q = self._queue
        if q.shape[0] and q[0, 0] == arm and q[0, 1] == fidelity:
            self._push_pending(q[0], self._queue_y[0])
            self._queue, self._queue_y = q[1:], self._queue_y[1:]
            return True
        return False

    def _push_pending(self, row: np.ndarray, y: float) -> None:
        self._pend = np.vstack([self._pend, np.asarray(row, dtype=np.int64).reshape(1, 3)])
        self._pend_y = np.append(self._pend_y, y)

    def _pop_pending(self, arm: int, fidelity: int) -> tuple[int, float]:
        hit = np.flatnonzero((self._pend[:, 0] == arm) & (self._pend[:, 1] == fidelity))
        j = int(hit[0])  # an issued or claimed pull is always pending
        role, y = int(self._pend[j, 2]), float(self._pend_y[j])
        self._pend = np.delete(self._pend, j, axis=0)
        self._pend_y = np.delete(self._pend_y, j)
        return role, y

    def _claim(self, arm: int, fidelity: int) -> bool:
        q = self._queue
        hit = np.flatnonzero((q[:, 0] == arm) & (q[:, 1] == fidelity))
        if hit.size == 0:
            return False
        j = int(hit[0])
        self._push_pending(q[j], self._queue_y[j])
        self._queue, self._queue_y = np.delete(q, j, axis=0), np.delete(self._queue_y, j)
        return True

    def _append_obs(self, arm: int, fidelity: int, value: float, role: int) -> None:
        self._obs_arm = np.append(self._obs_arm, np.int64(arm))
        self._obs_fid = np.append(self._obs_fid, np.int64(fidelity))
        self._obs_y = np.append(self._obs_y, float(value))
        self._obs_role = np.append(self._obs_role, np.int64(role))
