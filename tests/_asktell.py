"""Shared ask/tell drivers of the contract tests (imported as ``_asktell``; tests/ is on the path via conftest)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np


def drive(
    policy: Any,
    steps: int,
    value_of: Callable[[Any], Any],
    rng: np.random.Generator,
    workers: int = 1,
    trace_of: Callable[[Any], Any] = lambda pull: (pull.arm, pull.fidelity),
) -> list:
    """Keep up to ``workers`` pulls outstanding and complete one chosen at random (``rng``) with
    ``value_of(pull)``, ``steps`` times or until the policy stops asking; the trace of ``trace_of(pull)`` for
    every pull handed out."""
    out: list = []
    trace: list = []
    for _ in range(steps):
        while len(out) < workers:
            pull = policy.ask()
            if pull is None:
                break
            out.append(pull)
            trace.append(trace_of(pull))
        if not out:
            break
        pull = out.pop(int(rng.integers(len(out))))
        policy.tell(pull, value_of(pull))
    return trace


def snapshot(policy: Any) -> str:
    """The policy's saved state as canonical JSON (equal strings: equal states)."""
    return json.dumps(policy.state_dict(), sort_keys=True)
