"""Cache statistics."""

from collections import namedtuple

StatsSnapshot = namedtuple(
    "StatsSnapshot",
    "hits misses sets expirations evictions deletes currsize maxsize",
)


class CacheStats:
    """Counters updated by :class:`ttlcache.LRUStore`.

    ``misses`` includes lookups that found an expired entry; such lookups also
    count one ``expiration``.
    """

    __slots__ = ("hits", "misses", "sets", "expirations", "evictions", "deletes")

    def __init__(self):
        self.reset()

    def reset(self):
        self.hits = 0
        self.misses = 0
        self.sets = 0
        self.expirations = 0
        self.evictions = 0
        self.deletes = 0

    @property
    def lookups(self):
        return self.hits + self.misses

    @property
    def hit_rate(self):
        """Fraction of lookups that were hits (0.0 when there were none)."""
        return self.hits / self.lookups if self.lookups else 0.0

    def snapshot(self, currsize=0, maxsize=None):
        return StatsSnapshot(self.hits, self.misses, self.sets,
                             self.expirations, self.evictions, self.deletes,
                             currsize, maxsize)

    def __repr__(self):
        return (f"CacheStats(hits={self.hits}, misses={self.misses}, "
                f"sets={self.sets}, expirations={self.expirations}, "
                f"evictions={self.evictions}, deletes={self.deletes})")
