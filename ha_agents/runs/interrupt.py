"""Stopping a run on Ctrl-C or SIGTERM: nothing new starts, running sandboxes end, finished work stays.

:func:`signals_interrupt` turns SIGINT and SIGTERM into :class:`Interrupted` in the main thread (a
``KeyboardInterrupt``, so no ``except Exception`` of an episode swallows it, and a Python caller's
Ctrl-C stops a pool the same way; ``ha_envs.signals``). :func:`run_pool` runs work items on threads
and hands each result to the caller as it ends; interrupted (or on ``KeyboardInterrupt``), it cancels the items not started, closes every open
sandbox (``ha_envs.sandbox.live``), drops the results not yet handed over (an episode whose
sandbox was killed under it is no result) and gives the threads :data:`GRACE_S` to unwind.
What was handed over before (records appended to a run's log) is all a resumed run skips.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Callable, Iterable, TypeVar

from ha_envs.sandbox import live
from ha_envs.signals import Interrupted, signals_interrupt

__all__ = ["GRACE_S", "Interrupted", "run_pool", "signals_interrupt", "wait_for_threads"]
log = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")
GRACE_S = 5.0
"""How long a stopping run waits for its worker threads to unwind (a model call in flight ends them
later; the CLI then exits without them, after removing their sandboxes' files)."""


def run_pool(fn: Callable[[T], R], items: Iterable[T], workers: int, on_result: Callable[[R], None]) -> None:
    """``fn(item)`` for every item on up to ``workers`` threads; ``on_result`` gets each result in
    this thread as it ends. An exception from ``fn`` propagates (the rest are cancelled)."""
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    futures: set[Future[R]] = set()
    try:
        futures = {pool.submit(fn, item) for item in items}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                on_result(fut.result())
    except BaseException as exc:
        pool.shutdown(wait=False, cancel_futures=True)
        if isinstance(exc, KeyboardInterrupt):  # Interrupted included
            closed = live.stop_all()
            log.info("stopping: %d sandbox(es) closed, queued work cancelled", closed)
            wait([f for f in futures if not f.cancelled()], timeout=GRACE_S)
        else:
            pool.shutdown(wait=True)
        raise
    pool.shutdown(wait=True)


def wait_for_threads(timeout: float = GRACE_S) -> bool:
    """Whether every thread but this one (daemon threads aside) ended within ``timeout``."""
    deadline = time.monotonic() + timeout
    for t in threading.enumerate():
        if t is threading.current_thread() or t.daemon:
            continue
        t.join(max(0.0, deadline - time.monotonic()))
    return not any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.current_thread())
