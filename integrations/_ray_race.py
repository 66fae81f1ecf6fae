"""Racing for the Ray schedulers (`rule="race"`, the default), apart from Ray.

A trial is stopped for good at a rung when even the optimistic bound on its final value is below the best
finished trial's value (:mod:`mf_sched.racing.engine`, the racing rule); which trial trains next follows the
anytime schedule (:mod:`mf_sched.racing.schedule`): ASHA's promotions (Li et al. 2020, MLSys, Algorithm 2) first,
then the trials not started, then — once ASHA has nothing left to do — the paused trials that can still win,
best-first, until each is stopped or finished, which certifies the answer. The bound is the user's, or the one
shipped for the metric's family (:func:`~mf_sched.integrations._common.auto_race_bias`), re-chosen when the values
reveal another family or the study grows into another size, and raised by the study's own curves.
"""

from __future__ import annotations

import heapq
import math
import warnings
from collections.abc import Callable
from typing import Any

from mf_sched.ladder import FidelityLadder
from mf_sched.racing.bias import metric_transform
from mf_sched.racing.engine import RungCertificate, RungEliminator

from ._common import RungArgs, auto_race_bias, no_family_message
from ._ray_core import (
    CONTINUE,
    ERROR,
    PAUSE,
    PAUSED,
    PENDING,
    RUNNING,
    STOP,
    TERMINATED,
    RungCore,
    RungSettings,
    Trials,
)

__all__ = ["RaceCore"]


def _k_bucket(n: int | None) -> int:
    """Which study size of the shipped bound a count of trials selects (0: unknown)."""
    return 0 if n is None else (8 if n < 24 else 24 if n < 64 else 64)


