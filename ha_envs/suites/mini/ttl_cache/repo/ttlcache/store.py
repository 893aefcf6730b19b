"""The LRU store with per-entry expiry.

Entries live in a dict (for lookups) and in a circular doubly linked list
ordered from most recently used (``root.next``) to least recently used
(``root.prev``). Every entry remembers its TTL and its absolute deadline.
"""

from .clock import MonotonicClock
from .policy import TTLPolicy
from .stats import CacheStats

EXPIRED = "expired"
EVICTED = "evicted"
DELETED = "deleted"


class _Entry:
    __slots__ = ("key", "value", "ttl", "deadline", "prev", "next")

    def __init__(self, key=None, value=None, ttl=None):
        self.key = key
        self.value = value
        self.ttl = ttl
        self.deadline = None
        self.prev = None
        self.next = None


class LRUStore:
    """A bounded least-recently-used store whose entries can expire.

    ``on_evict(key, value, reason)`` is called whenever an entry leaves the
    store for a reason other than being overwritten; ``reason`` is one of
    ``"expired"``, ``"evicted"`` (capacity) or ``"deleted"``.
    """

    def __init__(self, maxsize=128, policy=None, clock=None, stats=None,
                 on_evict=None):
        if maxsize is not None and maxsize <= 0:
            raise ValueError("maxsize must be positive or None")
        self.maxsize = maxsize
        self.policy = policy if policy is not None else TTLPolicy()
        self.clock = clock if clock is not None else MonotonicClock()
        self.stats = stats if stats is not None else CacheStats()
        self._on_evict = on_evict
        self._map = {}
        self._root = _Entry()
        self._root.prev = self._root.next = self._root

    # -- linked list ----------------------------------------------------------

    def _unlink(self, entry):
        entry.prev.next = entry.next
        entry.next.prev = entry.prev
        entry.prev = entry.next = None

    def _link_front(self, entry, now):
        """Make ``entry`` the most recently used one and stamp its deadline."""
        if entry.prev is not None:
            self._unlink(entry)
        first = self._root.next
        entry.prev = self._root
        entry.next = first
        first.prev = entry
        self._root.next = entry
        entry.deadline = self.policy.deadline(now, entry.ttl)

    def _iter_entries(self, newest_first=True):
        node = self._root.next if newest_first else self._root.prev
        while node is not self._root:
            following = node.next if newest_first else node.prev
            yield node
            node = following

    # -- bookkeeping ----------------------------------------------------------

    def _drop(self, entry, reason):
        self._unlink(entry)
        del self._map[entry.key]
        if reason == EXPIRED:
            self.stats.expirations += 1
        elif reason == EVICTED:
            self.stats.evictions += 1
        else:
            self.stats.deletes += 1
        if self._on_evict is not None:
            self._on_evict(entry.key, entry.value, reason)

    def _live_entry(self, key):
        """The entry for ``key`` if present and fresh; expired ones are dropped."""
        entry = self._map.get(key)
        if entry is None:
            return None
        if self.clock.expired(entry.deadline):
            self._drop(entry, EXPIRED)
            return None
        return entry

    def _evict_overflow(self):
        if self.maxsize is None:
            return
        if len(self._map) > self.maxsize:
            self.purge_expired()
        while len(self._map) > self.maxsize:
            self._drop(self._root.prev, EVICTED)

    # -- public API -----------------------------------------------------------

    def get(self, key, default=None):
        """Value of ``key`` (marking it most recently used) or ``default``."""
        now = self.clock.now()
        entry = self._live_entry(key)
        if entry is None:
            self.stats.misses += 1
            return default
        self.stats.hits += 1
        if self.policy.sliding:
            entry.deadline = self.policy.deadline(now, entry.ttl)
        self._link_front(entry, now)
        return entry.value

    def peek(self, key, default=None):
        """Like :meth:`get` but changes neither the LRU order nor the stats."""
        entry = self._map.get(key)
        if entry is None or self.clock.expired(entry.deadline):
            return default
        return entry.value

    def set(self, key, value, ttl=None):
        """Store ``value`` under ``key``; ``ttl`` overrides the policy default."""
        now = self.clock.now()
        ttl = self.policy.resolve(ttl)
        entry = self._map.get(key)
        if entry is None:
            entry = _Entry(key, value, ttl)
            self._map[key] = entry
        else:
            entry.value = value
            entry.ttl = ttl
        self._link_front(entry, now)
        self.stats.sets += 1
        self._evict_overflow()

    def touch(self, key):
        """Restart the TTL of a fresh ``key``; False if it is absent/expired."""
        entry = self._live_entry(key)
        if entry is None:
            return False
        self._link_front(entry, self.clock.now())
        return True

    def delete(self, key):
        entry = self._map.get(key)
        if entry is None:
            return False
        self._drop(entry, DELETED)
        return True

    def pop(self, key, default=None):
        entry = self._live_entry(key)
        if entry is None:
            return default
        value = entry.value
        self._drop(entry, DELETED)
        return value

    def ttl_remaining(self, key):
        """Seconds until ``key`` expires (None if never); KeyError if absent."""
        entry = self._live_entry(key)
        if entry is None:
            raise KeyError(key)
        return self.clock.remaining(entry.deadline)

    def purge_expired(self):
        """Drop every expired entry and return how many there were."""
        dead = [e for e in self._iter_entries(newest_first=False)
                if self.clock.expired(e.deadline)]
        for entry in dead:
            self._drop(entry, EXPIRED)
        return len(dead)

    def clear(self):
        self._map.clear()
        self._root.prev = self._root.next = self._root

    def keys(self):
        """Fresh keys, most recently used first."""
        return [e.key for e in self._iter_entries()
                if not self.clock.expired(e.deadline)]

    def items(self):
        return [(e.key, e.value) for e in self._iter_entries()
                if not self.clock.expired(e.deadline)]

    def __contains__(self, key):
        entry = self._map.get(key)
        return entry is not None and not self.clock.expired(entry.deadline)

    def __len__(self):
        self.purge_expired()
        return len(self._map)

    def __repr__(self):
        return (f"{type(self).__name__}(maxsize={self.maxsize!r}, "
                f"entries={len(self._map)})")
