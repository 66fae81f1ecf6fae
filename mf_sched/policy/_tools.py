"""Small helpers for writing a policy: seeded tie-breaking, a status summary of active arms, pulls as tuples."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from mf_sched.policy._protocol import Pull

__all__ = ["active_mask_summary", "argmax_random", "iter_pulls", "top_k_random"]


def active_mask_summary(active: np.ndarray) -> dict[str, Any]:
    """Small helper for describe(): number of active arms and, when few, their indices.

    Args:
        active: a boolean vector over the arms, `True` for an arm still in the race (a policy's survivor mask).

    Returns:
        `{"n_active": n, "active": [indices]}`; `"active"` is `None` when more than 10 arms are active (the
        status line stays short).

    >>> active_mask_summary(np.array([True, False, True]))
    {'n_active': 2, 'active': [0, 2]}
    """
    idx = np.flatnonzero(active)
    return {"n_active": int(idx.size), "active": idx.tolist() if idx.size <= 10 else None}


def iter_pulls(pulls: Iterable[Pull]) -> Iterator[tuple[int, int, int]]:
    """(id, arm, fidelity) tuples, for adapters that serialise pulls.

    Args:
        pulls: the pulls, e.g. :attr:`~mf_sched.policy.Policy.outstanding` or what
            :meth:`~mf_sched.policy.Policy.ask_batch` returned.

    >>> list(iter_pulls([Pull(0, 2, 1), Pull(1, 0, 0)]))
    [(0, 2, 1), (1, 0, 0)]
    """
    for p in pulls:
        yield p.id, p.arm, p.fidelity


def argmax_random(values: np.ndarray, rng: np.random.Generator, *, atol: float = 0.0) -> int:
    """Index of the maximum of `values`, ties (within `atol`) broken uniformly at random.

    Deterministic-by-index tie-breaking biases results on instances listed best-first (Wang et al. 2023
    put the best arm first by convention), so every policy breaks ties with its own seeded generator.

    Args:
        values: the scores, free of NaN (any shape; read flattened, so the index is into the flattened array).
        rng: the policy's own generator; one integer is drawn from it only when there is a tie.
        atol: values within `atol` of the maximum count as tied (`≥ 0`; default 0: exact ties only).

    >>> argmax_random(np.array([1.0, 3.0, 2.0]), np.random.default_rng(0))
    1
    """
    v = np.asarray(values, dtype=float)
    if v.size <= 32:  # small arrays (the common case: fidelities, LUCB's arms): plain Python is ~5x faster
        xs = v.ravel().tolist()
        m = max(xs)
        if m == m:  # no NaN: same ties, same generator draws as the vectorised path below
            lo = m - atol if math.isfinite(m) else m
            small = [i for i, x in enumerate(xs) if x >= lo]
            return small[0] if len(small) == 1 else small[int(rng.integers(len(small)))]
    m = np.max(v)
    ties = np.flatnonzero(v >= m - atol) if np.isfinite(m) else np.flatnonzero(v == m)
    if ties.size == 1:
        return int(ties[0])
    return int(ties[rng.integers(ties.size)])


def top_k_random(values: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of the `k` largest values, ties broken uniformly at random (sorted best first).

    Args:
        values: the scores, a vector over the arms.
        k: how many indices to return (`0 ≤ k`; more than `len(values)` gives them all).
        rng: the policy's own generator; one uniform draw per value is taken from it, tie or not.

    >>> top_k_random(np.array([0.2, 0.9, 0.5]), 2, np.random.default_rng(0)).tolist()
    [1, 2]
    """
    v = np.asarray(values, dtype=float)
    order = np.lexsort((rng.random(v.size), -v))
    return order[:k]