class RaceCore(RungCore):
    """Racing with the anytime schedule: continue, pause (while better work waits) or stop each trial's result;
    resume ASHA's promotions, then new trials, then the paused trial that ranks first.

    Args:
        rungs: the rung arguments (see :class:`~mf_sched.integrations._ray_core.RungCore`).
        settings: the checked arguments; racing reads `delta`, `n_trials`, `fixed_arms`, `order`, `pause`,
            `schedule`, `tolerance`, `metric_family`, `bound` and `reduction_factor`.
        mode: `"max"` or `"min"`, or None until known.
        who: the scheduler's class name, for messages.
        time_attr: the result field that measures progress, for messages.
    """

    def __init__(self, rungs: RungArgs, settings: RungSettings, *, mode: str | None, who: str, time_attr: str) -> None:
        self._bias_key: tuple[Any, ...] | None = None  # (family, K bucket) the shipped bound was chosen for
        self._warned_family = False
        self._auto_bias = False  # the bound is the shipped one (re-chosen as the study grows)
        self._family_values = 0  # how many values the bound's family was last read from
        self._heap: list[tuple[float, int, str]] = []  # paused trials by priority (lazy: stale entries skipped)
        self._heap_bias: Any = None  # the ζ⁺ the heap's priorities were computed with
        super().__init__(rungs, settings, mode=mode, who=who, time_attr=time_attr)

    @property
    def kind(self) -> str:
        """`"racing"` (the progress lines)."""
        return "racing"

    # ------------------------------------------------------------------ the bound
    def _new_engine(self, ladder: FidelityLadder, sigma: Any) -> RungEliminator:
        s = self.settings
        bias = self.rungs.given_bias(ladder.M)
        self._auto_bias = bias is None
        self._family_values = len(self._values)
        if bias is None:
            bias = self._shipped_bias()
        return RungEliminator(ladder, sigma=sigma, rule="race", race_bias=bias, refine=self._auto_bias,
                              delta=s.delta, n_arms=s.n_trials, fixed_arms=s.fixed_arms, order=s.order)  # fmt: skip

    def _n_arms(self) -> int | None:
        """The study size the shipped bound is chosen for: `n_trials`, else the trials added so far."""
        n = self.settings.n_trials
        return int(n) if n is not None else (len(self._order) or None)

    def _shipped_bias(self) -> Any:
        """The shipped bound for the metric family of the values reported so far (see :func:`auto_race_bias`);
        warns once when no family fits."""
        s, lad, mode = self.settings, self.ladder, self.mode or "max"
        assert lad is not None
        fam = metric_transform(self._values, mode, s.metric_family)
        K = self._n_arms()
        self._bias_key = (None if fam is None else fam.kind, _k_bucket(K))
        if fam is None and any(math.isfinite(v) for v in self._values) and not self._warned_family:
            self._warned_family = True
            warnings.warn(no_family_message(mode, self.who), stacklevel=7)  # at on_trial_complete
        return auto_race_bias(lad, self._values, mode, n_arms=K, alpha=float(s.delta), tolerance=s.tolerance,
                              family=s.metric_family, bound=s.bound, fit=self.rungs.fit)  # fmt: skip

    def _refresh_bias(self) -> None:
        """With the shipped bound: re-choose it when the metric's values reveal another family (a loss that first
        reported values below 1), or the study grew into another size bucket of the bound; never back to "no
        bound" once a family fitted. A bound the study's curves raised keeps its raised λ."""
        if not self._auto_bias or self.engine is None:
            return
        if (
            len(self._values) < 2 * max(1, self._family_values)
            and self._bias_key is not None
            and (self._bias_key[1] == _k_bucket(self._n_arms()))
        ):
            return
        self._family_values = len(self._values)
        fam = metric_transform(self._values, self.mode or "max", self.settings.metric_family)
        key = (None if fam is None else fam.kind, _k_bucket(self._n_arms()))
        if key == self._bias_key or fam is None:
            return
        new = self._shipped_bias()
        old = self.engine.curve_bound
        if old is not None and old.raised_by and getattr(new, "lam", None) is not None and new.lam < old.lam:
            new = new.raised(old.lam, old.raised_by)
        self.engine.set_race_bias(new)

    def _restored_engine(self, state: dict[str, Any]) -> None:
        self._auto_bias = self.rungs.race_bias is None
        self._family_values = len(state.get("values", []))

    # ------------------------------------------------------------------ decisions
    def _result(self, key: str, t: float, v: float, can_pause: Callable[[], bool], trials: Trials) -> str:
        eng = self.engine
        if eng is None:
            self._pending_curves.setdefault(key, []).append((t, v))
            self._last[key] = (t, v)
            return CONTINUE
        self._paused.pop(key, None)
        self._refresh_bias()
        rung = self._rung_of(t)
        before = eng.reached(key) if key in eng else -1
        if rung is None or rung <= before:
            self._last[key] = (t, v)
            return CONTINUE  # between rungs
        if not math.isfinite(v):
            self._diverged(key, t, v)
            return STOP
        self._record(key, t, v)
        if rung == self.ladder.top:  # type: ignore[union-attr]
            self.forget(key)
            self.after_finish(trials)
            return STOP
        if eng.should_stop(key):
            self.forget(key)
            return STOP
        if self.settings.pause and can_pause() and self._should_pause(key, trials):
            self._paused[key] = rung
            heapq.heappush(self._heap, (-eng.priority(key), self._arrival(key), key))
            return PAUSE
        return CONTINUE

    def _should_pause(self, key: str, trials: Trials) -> bool:
        """The anytime schedule (:mod:`mf_sched.racing.schedule`): a trial that ASHA would promote goes on at
        once; else it pauses when other work waits — a trial not started, a paused trial ASHA would promote, or
        (once ASHA's work is done) a paused trial with a higher priority. `"best-first"`: the last two only."""
        eng = self.engine
        assert eng is not None
        if self.settings.schedule == "best-first":
            return self._better_waiting(key, trials)
        promos = eng.promotable(self.settings.reduction_factor, keep_one=False)  # trials resume: Algorithm 2
        if key in promos:
            return False
        if any(trials.status(k) == PAUSED for k in promos):
            return True
        return self._better_waiting(key, trials)

    def _better_waiting(self, key: str, trials: Trials) -> bool:
        """A trial not started yet, or a paused one with a higher priority (`order`), waits for a worker.
        O(trials not started + trials paused), not O(all trials)."""
        eng = self.engine
        assert eng is not None
        if any(self.waiting_to_start(k, trials) for k in self._unstarted if k != key):
            return True
        best = self._best_paused(trials)
        return best is not None and best != key and eng.priority(best) > eng.priority(key)

    def after_finish(self, trials: Trials) -> None:
        """Race every live trial against the incumbent; stop the paused losers without resuming them.

        Args:
            trials: the framework's trials.
        """
        eng = self.engine
        if eng is None:
            return
        cb = eng.curve_bound
        if cb is not None and (cb.raised_by or cb.evidence is not None):
            # the study's curves raised the bound (a violation, or the bound learned from them widened) and the engine
            # gave stopped runs back; a trial the framework has ended cannot run again: it is uncovered (the
            # certificate lists it and is not certified)
            gone = (TERMINATED, ERROR)
            ended = [k for k in eng.keys if eng.status(k) == "running" and k not in self._live
                     and k not in self._unstarted and trials.status(k) in gone]  # fmt: skip
            eng.mark_lost_many(ended)
        stopped = set(eng.eliminate())
        if not stopped:
            return
        for key, status in trials.listing():
            if key in stopped and status in (PAUSED, PENDING):
                self.forget(key)
                trials.stop(key)

    def _complete_before_rungs(self, key: str, t: Any, v: float) -> None:
        self._pending_curves.setdefault(key, []).append((float(t), v))
        self.ensure_ladder(float(t))  # the first completed trial fixes the maximum resource

    # ------------------------------------------------------------------ which trial runs next
    def _best_paused(self, trials: Trials) -> str | None:
        """The paused trial that ranks first, from the lazy heap (stale entries are dropped, entries whose
        priority changed are re-pushed: bookkeeping only, the same answer as a full ranking)."""
        eng = self.engine
        if eng is None:
            return next((k for k in self._paused if trials.status(k) == PAUSED), None)
        bias = eng.curve_bound if eng.curve_bound is not None else eng.race_bias
        if self._heap_bias is not bias:  # the bound changed (refined, another family): every priority did
            self._heap = [(-eng.priority(k), self._arrival(k), k) for k in self._paused if k in eng]
            heapq.heapify(self._heap)
            self._heap_bias = bias
        h = self._heap
        while h:
            negp, arrival, key = h[0]
            if key not in self._paused or trials.status(key) != PAUSED or eng.status(key) != "running":
                heapq.heappop(h)
                continue
            p = eng.priority(key)
            if -negp != p:
                heapq.heapreplace(h, (-p, arrival, key))
                continue
            return key
        return None

    def choose(self, trials: Trials) -> str | None:
        """A paused trial ASHA would promote (`schedule="anytime"`), else a trial not started (in the seeded random
        order, :meth:`~mf_sched.integrations._ray_core.RungCore.next_unstarted`), else the paused trial that ranks
        first; all trials are scanned only when none is found (a trial the framework added or paused behind the
        scheduler's back must not be left waiting).

        Args:
            trials: the framework's trials.
        """
        eng = self.engine
        if eng is not None and self.settings.schedule == "anytime":
            for key in eng.promotable(self.settings.reduction_factor, keep_one=False):  # ASHA's promotions first
                if trials.status(key) == PAUSED:
                    return key
        new = self.next_unstarted(trials)
        if new is not None:
            return new
        best = self._best_paused(trials)
        if best is not None:
            return best
        listing = trials.listing()
        for key, status in listing:
            if status == PENDING:
                return key
        others = [k for k, status in listing if status == PAUSED]
        live = [k for k in others if eng is None or k not in eng or eng.status(k) == "running"]
        if live:
            best = eng.first([k for k in live if k in eng]) if eng is not None else None
            return next((k for k in live if k == best), live[0])
        if others and not any(status == RUNNING for _, status in listing):
            return others[0]  # eliminated but not yet stopped (a restore): it stops at its next result
        return None

    # ------------------------------------------------------------------ what the user reads
    def _leader(self, cert: RungCertificate) -> tuple[Any, float]:
        return self.engine.incumbent()  # type: ignore[union-attr]

    def _incumbent_fields(self, out: dict[str, Any], sign: float, word: str, top: int) -> None:
        eng = self.engine
        assert eng is not None
        inc, lcb = eng.incumbent()
        if inc is not None:
            out.update(
                {"race/incumbent": str(inc), "race/incumbent_value": sign * eng.value(inc, top), word: sign * lcb}
            )  # type: ignore[operator]

    def _optimistic(self, key: str) -> float | None:
        return self.engine.upper_bound(key)  # type: ignore[union-attr]
