"""Process pools that stop cleanly on Ctrl-C.

``concurrent.futures.ProcessPoolExecutor`` waits for every submitted job when its ``with`` block is left by
an exception, so a ``KeyboardInterrupt`` during :func:`mf_sched.sim.simulate.run_many` used to leave the
workers taking the next jobs (and, on an instance where a policy never stops, never exiting).
:func:`process_pool` starts the workers with ``SIGINT`` ignored (Ctrl-C reaches the whole process group;
only the parent should react), and when the block is left by any exception it cancels the pending jobs
and terminates the workers it started before re-raising.
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager

__all__ = ["process_pool"]


def _ignore_sigint() -> None:  # pragma: no cover - runs in the worker processes
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _noop(i: int) -> int:  # pragma: no cover - runs in the worker processes
    return i


@contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Ignore SIGINT in this process for the duration (main thread only; elsewhere a no-op). Processes
    started meanwhile inherit the ignored disposition from their very start, before any import."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def process_pool(n_workers: int) -> Iterator[ProcessPoolExecutor]:
    """A spawn-context :class:`~concurrent.futures.ProcessPoolExecutor` with ``n_workers`` workers that
    ignore ``SIGINT``; leaving the block by an exception (``KeyboardInterrupt`` included) cancels the pending
    jobs and terminates the workers.

    >>> with process_pool(1) as ex:
    ...     list(ex.map(abs, [-1, 2]))
    [1, 2]
    """
    if isinstance(n_workers, bool) or not isinstance(n_workers, int) or n_workers < 1:
        raise ValueError(f"n_workers = {n_workers!r} is out of range; accepted: an integer >= 1")
    before = set(multiprocessing.active_children())
    ex = ProcessPoolExecutor(
        max_workers=n_workers, mp_context=multiprocessing.get_context("spawn"), initializer=_ignore_sigint
    )
    try:
        # start every worker now, with SIGINT ignored from birth (a Ctrl-C while a worker is still importing
        # would otherwise print its traceback); each submission with no idle worker starts one
        with _sigint_ignored():
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
