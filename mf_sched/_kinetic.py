"""Exact argmax (with every tie) of K indices that grow with a global parameter: a kinetic tournament.

The UCB-type policies (UCB1, LUCB1, the LUCB framework of Wang et al. 2023, MF-UCB) pick
`argmax_k I_k(s)` every round, where `s` is a global, non-decreasing quantity (`√log t`, the
radius constant of round `t`) and `I_k` changes only for the arms that were just sampled. A full
recomputation costs O(K) per pull; this module keeps the answer in O(log K) amortised per change.

**Model.** Leaf `k`'s value is (in real arithmetic) `v_k(s) = min(cap, min_i (a_i + b_i s))` with
slopes `b_i ≥ 0`: a concave, non-decreasing, piecewise-linear function of `s`. Its *exact* value,
the floating-point number the policy's own formula gives (:meth:`LeafModel.exact`), is what decides.

**Structure.** A kinetic tournament (Basch, Guibas, Hershberger 1999, *Data Structures for Mobile
Data*, J. Algorithms 31, §3: "kinetic tournaments"): a complete binary tree whose internal nodes keep
the winner of their two children, how many leaves of the subtree tie with it, and a *certificate*, the
largest `s` up to which that outcome provably holds. A certificate is built from a lower bound on the
winner (`min(cap, v_w(s) + (s' − s)·min_i b_i)`) and an upper bound on the loser (its active line's
tangent, concavity) with a relative tolerance `TAU` that covers the rounding of both the exact
formula and the linear model; outcomes inside the tolerance are settled by the exact values and are
rechecked at every change of `s` ("hot" nodes). Two leaves tie for good when their exact formulas have
identical inputs (same :meth:`LeafModel.lines` signature) or both are constant (an index at its cap,
`±inf`). When `s` grows, only the nodes whose certificate expired are recomputed; when a leaf
changes, its path to the root is. `s` decreasing (a given-back pull) rebuilds the tree.

**Exactness.** The winner and every tie count are those of the exact values, so the tie set (in leaf
order) is that of `numpy.flatnonzero(values == values.max())`: with the same random draw of the tie
index the policies make exactly the decisions of a full recomputation (tested side by side).

Example (three lines; the steepest overtakes as `s` grows):

    >>> class Lines(LeafModel):
    ...     def __init__(self, lines): self.l = lines
    ...     def lines(self, k): return (self.l[k],), self.l[k]
    ...     def exact(self, k, s): return self.l[k][0] + self.l[k][1] * s
    >>> t = KineticMax(3, Lines([(1.0, 0.0), (0.0, 1.0), (0.5, 0.25)]), s=0.0)
    >>> t.top(), t.set_s(0.5) or t.top(), t.set_s(2.0) or t.top()
    ((1, 0), (1, 0), (1, 1))
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["LeafModel", "KineticMax"]

_INF = math.inf
#: relative tolerance of the linear model against the exact floating-point formulas (≫ their rounding)
TAU = 1e-9


class LeafModel:
    """What a policy tells the tree about one leaf (an arm)."""

    cap: float = _INF  #: common upper clip of every value (``inf``: none)

    def lines(self, k: int) -> tuple[tuple[tuple[float, float], ...], Any]:
        """`(lines, signature)`: the real-valued model `min_i (a_i + b_i s)` of leaf `k` as
        `((a_i, b_i), ...)` (`b_i ≥ 0`; a constant `±inf` is `((±inf, 0.0),)`), and a hashable
        signature: two leaves with equal signatures have identical exact values at every `s`. A leaf
        whose active line is flat (`b = 0`) must have the exact value `a`: it is a constant."""
        raise NotImplementedError

    def exact(self, k: int, s: float) -> float:
        """The exact value of leaf `k` at `s`, as the policy's reference formula computes it."""
        raise NotImplementedError


