"""The runs the racing engine keeps: their keys, values per rung, statuses and confidence split.

:class:`RunTable` is the data of :class:`~mf_sched.racing.engine.RungEliminator`: one row per registered run
(in registration order), one column per rung, and the per-run arrays the decision rules
(:mod:`mf_sched.racing._rules`) read and write. It decides nothing.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from mf_sched._validate import check_optional_int

#: status codes of a run
RUNNING, STOPPED, HALTED, FINISHED, LOST = 0, 1, 2, 3, 4
STATUS_NAMES = {RUNNING: "running", STOPPED: "stopped", HALTED: "halted", FINISHED: "finished", LOST: "lost"}


def check_key(key: Any) -> Hashable:
    """A run key as the engine stores it: a str or an int (a numpy integer becomes an int)."""
    if type(key) is int or type(key) is str:  # the common case, fast
        return key
    if isinstance(key, bool) or not isinstance(key, (str, int, np.integer)):
        raise TypeError(f"run key {key!r} must be a str or an int (e.g. an Optuna trial number or a Ray trial id)")
    return int(key) if isinstance(key, np.integer) else key


def delta_per_run(delta: float, n_arms: int | None, order: np.ndarray) -> np.ndarray:
    """Each run's share of δ: `δ/K` when the number of runs `K = n_arms` is known, else `6δ/(π² k²)` for the
    run with registration index `k − 1` (`order`), so that the shares of an open-ended study sum to δ."""
    if n_arms is not None:
        return np.full(order.shape, delta / n_arms)
    k = order.astype(float) + 1.0
    return 6.0 * delta / (math.pi**2 * k * k)


class RunTable:
    """Registered runs: keys, values per rung (NaN: not recorded), registration indices, statuses, the rung of
    each stop, the highest rung reached, and the racing rule's optimistic bound `U_i` and estimate per run.

    Arrays are allocated with spare rows (:meth:`grow` doubles them); row `i < len(self)` is run `keys[i]`.

    Args:
        M: the number of rungs.
    """

    def __init__(self, M: int) -> None:
        self.M = M
        self.keys: list[Hashable] = []
        self.index_of: dict[Hashable, int] = {}
        cap = 16
        self.vals = np.full((cap, M), np.nan)
        self.order = np.zeros(cap, dtype=np.int64)  # registration index k (0-based) that sets δ_k
        self.status = np.zeros(cap, dtype=np.int64)
        self.stop_rung = np.full(cap, -1, dtype=np.int64)
        self.reached = np.full(cap, -1, dtype=np.int64)
        self.upper = np.full(cap, np.inf)  # racing: U_i, the optimistic bound on run i's final value
        self.est = np.full(cap, np.inf)  # racing: the estimated final value (promotion order "estimate")
        self.halted_any = False  # the heuristic eta cut has halted a run (the guarantee is void)

    def __len__(self) -> int:
        return len(self.keys)

    def grow(self, n: int) -> None:
        """Make room for `n` runs (at least doubling the capacity)."""
        cap = self.vals.shape[0]
        if n <= cap:
            return
        new = max(n, 2 * cap)
        pad = new - cap
        self.vals = np.vstack([self.vals, np.full((pad, self.M), np.nan)])
        self.order = np.concatenate([self.order, np.zeros(pad, dtype=np.int64)])
        self.status = np.concatenate([self.status, np.zeros(pad, dtype=np.int64)])
        self.stop_rung = np.concatenate([self.stop_rung, np.full(pad, -1, dtype=np.int64)])
        self.reached = np.concatenate([self.reached, np.full(pad, -1, dtype=np.int64)])
        self.upper = np.concatenate([self.upper, np.full(pad, np.inf)])
        self.est = np.concatenate([self.est, np.full(pad, np.inf)])

    def register(self, key: Hashable, index: int | None, n_arms: int | None) -> int:
        """Add run `key` (a checked key) if new and return its row; `index` fixes its registration index (default:
        the order of registration); more than `n_arms` runs raise ValueError."""
        row = self.index_of.get(key)
        if row is not None:
            return row
        n = len(self.keys)
        if n_arms is not None and n >= n_arms:
            raise ValueError(f"more than n_arms = {n_arms} runs registered; raise n_arms or pass None (open-ended)")
        check_optional_int("index", index, 0)
        self.grow(n + 1)
        self.keys.append(key)
        self.index_of[key] = n
        self.order[n] = n if index is None else int(index)
        return n

    def report_many(
        self,
        keys: Sequence[Hashable],
        values: Any,
        *,
        index: Sequence[int] | None,
        trusted: bool,
        n_arms: int | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Record `values[i, m]` for run `keys[i]` at rung `m` (NaN: none), registering new runs in order (see
        :meth:`~mf_sched.racing.engine.RungEliminator.report_many`). Returns the rows and which values were given."""
        v = np.asarray(values, dtype=float)
        keys = list(keys)
        if v.shape != (len(keys), self.M):
            raise ValueError(f"values must have shape ({len(keys)}, {self.M}), got {v.shape}")
        if np.isinf(v).any():
            raise ValueError("values must be finite (NaN marks a rung without a value)")
        if not trusted:
            keys = [check_key(k) for k in keys]
        if len(set(keys)) != len(keys):
            raise ValueError("keys must be unique")
        all_new = trusted and not self.keys
        known: list[int | None] = [None] * len(keys) if all_new else [self.index_of.get(k) for k in keys]
        old_pos = [] if all_new else [i for i, r in enumerate(known) if r is not None]
        if old_pos:
            old = self.vals[[known[i] for i in old_pos]]
            new = v[old_pos]
            clash = ~np.isnan(old) & ~np.isnan(new) & (old != new)
            if clash.any():
                i, m = (int(x[0]) for x in np.nonzero(clash))
                raise ValueError(f"run {keys[old_pos[i]]!r} already has value {old[i, m]} at rung {m}; got {new[i, m]}")
        fresh = range(len(keys)) if all_new else [i for i, r in enumerate(known) if r is None]
        n = len(self.keys)
        if fresh:  # bulk registration, in order
            if n_arms is not None and n + len(fresh) > n_arms:
                raise ValueError(f"more than n_arms = {n_arms} runs registered; raise n_arms or pass None (open-ended)")
            if index is None:
                idx = np.arange(n, n + len(fresh))
            else:
                idx = np.asarray(index) if all_new else np.asarray([index[i] for i in fresh])
            if index is not None and (idx.dtype.kind not in "iu" or (idx < 0).any()):
                raise ValueError("index must hold integers >= 0")
            self.grow(n + len(fresh))
            new_keys = list(keys) if all_new else [keys[i] for i in fresh]
            self.keys.extend(new_keys)
            self.index_of.update(zip(new_keys, range(n, n + len(fresh))))
            self.order[n : n + len(fresh)] = idx
            if len(fresh) == len(keys):
                known = list(range(n, n + len(keys)))
            else:
                for j, i in enumerate(fresh):
                    known[i] = n + j
        rows = np.asarray(known, dtype=np.int64)
        have = ~np.isnan(v)
        cur = self.vals[rows]
        self.vals[rows] = np.where(have, v, cur)
        top_rung = np.where(have.any(axis=1), self.M - 1 - np.argmax(have[:, ::-1], axis=1), -1)
        self.reached[rows] = np.maximum(self.reached[rows], top_rung)
        fin = have[:, -1] & (self.status[rows] == RUNNING)
        self.status[rows[fin]] = FINISHED
        return rows, have

    def row(self, key: Hashable) -> int:
        """The row of run `key` (KeyError naming the key when it is not registered)."""
        try:
            return self.index_of[key]
        except KeyError:
            raise KeyError(f"unknown run {key!r}") from None
