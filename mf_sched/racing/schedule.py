"""The anytime schedule of racing: which run to train next, so that stopping at any moment is no worse than ASHA.

Racing (:mod:`mf_sched.racing.engine`, `rule="race"`) decides which runs may be *stopped for good*; it does not say
which run to train next. The order matters for a user who stops the study early: a best-first order (the most
promising run to the top first, as the racing rule's certificate wants) spends its first epochs on few runs,
while ASHA (Li et al. 2020, *A System for Massively Parallel Hyperparameter Tuning*, MLSys, Algorithm 2) looks
at many runs cheaply first. The anytime schedule does both, in this order of preference at every free worker:

1. **promote** (ASHA): a run paused at rung `m` whose value is among the best `⌊n_m / η⌋` of the `n_m` values
   recorded at `m` goes up one rung — the highest such rung first, then the best value
   (:meth:`~mf_sched.racing.engine.RungEliminator.promotable` without `keep_one`: the first runs at a rung wait
   until `η` values are recorded there, as in Algorithm 2 of Li et al.; letting the best of fewer go on at once
   spent a small budget on one run trained deep — `benchmarks.small_budget` measures both);
2. **start** a configuration not yet evaluated (at the first rung), in the order the proposer gives (a seeded
   random order for a finite grid, never the order in which choices were written);
3. **resume** (certification): once ASHA has nothing to do, the paused run that can still win and ranks first in
   the engine's `order` goes up one rung (:meth:`~mf_sched.racing.engine.RungEliminator.first`; the adapters' default
   `"depth"`: the highest rung, then the best value — the runs nearest to an answer finish first, which
   measured better than the best estimated final value), until every run is stopped by the rule or finished —
   then the answer carries the certificate.

Meanwhile the racing cut stops, at every report, the runs that cannot beat the best finished run. *Why this is
anytime:* until step 3 begins, the runs trained and the rungs they reach are ASHA's, except the runs the cut
stopped (which, on the bound's event, cannot become the answer); the answer rule
(:meth:`~mf_sched.racing.engine.RungEliminator.answer`) is ASHA's (the best latest value), so at any budget up to
the end of ASHA's work the answer is ASHA's or better, and afterwards every epoch goes to a run that can still beat the
answer. *Why it still certifies:* step 3 continues until no run that can still win is left below the top, which
is exactly the racing rule's condition for its certificate.

Example:
    >>> from mf_sched import FidelityLadder
    >>> from mf_sched.racing.engine import RungEliminator
    >>> eng = RungEliminator(FidelityLadder(costs=[1, 3, 9], zeta=[1, 1, 0], resources=[1, 3, 9]),
    ...                      rule="race", race_bias=[0.3, 0.1, 0.0])
    >>> for k, v in enumerate([0.5, 0.2, 0.4]):
    ...     eng.report(k, 0, v)
    >>> next_job(eng, eta=3, fresh=[3, 4], busy=())     # 0 is the best third of 3 at rung 0: promote it
    ('promote', 0, 1)
    >>> eng.report(0, 1, 0.6)
    >>> next_job(eng, eta=3, fresh=[3, 4], busy=())     # one value at rung 1 (< η): start a new configuration
    ('start', 3, 0)
    >>> next_job(eng, eta=3, fresh=[], busy=())         # ASHA's work is done: resume the most promising run
    ('resume', 0, 2)
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Sequence

from mf_sched.racing.engine import RUNNING, RungEliminator

__all__ = ["next_job", "SCHEDULES"]

#: ``"anytime"``: the schedule of this module; ``"best-first"``: every run to the first rung, then best-first
#: (the racing rule's order before the anytime schedule; kept for comparison)
SCHEDULES = ("anytime", "best-first")


def next_job(
    engine: RungEliminator,
    *,
    eta: float,
    fresh: Sequence[Hashable],
    busy: Collection[Hashable],
    schedule: str = "anytime",
    promote: bool = True,
) -> tuple[str, Hashable, int] | None:
    """The next unit of work: `(kind, run, rung to train it to)` with `kind` `"promote"`, `"start"` or
    `"resume"`, or None when nothing can be handed out now (every run that can still win is busy, or the race
    is over).

    Args:
        engine: the study's racing engine (its runs, values and statuses are read, never changed).
        eta: ASHA's reduction factor `η > 1`: a run in the best `⌊n_m / η⌋` at its rung is promoted.
        fresh: the configurations not yet evaluated, in the order to start them.
        busy: runs in flight (or runs not to schedule); never handed out.
        schedule: `"anytime"` (this module's order) or `"best-first"` (every configuration started first, then
            resumed best-first).
        promote: run step 1 (ASHA's promotions). `False` for objectives that cannot resume a run (an ordinary
            Optuna objective trains from scratch: there ASHA promotes a run as it reports, never later, as
            Optuna's `SuccessiveHalvingPruner` does).
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule = {schedule!r} is unknown; accepted: {', '.join(map(repr, SCHEDULES))}")
    busy_set = set(busy)
    if schedule == "anytime" and promote:
        for key in engine.promotable(eta, exclude=busy_set, keep_one=False):  # runs resume (promote=True)
            return "promote", key, engine.reached(key) + 1
    for key in fresh:
        if key not in busy_set and (key not in engine or engine.reached(key) < 0):
            return "start", key, 0
    top = engine.M - 1
    codes, reached, keys = engine.statuses(), engine.reached_all(), engine.keys
    paused = [k for k, c, r in zip(keys, codes.tolist(), reached.tolist()) if c == RUNNING and 0 <= r < top]
    key = engine.first([k for k in paused if k not in busy_set])
    return None if key is None else ("resume", key, engine.reached(key) + 1)
