"""Process pools that stop cleanly on Ctrl-C.

`concurrent.futures.ProcessPoolExecutor` waits for every submitted job when its `with` block is left by
an exception, so a `KeyboardInterrupt` during :func:`mf_sched.sim.simulate.run_many` used to leave the
workers taking the next jobs (and, on an instance where a policy never stops, never exiting).
:func:`process_pool` starts the workers with `SIGINT` kept from them until they ignore it (Ctrl-C reaches
the whole process group; only the parent should react; a Ctrl-C while they start is not lost), and when the
block is left by any exception it cancels the pending jobs and terminates the workers it started before
re-raising.

:func:`run_seeded` is what the simulators' `run_many` functions share: one job per child of
`SeedSequence(seed)`, in this process or in a :func:`process_pool`, with a progress bar, and the results in
run order whatever the number of workers (each job's randomness comes only from its own child seed).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

import numpy as np

from mf_sched._progress import Progress
from mf_sched._validate import check_int, check_optional_int

__all__ = ["process_pool", "run_seeded", "split_seed"]

R = TypeVar("R")


def _ignore_sigint() -> None:  # pragma: no cover - runs in the worker processes
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # discards a Ctrl-C left pending since the worker's birth
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked from birth: see _sigint_deferred


def _noop(i: int) -> int:  # pragma: no cover - runs in the worker processes
    return i


@contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Keep SIGINT from the processes started meanwhile until their initializer ignores it, without losing a
    Ctrl-C that arrives in the meantime (main thread only; elsewhere a no-op).

    For the duration, a Ctrl-C that reaches this process is only recorded (and, where the platform has
    `pthread_sigmask`, SIGINT is blocked in this thread, so the processes started meanwhile are born with it
    blocked: a Ctrl-C sent to the whole group stays pending in a worker until its initializer ignores it, which
    discards it). When the block ends, a recorded Ctrl-C is handed to the previous handler — KeyboardInterrupt by
    default — so it stops the caller as it would have a moment earlier, but never in the middle of starting a
    worker (a worker whose start was cut short printed a traceback). Before, SIGINT was *ignored* for the
    duration, and a Ctrl-C sent while the workers were being started was lost: a run that never ends went on."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    blocks = hasattr(signal, "pthread_sigmask")
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if blocks else None
    try:
        yield
    finally:
        if blocks:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)  # type: ignore[arg-type] # a pending one: recorded
        signal.signal(signal.SIGINT, previous)
    if caught:
        if callable(previous):
            previous(signal.SIGINT, None)  # default_int_handler: KeyboardInterrupt
        elif previous == signal.SIG_DFL:  # pragma: no cover - a process that set the default action itself
            signal.raise_signal(signal.SIGINT)


@contextmanager
def process_pool(n_workers: int) -> Iterator[ProcessPoolExecutor]:
    """A spawn-context :class:`~concurrent.futures.ProcessPoolExecutor` with `n_workers` workers that
    ignore `SIGINT`; leaving the block by an exception (`KeyboardInterrupt` included) cancels the pending
    jobs and terminates the workers.

    >>> with process_pool(1) as ex:
    ...     list(ex.map(abs, [-1, 2]))
    [1, 2]
    """
    check_int("n_workers", n_workers)
    before = set(multiprocessing.active_children())
    ex = ProcessPoolExecutor(
        max_workers=n_workers, mp_context=multiprocessing.get_context("spawn"), initializer=_ignore_sigint
    )
    try:
        # start every worker now, with SIGINT kept from it from birth (a Ctrl-C while a worker is still importing
        # would otherwise print its traceback); each submission with no idle worker starts one
        with _sigint_deferred():
            warm = [ex.submit(_noop, i) for i in range(n_workers)]
        for f in warm:
            f.result()
        yield ex
    except BaseException:
        ex.shutdown(wait=False, cancel_futures=True)
        mine = [p for p in multiprocessing.active_children() if p not in before]
        for p in mine:
            p.terminate()
        for p in mine:
            p.join(timeout=10)
        raise
    ex.shutdown(wait=True)


def split_seed(ss: np.random.SeedSequence) -> tuple[int, np.random.SeedSequence]:
    """A run's seed split into the policy's integer seed and the observations' seed sequence.

    >>> pol, obs = split_seed(np.random.SeedSequence(0)); isinstance(pol, int), type(obs).__name__
    (True, 'SeedSequence')
    """
    pol_seed, obs_seed = ss.spawn(2)
    return int(pol_seed.generate_state(1, dtype=np.uint32)[0]), obs_seed


def run_seeded(
    job: Callable[[np.random.SeedSequence], R],
    *,
    seed: int,
    runs: int,
    n_jobs: int | None = 1,
    label: str,
    progress: bool = True,
) -> list[R]:
    """`[job(ss) for ss in SeedSequence(seed).spawn(runs)]`, on `n_jobs` worker processes (`None`: all
    CPUs; 1, or a single run: in this process) with a progress bar labelled `label`.

    The results come in run order and do not depend on `n_jobs` (a job's randomness is its own child seed).
    With workers, `job` must be picklable (a module-level function, or a :func:`functools.partial` of one);
    the jobs go out in chunks of about an eighth of a worker's share, and Ctrl-C cancels the pending ones and
    terminates the workers (:func:`process_pool`).

    >>> import functools
    >>> draw = functools.partial(np.random.SeedSequence.generate_state, n_words=1)
    >>> a = run_seeded(draw, seed=3, runs=4, label="draws", progress=False)
    >>> b = run_seeded(draw, seed=3, runs=4, n_jobs=2, label="draws", progress=False)
    >>> [int(x[0]) for x in a] == [int(x[0]) for x in b]
    True
    """
    children = np.random.SeedSequence(seed).spawn(check_int("runs", runs))
    n_jobs = check_optional_int("n_jobs", n_jobs, none="all CPUs")
    n_workers = min((os.cpu_count() or 1) if n_jobs is None else n_jobs, len(children))
    results: list[R] = []
    with Progress(len(children), label, progress) as bar:
        if n_workers <= 1:
            for ss in children:
                results.append(job(ss))
                bar.update()
        else:
            with process_pool(n_workers) as ex:
                for r in ex.map(job, children, chunksize=max(1, len(children) // (8 * n_workers))):
                    results.append(r)
                    bar.update()
    return results
