"""How MFSampler's workers claim a pull, so that two never train the same configuration at once (Optuna glue).

Storage is the only state Optuna's worker processes share. A worker decides what its new trial runs from the trials
it reads, writes its *claim* — the trial's `mf:arm` and `mf:fidelity` system attributes (:func:`set_pull`) — and
then checks for a clash (:func:`lost_race`): another trial that claimed the same pull without the decision having
seen that claim (:func:`claims_seen`), so that both may have decided at once. Every worker writes its claim before
it checks, so of two such trials at least one sees the other's and withdraws; a worker that withdrew decides again
after a short random pause, up to four times, and then takes nothing this time: a *surplus* trial (`mf:surplus`),
pruned at once. A worker that finds every open configuration held by others starts a surplus trial too; from the
second in a row it waits first — 50 ms, doubling up to 2 s — rather than flood the storage (:class:`Claims`).

Optuna starts a trial's heartbeat only after the sampler has decided; :func:`deciding` beats from the start of the
decision, so that a worker killed while deciding leaves a trial that the heartbeat fails like any other, and fails
the trial when the decision raises (Optuna never gets such a trial back to end it).
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.trial import FrozenTrial, TrialState

from ._optuna_race import ARM, DISCOVERING, DISCOVERY, FIDELITY, REPLICA, SURPLUS
from ._optuna_space import _grid
from ._optuna_study import stop_study

__all__ = [
    "LIVE",
    "CLAIMED",
    "Claims",
    "claims_seen",
    "deciding",
    "decision_heartbeat",
    "distinct_discovery_value",
    "lost_discovery",
    "lost_race",
    "set_pull",
]

_SURPLUS_BACKOFF_S = 0.05  # the pause after a second surplus trial in a row; it doubles with each further one
_SURPLUS_BACKOFF_MAX_S = 2.0

LIVE = (TrialState.RUNNING, TrialState.WAITING)
"""The states of trials that hold their pull: running, or a retry waiting with the failed trial's pull."""
CLAIMED = (TrialState.RUNNING, TrialState.WAITING, TrialState.COMPLETE, TrialState.PRUNED)
"""The states of trials whose pull racing never hands out again (racing hands a pull out once)."""

Decision = tuple[int | None, int, set[Any], str]
"""`(arm, fidelity, claims seen, kind)` of a new trial (see :meth:`Claims.claim`)."""


def decision_heartbeat(storage: Any, trial_id: int) -> threading.Event | None:
    """Record the trial's heartbeat now and every heartbeat interval until the returned event is set.

    `record_heartbeat` / `get_heartbeat_interval` are the storage's public heartbeat methods; Optuna's own heartbeat
    thread is private (`optuna.storages._heartbeat`).

    Args:
        storage: the study's storage.
        trial_id: the storage's id of the trial being decided.

    Returns:
        The event that stops the beating thread; None, and nothing done, when the storage has no heartbeat.
    """
    interval = getattr(storage, "get_heartbeat_interval", lambda: None)()
    if interval is None:
        return None
    storage.record_heartbeat(trial_id)
    done = threading.Event()

    def beat() -> None:
        while not done.wait(interval):
            try:
                storage.record_heartbeat(trial_id)
            except Exception:  # pragma: no cover - the storage is failing: the trial will be taken as dead
                return

    threading.Thread(target=beat, name=f"mf-sched decision heartbeat {trial_id}", daemon=True).start()
    return done


@contextlib.contextmanager
def deciding(storage: Any, trial_id: int) -> Iterator[None]:
    """The context of a sampler's decision about a new trial (`MFSampler.before_trial`).

    Optuna starts a trial's heartbeat only after the sampler has decided (`study.ask()` returns): a worker killed
    while MFSampler decided left a RUNNING trial with no heartbeat that nothing ever failed (issue 24). Inside this
    context the trial beats from the start of the decision (:func:`decision_heartbeat`), so that the heartbeat fails
    such a trial after its grace period like any other, and keeps beating while the decision lasts (a slow one, or
    the back-off's pause, must not be taken for a dead worker). An error or Ctrl-C inside fails the trial — Optuna
    never gets it back to end it, since `study.ask()` raised — as Optuna fails a trial whose objective is
    interrupted, and goes on.

    Args:
        storage: the study's storage.
        trial_id: the storage's id of the trial being decided.

    Yields:
        Nothing; the decision runs in the `with` block.
    """
    beating = decision_heartbeat(storage, trial_id)
    try:
        yield
    except BaseException:
        try:
            storage.set_trial_state_values(trial_id, TrialState.FAIL)
        except Exception:  # pragma: no cover - the storage itself is failing: the heartbeat will end it
            pass
        raise
    finally:
        if beating is not None:
            beating.set()


