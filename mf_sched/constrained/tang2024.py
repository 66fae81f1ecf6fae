"""The instances of Tang et al. (2024)'s experiments.

:func:`tang2024_instance` builds the six L = 2 instances of the paper's Table 1 exactly, and labelled
*stand-ins* for its L = 1 instances, which the paper shows only as figures.
"""

from __future__ import annotations

import numpy as np

from mf_sched.constrained.instance import ConstrainedInstance
from mf_sched.constrained.mixture import check_assumption

__all__ = ["TANG2024_INSTANCES", "tang2024_instance"]

_TABLE1_C1 = (0.4, 0.6, 0.8, 1.0, 1.2, 1.4)
_TABLE1_C2 = (0.7, 0.9, 1.1, 1.3)
#: Table 1 of Tang et al. (2024), mean rewards, rows c1 = 0.4..1.4, columns c2 = 0.7..1.3 (row-major arms)
_TABLE1 = {
    "D1P": "0.88 0.80 0.82 0.66 0.72 1.02 0.70 0.54 0.92 0.74 0.94 0.84 0.76 0.60 0.56 0.86 "
    "0.98 0.64 0.68 0.78 0.62 0.96 0.90 0.58",
    "D2P": "0.08 0.28 -0.02 0.22 0.20 0.46 0.54 0.40 0.42 0.52 0.80 0.34 0.92 0.78 0.96 0.70 "
    "0.94 0.76 1.10 0.86 1.42 1.16 1.04 1.24",
    "D3P": "1.04 1.22 1.28 1.26 0.98 1.22 1.60 1.54 1.26 1.40 1.88 1.84 1.72 1.76 1.64 1.92 "
    "1.78 1.70 1.96 2.08 1.94 2.30 2.32 2.50",
    "D1I": "0.84 1.02 0.74 0.76 0.84 0.88 0.96 0.90 0.90 0.98 0.92 0.80 0.98 0.98 0.90 0.74 "
    "0.94 0.90 0.88 0.72 0.78 0.82 0.88 0.84",
    "D2I": "0.40 0.18 0.28 0.14 0.44 0.54 0.40 0.32 0.56 0.52 0.68 0.64 0.84 0.80 0.82 0.74 "
    "0.94 1.18 1.02 1.12 1.42 1.16 1.24 1.24",
    "D3I": "0.92 1.12 1.32 1.42 1.14 1.42 1.62 1.68 1.30 1.70 1.68 2.06 1.46 1.82 2.02 2.04 "
    "1.84 2.02 2.12 2.24 2.06 2.28 2.32 2.58",
}
#: names accepted by :func:`tang2024_instance`
TANG2024_INSTANCES = (*_TABLE1, "A1-standin", "A2-standin", "A3-standin", "H2-standin")


def _standin_a(kind: str, index: int) -> tuple[np.ndarray, np.ndarray]:
    """The `index`-th random 16-arm L = 1 instance (like those of §5, Fig. 2) whose optimum is of type `kind`
    (`"deterministic"` or a two-arm `"mix"`): costs U[0.4, 1.6], rewards `0.5 + s·c + U(−0.15,
    0.15)` with a random slope `s`; accepted when Assumption 1 holds with a value gap ≥ 0.05."""
    found = 0
    for seed in range(10_000):
        rng = np.random.default_rng([2024, seed])
        c = np.round(rng.uniform(0.4, 1.6, 16), 4)
        r = np.round(0.5 + rng.uniform(-0.1, 0.6) * c + rng.uniform(-0.15, 0.15, 16), 4)
        chk = check_assumption(r, c[:, None], [1.0])
        if chk.ok and chk.value_gap >= 0.05 and (kind == "deterministic") == (len(chk.optimum.arms) == 1):
            if found == index:
                return r, c[:, None]
            found += 1
    raise RuntimeError("no stand-in found")  # pragma: no cover


def tang2024_instance(name: str) -> ConstrainedInstance:
    """An instance of Tang et al. (2024)'s experiments (`σ_r = 1`, `σ_c = 0.5`, all arms unknown).

    * `"D1P" "D2P" "D3P" "D1I" "D2I" "D3I"`: the six L = 2, K = 24 instances of Appendix C, Table 1,
      exactly (arm `4·i + j` has costs `(c1_i, c2_j)`, `c1 ∈ {0.4, …, 1.4}`, `c2 ∈ {0.7, …, 1.3}`;
      `c̄ = (1, 1)`).
    * `"A1-standin" "A2-standin" "A3-standin"`: **stand-ins** for the L = 1, K = 16 instances A1–A3 of
      Fig. 2, whose means the paper shows only as a plot: random instances of the documented type (one
      with a deterministic optimum, two with a two-arm mix), not the paper's.
    * `"H2-standin"`: a **stand-in** with the structure of H2 (Appendix A, Fig. 4): arm 0
      cheap and poor, arm 1 good and slightly infeasible, 14 identical near-boundary arms.

    Args:
        name: one of the instance names above (ValueError naming them otherwise).

    >>> inst = tang2024_instance("D3P")
    >>> inst.K, inst.L, inst.optimum.support, [round(w, 3) for w in inst.optimum.weights]
    (24, 2, (10, 12, 21), [0.6, 0.1, 0.3])
    """
    noise = {"kind": "gaussian", "sigma_reward": 1.0, "sigma_cost": 0.5}
    src = "Tang, Jain, Nayyar, Nuzzo 2024 (arXiv 2405.15090)"
    if name in _TABLE1:
        r = np.array([float(x) for x in _TABLE1[name].split()])
        c = np.array([(a, b) for a in _TABLE1_C1 for b in _TABLE1_C2])
        names = [f"c=({a},{b})" for a, b in c]
        return ConstrainedInstance(
            r, c, [1.0, 1.0], noise, arm_names=names, name=name, source=f"{src}, Appendix C, Table 1"
        )
    if name == "H2-standin":
        r = np.array([0.0, 1.0] + [0.8] * 14)
        c = np.array([0.0, 1.1] + [0.95] * 14)[:, None]
        return ConstrainedInstance(
            r, c, [1.0], noise, name=name, source=f"stand-in with the structure of H2 ({src}, App. A); not the paper's"
        )
    if name in ("A1-standin", "A2-standin", "A3-standin"):
        r, c = _standin_a(*{"A1": ("deterministic", 0), "A2": ("mix", 0), "A3": ("mix", 1)}[name[:2]])
        return ConstrainedInstance(
            r, c, [1.0], noise, name=name, source=f"stand-in for {name[:2]} of {src}, Fig. 2 (random, not the paper's)"
        )
    raise ValueError(f"unknown instance {name!r}; accepted: {', '.join(TANG2024_INSTANCES)}")