class KineticMax:
    """Kinetic tournament over `n` leaves (see the module docstring).

    Args:
        n: number of leaves (arms), `n ≥ 1`.
        model: the :class:`LeafModel` giving each leaf's lines, signature and exact value.
        s: the initial value of the global parameter.
    """

    def __init__(self, n: int, model: LeafModel, s: float = 0.0) -> None:
        self.n = n
        self.model = model
        P = 1
        while P < n:
            P *= 2
        self.P = P
        self.s = float(s)
        self._cap = float(model.cap)
        self._dirty: set[int] = set()
        self.rebuild()

    # ------------------------------------------------------------------------------- leaves
    def _leaf(self, k: int) -> tuple[float, float, float, float]:
        """(Re)load leaf `k` from the model and find its active line at `s`."""
        lines, sig = self.model.lines(k)
        self._lines[k] = lines
        self._sig[k] = sig
        return self._piece(k)

    def signature(self, k: int) -> Any:
        """The signature of leaf `k` as last loaded from the model (see :meth:`LeafModel.lines`)."""
        return self._sig[k]

    def _piece(self, k: int) -> tuple[float, float, float, float]:
        """`(a, b, end, kmin)` of leaf `k` at `s`: its active line `a + b s`, the `s` up to which
        that line stays active (a lower bound), and the smallest slope of its lines."""
        s = self.s
        lines = self._lines[k]
        cap = self._cap
        if len(lines) == 1:
            a, b = lines[0]
            end = _INF
            kmin = b
        else:
            a, b = lines[0]
            v = a + b * s
            kmin = b
            for a2, b2 in lines:
                v2 = a2 + b2 * s
                if v2 < v or (v2 == v and b2 < b):
                    a, b, v = a2, b2, v2
                if b2 < kmin:
                    kmin = b2
            end = _INF
            for a2, b2 in lines:
                if b2 < b:  # a flatter line takes over where it crosses the active one
                    x = (a2 - a) / (b - b2)
                    if x < end:
                        end = x
            if end < _INF:
                end -= TAU * (1.0 + abs(end))
        if a + b * s >= cap:  # clipped for good (the value never decreases): constant
            a, b, end = cap, 0.0, _INF
        elif b > 0.0 and cap < _INF:
            x = (cap - a) / b  # the line reaches the cap
            x -= TAU * (1.0 + abs(x))
            if x < end:
                end = x
        t = (a, b, end if end > s else s, kmin)
        self._lf[k] = t
        return t

    def _mag(self, k: int) -> float:
        a, b, _, _ = self._lf[k]
        return abs(a) + b * self.s

    def _val(self, k: int) -> float:
        a, b, end, _ = self._lf[k]
        if self.s > end:
            a, b, end, _ = self._piece(k)
        return a + b * self.s

    # ------------------------------------------------------------------------------- nodes
    def _run(self, nodes: Any) -> None:
        """Recompute the internal nodes `nodes`, in that order (children before parents); a child
        subtree whose certificate expired is repaired first."""
        s = self.s
        P = self.P
        win = self._win
        cnt = self._cnt
        rel_ = self._rel
        own_ = self._own
        sub = self._sub
        lf = self._lf
        sig = self._sig
        cap = self._cap
        piece = self._piece
        for i in nodes:
            lc = i + i
            rc = lc + 1
            inner = lc < P
            if inner:
                if sub[lc] < s:
                    self._fix(lc)
                if sub[rc] < s:
                    self._fix(rc)
            x = win[lc]
            y = win[rc]
            ax, bx, ex, kx = lf[x]
            if s > ex:
                ax, bx, ex, kx = piece(x)
            ay, by, ey, ky = lf[y]
            if s > ey:
                ay, by, ey, ky = piece(y)
            vx = ax + bx * s
            vy = ay + by * s
            if vx == vy:
                if (not bx and not by) or sig[x] == sig[y]:
                    # equal constants or identical formulas: tied at every s (the left winner represents them)
                    win[i] = x
                    cnt[i] = cnt[lc] + cnt[rc]
                    rel_[i] = 2
                    own_[i] = _INF
                    if inner:
                        a_ = sub[lc]
                        c_ = sub[rc]
                        sub[i] = c_ if c_ < a_ else a_
                    else:
                        sub[i] = _INF
                else:
                    self._close(i, x, y, 2, bx, by)
                continue
            rel = 0
            if vy > vx:  # name the winner x
                x, y, ax, ay, bx, by, kx, vx, vy, rel = y, x, ay, ax, by, bx, ky, vy, vx, 1
            own = _INF
            if by and vy != -_INF and vx != _INF:
                tol = TAU * (2.0 + abs(ax) + abs(ay) + (bx + by) * s)
                gap = vx - vy
                if gap <= tol:  # too close for the linear model: the exact values decide
                    self._close(i, x, y, rel, bx, by)
                    continue
                # lower bound of the winner vs upper bound of the loser, both lines from s, with the
                # tolerance growing with s: strict while gap − tol + (kmin_w − b_l − TAU(b_w + b_l)) x > 0
                d = by + TAU * (bx + by)
                if bx:
                    d -= kx
                if d > 0.0:
                    own = s + (gap - tol) / d
                if cap < _INF:
                    x2 = s + (cap - vy - tol) / (by + TAU * (bx + by))
                    if x2 < own:
                        own = x2
                if own < s:
                    own = s
            elif not by and vx != _INF and vy != -_INF and vx - vy <= TAU * (2.0 + abs(ax) + abs(ay) + bx * s):
                self._close(i, x, y, rel, bx, by)  # a constant loser just below: check the exact values
                continue
            # else strict for good: a constant loser (+inf / -inf / at the cap / flat) below the winner
            win[i] = x
            cnt[i] = cnt[lc + rel]
            rel_[i] = rel
            own_[i] = own
            if inner:
                a_ = sub[lc]
                c_ = sub[rc]
                if c_ < a_:
                    a_ = c_
                sub[i] = own if own < a_ else a_
            else:
                sub[i] = own

    def _close(self, i: int, x: int, y: int, rel: int, bx: float, by: float) -> None:
        """Node `i` whose children's winners `x` (ahead by the linear model, or level with `y` when
        `rel == 2`) and `y` are too close to call: decide by signatures and exact values."""
        lc = i + i
        s = self.s
        own = _INF
        if self._sig[x] == self._sig[y]:
            rel = 2  # identical formulas: tied at every s
        else:
            m = self.model
            ex = m.exact(x, s)
            ey = m.exact(y, s)
            if ex == ey:
                if bx or by:
                    own = s  # a tie of different formulas: recheck at the next s
                rel = 2
            else:
                if ey > ex:
                    x, y, bx, by = y, x, by, bx
                rel = 0 if x == self._win[lc] else 1
                if by:
                    own = s  # recheck at the next s (a constant loser never catches up)
        cnt = self._cnt
        if rel == 2:
            self._win[i] = self._win[lc]  # the left child's winner represents a tie
            cnt[i] = cnt[lc] + cnt[lc + 1]
        else:
            self._win[i] = x
            cnt[i] = cnt[lc + rel]
        self._rel[i] = rel
        self._own[i] = own
        sub = self._sub
        sub[i] = min(own, sub[lc], sub[lc + 1]) if lc < self.P else own

    def rebuild(self) -> None:
        """Reload every leaf from the model and recompute every node at the current `s`."""
        P, n = self.P, self.n
        self._lines: list[Any] = [((-_INF, 0.0),)] * P
        self._sig: list[Any] = [("pad",)] * P
        self._lf: list[tuple[float, float, float, float]] = [(-_INF, 0.0, _INF, 0.0)] * P
        self._win = [0] * (2 * P)
        self._cnt = [0] * (2 * P)
        self._rel = [0] * P
        self._own = [_INF] * P
        self._sub = [_INF] * P
        self._dirty.clear()
        for k in range(n):
            self._leaf(k)
        for k in range(P):
            self._win[P + k] = k
            self._cnt[P + k] = 1 if k < n else 0
        self._run(range(P - 1, 0, -1))

    # ------------------------------------------------------------------------------- updates
    def update(self, k: int) -> None:
        """Leaf `k` changed (its model lines); the tree is repaired at the next query."""
        self._dirty.add(k)

    def set_s(self, s: float) -> None:
        """Move the global parameter to `s` (a decrease rebuilds the tree)."""
        s = float(s)
        if s < self.s:
            self.s = s
            self.rebuild()
        else:
            self.s = s

    def _settle(self) -> None:
        P = self.P
        if P == 1:
            if self._dirty:
                self._dirty.clear()
                self._leaf(0)
            return
        if self._dirty:
            dirty = sorted(self._dirty)
            self._dirty.clear()
            for k in dirty:
                self._leaf(k)
            for k in dirty:  # repair each changed leaf's path, bottom-up
                i = (k + P) >> 1
                path = []
                while i:
                    path.append(i)
                    i >>= 1
                self._run(path)
        if self._sub[1] < self.s:
            self._fix(1)

    def _fix(self, i: int) -> None:
        self._run((i,))

    # ------------------------------------------------------------------------------- queries
    def top(self) -> tuple[int, int]:
        """`(count, leaf)`: how many leaves share the maximum, and one of them."""
        self._settle()
        if self.P == 1:
            return 1, 0
        return self._cnt[1], self._win[1]

    def top_value(self) -> float:
        """The maximum by the linear model (call after :meth:`top`): exact for constants such as
        `±inf`, within `TAU` (relative) of the exact maximum otherwise."""
        return self._val(self._win[1] if self.P > 1 else 0)

    def max_value(self) -> float:
        """The exact maximum value (at the current `s`)."""
        c, k = self.top()
        return self.model.exact(k, self.s)

    def _descend(self, i: int, r: int) -> int:
        P = self.P
        rel, cnt = self._rel, self._cnt
        while i < P:
            lc = 2 * i
            t = rel[i]
            if t == 0:
                i = lc
            elif t == 1:
                i = lc + 1
            else:
                c = cnt[lc]
                if r < c:
                    i = lc
                else:
                    r -= c
                    i = lc + 1
        return i - P

    def select(self, r: int) -> int:
        """The `r`-th (0-based, in leaf order) of the leaves that share the maximum."""
        self._settle()
        if self.P == 1:
            return 0
        return self._descend(1, r)

    def _others(self, k: int) -> tuple[int, list[tuple[int, int]]]:
        """The maximum over every leaf but `k`: total tie count and the tied subtrees in leaf order."""
        self._settle()
        P = self.P
        s = self.s
        cnt, win, lf = self._cnt, self._win, self._lf
        i = k + P
        cands = []  # (first leaf, node, approx value, magnitude, flat)
        h = 0
        vmax = -_INF
        while i > 1:
            j = i ^ 1
            if cnt[j]:
                w = win[j]
                a, b, end, _ = lf[w]
                if s > end:
                    a, b, end, _ = self._piece(w)
                v = a + b * s
                cands.append(((j << h) - P, j, v, abs(a) + b * s, b == 0.0))
                if v > vmax:
                    vmax = v
            i >>= 1
            h += 1
        if not cands:
            return 0, []
        if vmax == _INF or vmax == -_INF:
            near = [c for c in cands if c[2] == vmax]
        else:
            mt = max(c[3] for c in cands if c[2] == vmax)
            near = [c for c in cands if vmax - c[2] <= TAU * (2.0 + mt + c[3])]
        if len(near) > 1:
            if all(c[4] for c in near):  # constants: their values are exact
                near = [c for c in near if c[2] == vmax]
            else:
                ex = [self.model.exact(win[c[1]], s) for c in near]
                m = max(ex)
                near = [c for c, e in zip(near, ex) if e == m]
            near.sort()
        return sum(cnt[c[1]] for c in near), [(c[1], cnt[c[1]]) for c in near]

    def top_excluding(self, k: int) -> tuple[int, int]:
        """`(count, leaf)` of the maximum over every leaf but `k` (count 0 when `n = 1`)."""
        total, subs = self._others(k)
        return (total, self._win[subs[0][0]]) if subs else (0, -1)

    def select_excluding(self, k: int, r: int) -> int:
        """The `r`-th (0-based, in leaf order) of the leaves other than `k` that share their maximum."""
        total, subs = self._others(k)
        for node, c in subs:
            if r < c:
                return self._descend(node, r) if node < self.P else node - self.P
            r -= c
        raise IndexError(f"r = {r} is out of range; accepted: 0..{total - 1}")
