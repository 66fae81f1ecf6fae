"""The kinetic tournament (mf_sched._kinetic) against a brute-force argmax with every tie, on random lines."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mf_sched._kinetic import KineticMax, LeafModel


class _Cells(LeafModel):
    """Leaf k = min(cap, min_m mu[k, m] + (c / sqrt(n[k, m]) + z[m])) over cells with n > 0 (the LUCB shape)."""

    def __init__(self, mu: np.ndarray, n: np.ndarray, z: np.ndarray, cap: float) -> None:
        self.mu, self.n, self.z, self.cap = mu, n, z, cap

    def lines(self, k: int):
        out = []
        sig = []
        for m in range(self.mu.shape[1]):
            n = int(self.n[k, m])
            if n > 0:
                mu = float(self.mu[k, m])
                out.append((mu + float(self.z[m]), 1.0 / math.sqrt(n)))
                sig.append((m, n, mu))
        return (tuple(out) or ((math.inf, 0.0),)), tuple(sig)

    def exact(self, k: int, s: float) -> float:
        v = math.inf
        for m in range(self.mu.shape[1]):
            n = int(self.n[k, m])
            if n > 0:
                v = min(v, float(self.mu[k, m]) + (s / math.sqrt(n) + float(self.z[m])))
        return min(v, self.cap)

    def all(self, s: float) -> np.ndarray:
        return np.array([self.exact(k, s) for k in range(self.mu.shape[0])])


def _check(tree: KineticMax, model: _Cells, rng: np.random.Generator) -> None:
    v = model.all(tree.s)
    ties = np.flatnonzero(v == v.max())
    c, w = tree.top()
    assert c == ties.size
    assert w in ties
    r = int(rng.integers(c))
    assert tree.select(r) == ties[r]
    x = int(rng.integers(v.size))
    u = v.copy()
    u[x] = -np.inf
    if v.size > 1 and u.max() > -np.inf:
        t2 = np.flatnonzero(u == u.max())
        c2, _ = tree.top_excluding(x)
        assert c2 == t2.size
        r2 = int(rng.integers(c2))
        assert tree.select_excluding(x, r2) == t2[r2]


@pytest.mark.parametrize("seed", range(12))
def test_random_cells_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    K = int(rng.choice([1, 2, 3, 7, 33, 100]))
    M = int(rng.integers(1, 4))
    # coarse values so that exact ties (equal counts and means) are frequent
    mu = rng.integers(0, 4, size=(K, M)) / 4.0
    n = rng.integers(0, 3, size=(K, M))
    z = np.sort(rng.choice([0.0, 0.05, 0.1, 0.25], size=M))[::-1].copy()
    z[-1] = 0.0
    cap = float(rng.choice([math.inf, 1.0]))
    model = _Cells(mu, n, z, cap)
    s = float(rng.uniform(0, 1))
    tree = KineticMax(K, model, s=s)
    for _ in range(200):
        _check(tree, model, rng)
        op = rng.random()
        if op < 0.5:
            k = int(rng.integers(K))
            m = int(rng.integers(M))
            n[k, m] += 1
            mu[k, m] = rng.integers(0, 4) / 4.0
            tree.update(k)
        elif op < 0.95:
            tree.set_s(tree.s + float(rng.exponential(0.05)) * (rng.random() < 0.8))
        else:
            tree.set_s(max(0.0, tree.s - 0.1))  # a decrease rebuilds


def test_lines_overtaking_and_constants():
    class Lines(LeafModel):
        def __init__(self, lines):
            self.l = lines

        def lines(self, k):
            return (self.l[k],), self.l[k]

        def exact(self, k, s):
            a, b = self.l[k]
            return a + b * s if b else a

    lines = [(1.0, 0.0), (0.0, 1.0), (0.5, 0.25), (-math.inf, 0.0), (0.0, 1.0)]
    t = KineticMax(5, Lines(lines), s=0.0)
    assert t.top() == (1, 0)
    t.set_s(1.0)  # lines 1 and 4 (identical) reach 1.0 = line 0: a three-way tie
    assert t.top()[0] == 3 and [t.select(r) for r in range(3)] == [0, 1, 4]
    t.set_s(3.0)
    assert t.top()[0] == 2 and [t.select(r) for r in range(2)] == [1, 4]
    assert t.top_excluding(1) == (1, 4)
    lines[4] = (math.inf, 0.0)
    t.update(4)
    assert t.top() == (1, 4)