def claims_seen(trials: Sequence[FrozenTrial], number: int, states: Sequence[TrialState] = LIVE) -> set[Any]:
    """The claims of the other trials that a decision taken on `trials` sees.

    A RUNNING trial whose worker is still deciding (or deciding again, after a clash) has no claim yet, or another
    one, and is not covered by it.

    Args:
        trials: the trials the decision read.
        number: the number of the trial being decided (left out).
        states: the states whose claims count: by default RUNNING trials and WAITING retries that carry the failed
            trial's pull (:data:`LIVE`); racing uses :data:`CLAIMED`.

    Returns:
        `{(trial number, arm, fidelity)}` of the other trials in `states` that carry an `mf:arm`.
    """
    return {
        (t.number, t.system_attrs.get(ARM), t.system_attrs.get(FIDELITY))
        for t in trials
        if t.number != number and t.state in states and t.system_attrs.get(ARM) is not None
    }


def set_pull(study: optuna.Study, trial: FrozenTrial, arm: int | None, fid: int) -> None:
    """Write (or withdraw) a trial's claim: its `mf:arm` and `mf:fidelity` system attributes.

    Args:
        study: the study of `trial`.
        trial: the new trial.
        arm: the candidate it evaluates; None: no candidate (withdrawn, or the fallback samples it).
        fid: the rung index it trains to; `-1`: the top, while the ladder is not known yet.
    """
    study._storage.set_trial_system_attr(trial._trial_id, ARM, None if arm is None else int(arm))
    study._storage.set_trial_system_attr(trial._trial_id, FIDELITY, int(fid))


def lost_discovery(study: optuna.Study, trial: FrozenTrial, arm: int, seen: set[Any]) -> bool:
    """Whether another trial — lower- or higher-numbered — took the same discovery arm.

    The decision gave `trial` an arm no trial held when it read the study
    (:meth:`~mf_sched.integrations._optuna_arms.StudyArms.discovery_arm`), so another trial holding it now decided at
    the same time. Every worker writes its slot before it checks, so of two such trials at least one sees the other
    and decides again (both may). The check used to look at lower-numbered trials only: a lower-numbered trial that
    wrote its slot after the higher one had checked kept it too, and two journal-file workers ran discovery slot 2.

    Args:
        study: the study.
        trial: the trial that took discovery arm `arm` (`mf:discovery`).
        arm: the arm it took.
        seen: the claims the decision saw (:func:`claims_seen`; unused: no trial held `arm` then).

    Returns:
        True when `trial` must give the arm up and decide again.
    """
    for t in study._storage.get_all_trials(study._study_id, deepcopy=False):
        if t.number != trial.number and t.system_attrs.get(DISCOVERY) == arm:
            return True
    return False


