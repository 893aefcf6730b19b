"""SIGINT and SIGTERM as an exception in the main thread, so a run can stop in order (standard
library only: the CLI installs it before any command runs, at no start-up cost)."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Any, Iterator

__all__ = ["Interrupted", "signals_interrupt"]


class Interrupted(KeyboardInterrupt):
    """The run was told to stop by a signal; ``exit_code`` is the shell's 128 + signal number."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.name = signal.Signals(signum).name
        self.exit_code = 128 + signum
        super().__init__(f"interrupted by {self.name}")


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`Interrupted` (the first one; later ones are ignored while
    the run stops, which takes at most about :data:`GRACE_S`). Only in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        if fired:
            return
        fired.append(signum)
        raise Interrupted(signum)

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    except KeyboardInterrupt as exc:
        if fired and not isinstance(exc, Interrupted):  # a library (Ray's wait) raised its own for our signal
            raise Interrupted(fired[0]) from exc
        raise
    finally:
        for s, h in old.items():
            signal.signal(s, h)
