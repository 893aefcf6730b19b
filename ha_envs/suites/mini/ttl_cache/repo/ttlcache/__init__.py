"""ttlcache: an LRU cache with time-to-live, statistics and memoization."""

from .cache import TTLCache
from .clock import Clock, FakeClock, MonotonicClock
from .keys import make_key
from .memoize import memoize
from .policy import TTLPolicy
from .stats import CacheStats, StatsSnapshot
from .store import LRUStore

__all__ = [
    "TTLCache",
    "Clock",
    "FakeClock",
    "MonotonicClock",
    "make_key",
    "memoize",
    "TTLPolicy",
    "CacheStats",
    "StatsSnapshot",
    "LRUStore",
]
