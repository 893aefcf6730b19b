"""Progress of a batch of episodes, on stderr.

On a terminal: one line redrawn in place each second (done/total, resolved so far, episodes per
minute, elapsed, ETA, the last episode). Anywhere else (a log file, a pipe, CI): one plain line per
finished episode with the same counts, so a log never fills with carriage returns. The rate and ETA
count only the episodes finished since this process started (a resumed run's old ones are not work
done now)."""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, TextIO

__all__ = ["EpisodeProgress", "clock", "prepare_each"]


def clock(seconds: float) -> str:
    """``m:ss`` or ``h:mm:ss``."""
    s = int(seconds)
    h, m = s // 3600, s // 60 % 60
    return f"{h}:{m:02d}:{s % 60:02d}" if h else f"{m}:{s % 60:02d}"


class EpisodeProgress:
    def __init__(self, total: int, done: int = 0, resolved: int = 0, stream: TextIO | None = None,
                 tty: bool | None = None, refresh_s: float = 1.0) -> None:
        """``total``: episodes of the whole run; ``done`` / ``resolved``: those already finished
        (by an earlier, resumed run). ``tty``: redraw in place (default: whether ``stream`` is a terminal)."""
        self.total, self.done, self.resolved = total, done, resolved
        self.stream = stream if stream is not None else sys.stderr
        self.tty = _isatty(self.stream) if tty is None else tty
        self._start_done = done
        self._t0 = time.monotonic()
        self._last = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        if self.tty:
            self._draw()
            self._ticker = threading.Thread(target=self._tick, args=(refresh_s,), name="episode-progress", daemon=True)
            self._ticker.start()

    def update(self, record: dict[str, Any]) -> None:
        """One more finished episode (a trajectory record)."""
        self.done += 1
        self.resolved += bool(record.get("resolved"))
        outcome = "resolved" if record.get("resolved") else str(record.get("termination", "?")) + (
            " (masked)" if record.get("mask_sample") else "")
        if self.tty:
            self._last = f"{record.get('instance_id')}#{record.get('run')} {outcome}"
            self._draw()
        else:
            took = f" ({record['duration_s']:.1f}s)" if isinstance(record.get("duration_s"), (int, float)) else ""
            episode = f"run {record.get('run')} {record.get('instance_id')}"
            self._write(f"[{self.done}/{self.total}] {episode}: {outcome}{took} | {self.status()}\n")

    def status(self) -> str:
        """``3 resolved | 4.2/min | elapsed 0:43 | ETA 2:10``."""
        elapsed = time.monotonic() - self._t0
        new = self.done - self._start_done
        rate = new / elapsed * 60 if new and elapsed > 0 else None
        left = self.total - self.done
        eta = "0:00" if not left else (clock(left / rate * 60) if rate else "?")
        return (f"{self.resolved} resolved | {f'{rate:.1f}' if rate else '?'}/min | elapsed {clock(elapsed)} | "
                f"ETA {eta}")

    def close(self) -> None:
        """Stop redrawing; on a terminal, draw the final line and end it."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None
            self._draw()
            self._write("\n")

    def _line(self) -> str:
        width = 20
        filled = width * self.done // self.total if self.total else width
        bar = "#" * filled + "." * (width - filled)
        text = f"episodes {self.done}/{self.total} [{bar}] {self.status()}" + (f" | {self._last}" if self._last else "")
        return text[: max(20, _columns(self.stream) - 1)]  # a wrapped line cannot be redrawn with \r

    def _draw(self) -> None:
        self._write("\r" + self._line() + "\x1b[K")

    def _tick(self, every: float) -> None:
        while not self._stop.wait(every):
            try:
                self._draw()
            except (OSError, ValueError):  # the terminal went away: stop redrawing, the run goes on
                return

    def _write(self, text: str) -> None:
        with self._lock:
            self.stream.write(text)
            self.stream.flush()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _columns(stream: TextIO) -> int:
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        columns = 0
    return columns or 100  # a pseudo-terminal nobody sized reports 0


def prepare_each(items: list[Any], prepare: Any, what: str, stream: TextIO | None = None, show: bool = True,
                 quiet_s: float = 1.0) -> None:
    """``prepare(item)`` for each item (a task's snapshot before its episodes), saying so on stderr:
    a line for each preparation that took ``quiet_s`` or more (a cached one takes none and says
    nothing), with the count, the item and an ETA from the slow ones so far."""
    stream = stream if stream is not None else sys.stderr
    t_start, slow = time.monotonic(), 0
    for i, item in enumerate(items, 1):
        t0 = time.monotonic()
        prepare(item)
        took = time.monotonic() - t0
        if show and took >= quiet_s:
            slow += 1
            per = (time.monotonic() - t_start) / i
            name = getattr(item, "instance_id", item)
            stream.write(f"{what} {i}/{len(items)}: {name} ({took:.1f}s) | elapsed {clock(time.monotonic() - t_start)}"
                         f" | ETA {clock(per * (len(items) - i))}\n")
            stream.flush()

