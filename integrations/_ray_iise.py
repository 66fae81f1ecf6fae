"""IISE's elimination for the Ray schedulers (`rule="iise"`), apart from Ray.

IISE's symmetric rule (Poiani et al. 2022, Algorithm 1, Eq. 3: run `i` is eliminated at rung `m` when some run
`j` has `(v_j(m) − B_j(m)) − (v_i(m) + B_i(m)) ≥ 2ζ(m)`, `B` the confidence radii) is applied at the rungs of the ladder
(:meth:`~mf_sched.racing.engine.RungEliminator.decide_rung` and
:meth:`~mf_sched.racing.engine.RungEliminator.should_stop`). *Synchronous* (the default of `rule="iise"`): every
live trial pauses at each rung until all have arrived, then the rung is decided at once — the losers stop, the
others are released; a trial that leaves (fails, diverges, finishes) no longer holds its rung back, and when
every trial is paused with none running, the lowest rung is decided with the values present rather than letting
the experiment hang. *Asynchronous* (:class:`~mf_sched.integrations.ray.AsyncIISEScheduler`): each result is
decided against the values recorded so far, and no trial pauses.

Pausing needs checkpoints: a trial that would pause without one, or that resumed from scratch, raises
`RuntimeError` before any epoch is re-run.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from mf_sched.ladder import FidelityLadder
from mf_sched.racing.engine import RungEliminator

from ._common import RungArgs
from ._ray_core import CONTINUE, LIVE, PAUSE, PAUSED, PENDING, RUNNING, STOP, RungCore, RungSettings, Trials

__all__ = ["IISECore", "NEEDS_CHECKPOINT"]

#: how to make synchronous IISE's pauses safe, or which scheduler needs none
NEEDS_CHECKPOINT = (
    "Report a checkpoint with every tune.report(..., checkpoint=...) and restore it from tune.get_checkpoint() "
    "(class trainables do this by themselves), or use the default IISEScheduler() (racing), which pauses only "
    "trials that have a checkpoint, or AsyncIISEScheduler(ladder, rule='iise'), which never pauses."
)


class IISECore(RungCore):
    """IISE's elimination at the rungs, synchronous (a barrier at each rung) or asynchronous.

    Args:
        rungs: the rung arguments; the ladder must be known and carry ζ (checked by the scheduler).
        settings: the checked arguments; IISE reads `delta`, `n_trials`, `bias`, `eta` and `synchronous`.
        mode: `"max"` or `"min"`, or None until known.
        who: the scheduler's class name, for messages.
        time_attr: the result field that measures progress, for messages.
    """

    def __init__(self, rungs: RungArgs, settings: RungSettings, *, mode: str | None, who: str, time_attr: str) -> None:
        self._to_unpause: set[str] = set()  # released after a rung decision
        self._resumed_at: dict[str, float] = {}  # time_attr at which a released trial was paused
        super().__init__(rungs, settings, mode=mode, who=who, time_attr=time_attr)

    @property
    def kind(self) -> str:
        """`"synchronous IISE"` or `"asynchronous IISE"` (the progress lines)."""
        return "synchronous IISE" if self.settings.synchronous else "asynchronous IISE"

    def _new_engine(self, ladder: FidelityLadder, sigma: Any) -> RungEliminator:
        s = self.settings
        return RungEliminator(ladder, sigma=sigma, delta=s.delta, n_arms=s.n_trials, bias=s.bias, eta=s.eta)

    # ------------------------------------------------------------------ decisions
    def _result(self, key: str, t: float, v: float, can_pause: Callable[[], bool], trials: Trials) -> str:
        eng = self.engine
        assert eng is not None
        synchronous = self.settings.synchronous
        if key in self._paused and synchronous:
            return PAUSE  # still waiting for its rung's decision (e.g. after Tuner.restore)
        if key in self._resumed_at:
            at = self._resumed_at.pop(key)
            if t <= at + 1e-9:
                raise RuntimeError(
                    f"trial {key} was paused at {self.time_attr} = {at:g} and resumed at {t:g}: it restarted "
                    f"without a checkpoint and would re-run epochs. {NEEDS_CHECKPOINT}"
                )
        rung = self._rung_of(t)
        reached = eng.reached(key) if key in eng else -1
        if rung is None or rung <= reached:
            self._last[key] = (t, v)
            return CONTINUE
        if not math.isfinite(v):
            self._diverged(key, t, v)
            self._release(trials)  # the rung no longer waits for it
            return STOP
        self._record(key, t, v)
        if rung == self.ladder.top:  # type: ignore[union-attr]
            self._live.discard(key)
            self._release(trials)
            return STOP
        if not synchronous:
            if eng.should_stop(key):
                self._live.discard(key)
                return STOP
            return CONTINUE
        if self._rung_complete(rung):
            stopped = set(self._decide(trials, rung, current=key))
            if key in stopped:
                self._live.discard(key)
                return STOP
            return CONTINUE
        if not can_pause():
            # pausing it would restart it from scratch: refuse now, before any epoch is re-run
            raise RuntimeError(
                f"synchronous IISE pauses every trial at each rung, but trial {key} reported rung {rung} "
                f"({self.time_attr} = {t:g}) without a checkpoint: resumed, it would restart from scratch and "
                f"re-run epochs. {NEEDS_CHECKPOINT}"
            )
        self._paused[key] = rung
        return PAUSE

    def _rung_complete(self, rung: int) -> bool:
        eng = self.engine
        return all(k in eng and eng.reached(k) >= rung for k in self._live)  # type: ignore[operator]

    def _decide(self, trials: Trials, rung: int, current: str | None = None) -> list[str]:
        """Decide `rung` among the live trials waiting there; stop losers, release survivors."""
        eng = self.engine
        assert eng is not None
        # in registration order (never a set's order, which changes between processes with the hash seed)
        waiting = [k for k in eng.keys if k in self._live and eng.reached(k) == rung]
        if current is not None and current not in waiting:
            waiting.append(current)
        stopped = eng.decide_rung(rung, keys=waiting)
        for k in waiting:
            if k in self._paused and self._paused[k] == rung:
                del self._paused[k]
                if k in stopped or rung == self.ladder.top:  # type: ignore[union-attr]
                    self._live.discard(k)
                    if trials.status(k) in LIVE:
                        trials.stop(k)
                else:
                    self._to_unpause.add(k)
                    self._resumed_at[k] = self._last.get(k, (self.ladder.resources[rung], 0.0))[0]  # type: ignore[union-attr]
        for k in stopped:
            self._live.discard(k)
        return [str(k) for k in stopped]

    def _release(self, trials: Trials) -> None:
        """Decide every rung whose live trials have all arrived (after a trial left)."""
        if not self.settings.synchronous:
            return
        for rung in sorted(set(self._paused.values())):
            if self._rung_complete(rung):
                self._decide(trials, rung)

    def _after_drop(self, trials: Trials) -> None:
        self._release(trials)

    def choose(self, trials: Trials) -> str | None:
        """A trial not started (every trial's first rung; in the seeded random order,
        :meth:`~mf_sched.integrations._ray_core.RungCore.next_unstarted`), then a paused trial a rung decision
        released, then a trial the framework paused itself (no rung barrier holds it: a rung may be waiting for
        it); when every trial is paused and none runs, the lowest rung is decided first (:meth:`_unblock`).

        Args:
            trials: the framework's trials.
        """
        first = self.next_unstarted(trials)
        if first is not None:
            return first
        listing = trials.listing()
        for key, status in listing:
            if status == PENDING:  # added behind the scheduler's back
                return key
        paused = [k for k, status in listing if status == PAUSED]
        if not paused:
            return None
        for key in paused:
            if key in self._to_unpause:
                return key
        for key in paused:  # paused by the framework, not by a rung barrier: it goes on to its rung
            if key in self._live and key not in self._paused:
                return key
        if any(status == RUNNING for _, status in listing):
            return None
        # never all-PAUSED: decide the lowest rung with what is there
        return self._unblock(trials, paused)

    def _unblock(self, trials: Trials, paused: list[str]) -> str | None:
        """Nothing runs and every live trial is paused: decide the lowest rung with the values present, and
        stop paused trials nobody waits for (eliminated, or no longer live). The framework would otherwise
        hang."""
        eng = self.engine
        assert eng is not None
        for key in paused:
            if key not in self._live or (key in eng and eng.status(key) in ("stopped", "halted")):
                self._paused.pop(key, None)
                trials.stop(key)
        listing = trials.listing()
        paused = [k for k, status in listing if status == PAUSED]
        if not paused:
            return None
        rung = min(self._paused.get(k, 0) for k in paused)
        self._live &= {k for k, status in listing if status in LIVE}
        self._decide(trials, rung)
        for key, status in trials.listing():
            if status == PAUSED and key in self._to_unpause:
                return key
        return None

    # ------------------------------------------------------------------ bookkeeping of released trials
    def _running_again(self, key: str) -> None:
        self._to_unpause.discard(key)

    def _forgot(self, key: str) -> None:
        self._to_unpause.discard(key)
        self._resumed_at.pop(key, None)

    def _released_state(self) -> dict[str, Any]:
        return {"to_unpause": sorted(self._to_unpause), "resumed_at": dict(self._resumed_at)}

    def _load_released(self, state: dict[str, Any]) -> None:
        self._to_unpause = set(state.get("to_unpause", []))
        self._resumed_at = {str(k): float(v) for k, v in state.get("resumed_at", {}).items()}