def distinct_discovery_value(
    study: optuna.Study, trial: FrozenTrial, name: str, dist: BaseDistribution, draw: Callable[[], Any],
    arm_params: Callable[[FrozenTrial], Mapping[str, Any] | None], rng: random.Random,
) -> Any:  # fmt: skip
    """The value of `name` for a discovery trial (started before the search space was known): the proposer's,
    re-drawn where another trial would otherwise train the same configuration.

    Before the space is known each worker's first trial is sampled by its own proposer: workers started together
    with the same seed (four processes with `MFSampler(seed=0)`), or threads whose draws happened to agree, trained
    the same configuration to the top at the same time. The proposer still samples these trials — the first trial
    is the proposer's, as documented, and a trial alone draws exactly once, as before — but the value of a
    parameter is re-drawn (up to 16 times, then a value of the grid that no rival holds) while it equals the value
    of a *rival*: another trial, not failed, that has the same values as this trial for every parameter this trial
    has suggested so far (so the configurations would still agree), as read from the storage — its parameters, the
    value it is about to suggest (`mf:discovering`) and, for a trial that claimed an arm, the arm's configuration.
    Parameters are compared one at a time, as they are suggested: whichever of two trials suggests a parameter
    second avoids the first's value, so no waiting for the other trial is needed (deferring to a running discovery
    trial until its search space is known would idle workers for as long as that trial takes to suggest
    everything). Two trials that suggest the same parameter at once are told apart as claims are
    (:func:`lost_race`): each writes its value (`mf:discovering`) before it checks, so of two that chose alike at
    least one sees the other's value, one it did not see when it chose, and chooses again after a short random
    pause (up to four times).

    Args:
        study: the study.
        trial: the discovery trial (its parameters so far).
        name: the parameter being suggested.
        dist: its distribution.
        draw: the proposer's draw of the value.
        arm_params: the configuration of the arm a trial claimed, if known (else None).
        rng: the random pause before choosing again.

    Returns:
        The value.
    """
    mine = {q: float(trial.distributions[q].to_internal_repr(v)) for q, v in trial.params.items()}

    def key(d: BaseDistribution, v: Any) -> Any:
        try:
            return float(d.to_internal_repr(v))
        except (ValueError, TypeError):  # a value outside this trial's distribution: never equal
            return None

    def taken() -> dict[int, Any]:
        """The value of `name` of each rival that has one (by trial number)."""
        out: dict[int, Any] = {}
        for t in study._storage.get_all_trials(study._study_id, deepcopy=False):
            if t.number == trial.number or t.state == TrialState.FAIL or t.system_attrs.get(SURPLUS):
                continue
            values: dict[str, Any] = {}
            arm = arm_params(t) if t.system_attrs.get(ARM) is not None else None
            for q, v in (arm or {}).items():
                values[q] = key(dist if q == name else trial.distributions.get(q, dist), v)
            pending = t.system_attrs.get(DISCOVERING)
            if isinstance(pending, dict):
                values.update(pending)
            for q, v in t.params.items():
                values[q] = float(t.distributions[q].to_internal_repr(v))
            if name in values and all(values.get(q) == v for q, v in mine.items()):
                out[t.number] = values[name]
        return out

    value: Any = None
    for _ in range(4):
        held = taken()
        avoid = set(held.values())
        for _ in range(16):
            value = draw()
            if key(dist, value) not in avoid:
                break
        else:
            free = [v for v in _grid(dist, 10**6) or () if key(dist, v) not in avoid]
            if free:
                value = free[rng.randrange(len(free))]
        k = key(dist, value)
        study._storage.set_trial_system_attr(trial._trial_id, DISCOVERING, {**mine, name: k})
        if not any(v == k and held.get(n) != k for n, v in taken().items()):
            return value
        time.sleep(rng.uniform(0.0, 0.01))  # chose at the same time as another trial: choose again
    return value


def lost_race(
    study: optuna.Study, trial: FrozenTrial, arm: int, fid: int, seen: set[Any], *, race: bool
) -> bool:  # fmt: skip
    """Whether another trial — lower- or higher-numbered — claimed the same pull without our decision having seen
    that claim, so that both may have decided at once.

    Every worker writes its claim before it checks, so of two such trials at least one sees the other's claim and
    withdraws: a pull is never kept by both (issue 24: the check used to look at lower-numbered trials only and skip
    any trial that was RUNNING when we decided, even one still deciding, with no claim yet — then two journal-file
    workers each trained the same configuration to the top). Both may withdraw (each then decides again, after a
    short random pause). Racing hands a pull out once, so a trial that took it and has already ended (COMPLETE or
    PRUNED: a fast one, while our claim was being written) counts as well; the other policies may repeat a pull, and
    only trials that hold theirs (RUNNING, WAITING) count. Racing runs one trial per configuration at a time, so
    there a claim on the same configuration at another fidelity clashes too (a journal-file run had trained a
    configuration to the top twice, claimed once as "the top, not known yet" and once as the top rung).

    Args:
        study: the study.
        trial: the trial whose claim was just written.
        arm: the candidate it claimed.
        fid: the fidelity it claimed (`-1`: the top, not known yet).
        seen: the claims visible when it decided (:func:`claims_seen`).
        race: whether the policy is `"race"` (the rules above differ).

    Returns:
        True when `trial` must withdraw its claim and decide again.
    """
    states = CLAIMED if race else LIVE
    for t in study._storage.get_all_trials(study._study_id, deepcopy=False, states=states):
        if t.number == trial.number or t.system_attrs.get(ARM) != arm:
            continue
        other = t.system_attrs.get(FIDELITY)
        # racing: one trial at a time per configuration, whatever the fidelity (-1: "the top, not known yet")
        if (race or other == fid) and (t.number, arm, other) not in seen:
            return True
    return False


