"""Clock abstraction.

Everything in ttlcache asks a :class:`Clock` for the time, so that tests can
use :class:`FakeClock` and never sleep. Times are floats in seconds; only
differences between them matter.
"""

import time


class Clock:
    """Source of the current time plus deadline helpers."""

    def now(self):
        raise NotImplementedError

    def expired(self, deadline):
        """Return True once the clock has reached ``deadline``.

        ``None`` means "no deadline" and never expires.
        """
        if deadline is None:
            return False
        return self.now() > deadline

    def remaining(self, deadline):
        """Seconds left until ``deadline`` (``0.0`` once reached, ``None`` if
        there is no deadline)."""
        if deadline is None:
            return None
        return max(0.0, deadline - self.now())


class MonotonicClock(Clock):
    """The real clock: :func:`time.monotonic`."""

    def now(self):
        return time.monotonic()

    def __repr__(self):
        return "MonotonicClock()"


class FakeClock(Clock):
    """A manually driven clock for tests.

    >>> clock = FakeClock()
    >>> clock.advance(5)
    5.0
    """

    def __init__(self, start=0.0):
        self._now = float(start)

    def now(self):
        return self._now

    def advance(self, seconds):
        """Move the clock forward by ``seconds`` and return the new time."""
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        self._now += float(seconds)
        return self._now

    sleep = advance

    def set(self, when):
        """Jump to the absolute time ``when`` (not earlier than now)."""
        when = float(when)
        if when < self._now:
            raise ValueError("a clock cannot go backwards")
        self._now = when
        return self._now

    def __repr__(self):
        return f"FakeClock({self._now!r})"