class Claims:
    """One MFSampler's claiming of pulls (see the module docstring): the loop that decides, claims and checks, and
    the back-off after surplus trials (the streak is this process's)."""

    def __init__(self) -> None:
        self.surplus_streak = 0  # surplus trials in a row in this process (their back-off grows)
        self._rng = random.Random()  # the pause before deciding again after a clash with another worker

    def claim(
        self, study: optuna.Study, trial: FrozenTrial, decide: Callable[[optuna.Study, FrozenTrial], Decision],
        lock: Any, *, race: bool, keep_sampling: bool,
    ) -> None:  # fmt: skip
        """Decide the new trial's pull and claim it, checking against the decisions other workers made meanwhile.

        Args:
            study: the study.
            trial: the new trial (RUNNING, no pull yet).
            decide: the decision for `trial`, taken on the trials as they are now: `(arm, fidelity, claims seen,
                kind)`. Racing's kinds: `"pull"`, `"surplus"` (nothing to hand out while others run), `"done"` (the
                race is over), `"explore"` (the fallback samples it) and `"discovery"` (the space is unknown: `arm`
                is the discovery arm, or None). Another policy's: `"pull"` or `"replica"` (a copy of a running pull
                at the policy's barrier).
            lock: the sampler's lock, held while deciding and claiming (not while backing off).
            race: whether the policy is `"race"` (a pull is handed out once: see :func:`lost_race`).
            keep_sampling: once the race is over, the fallback samples the new trial instead of the study stopping.
        """
        with lock:
            for _ in range(4):  # claim, then verify against decisions other processes made meanwhile
                arm, fid, seen, kind = decide(study, trial)
                if kind == "explore":
                    set_pull(study, trial, None, fid)  # the fallback samples it
                    return
                if kind == "discovery":  # the proposer samples it (the fallback without one)
                    set_pull(study, trial, None, fid)
                    if arm is None:
                        return
                    study._storage.set_trial_system_attr(trial._trial_id, DISCOVERY, int(arm))
                    if not lost_discovery(study, trial, arm, seen):
                        return
                    time.sleep(self._rng.uniform(0.0, 0.01))  # decided at the same time as another worker
                    continue
                if race:  # the streak counts racing's decisions (another policy's pull leaves it)
                    self.surplus_streak = self.surplus_streak + 1 if kind == "surplus" else 0
                if kind in ("surplus", "done"):
                    set_pull(study, trial, None, fid)  # with keep_sampling, the fallback explores at the top
                    if kind == "done" and keep_sampling:
                        return
                    study._storage.set_trial_system_attr(trial._trial_id, SURPLUS, True)
                    if kind == "done":
                        stop_study(study)
                    break
                set_pull(study, trial, arm, fid)
                if kind == "replica":
                    study._storage.set_trial_system_attr(trial._trial_id, REPLICA, True)
                    return
                if arm is None or not lost_race(study, trial, arm, fid, seen, race=race):
                    return
                set_pull(study, trial, None, fid)  # withdraw the claim, then decide again (after a short pause)
                time.sleep(self._rng.uniform(0.0, 0.01))
            else:  # four decisions in a row taken at the same time as another worker's: take nothing this time
                study._storage.set_trial_system_attr(trial._trial_id, SURPLUS, True)
                self.surplus_streak += 1
        if self.surplus_streak > 1:
            # nothing to hand out again: another worker holds every open configuration (a slow trial, or a dead
            # one that stale_after or the heartbeat has not yet freed). Back off (50 ms doubling to 2 s) instead
            # of filling the storage with surplus trials; outside the lock, so other threads go on.
            time.sleep(min(_SURPLUS_BACKOFF_MAX_S, _SURPLUS_BACKOFF_S * 2.0 ** (self.surplus_streak - 2)))
