"""A dict-like front end to :class:`LRUStore`."""

from .policy import TTLPolicy
from .store import LRUStore

_MISSING = object()


class TTLCache(LRUStore):
    """``TTLCache(maxsize=128, ttl=60)`` behaves much like a dict.

    >>> from ttlcache import FakeClock
    >>> cache = TTLCache(ttl=10, clock=FakeClock())
    >>> cache["a"] = 1
    >>> cache["a"]
    1
    """

    def __init__(self, maxsize=128, ttl=None, *, max_ttl=None, sliding=False,
                 clock=None, on_evict=None):
        super().__init__(
            maxsize=maxsize,
            policy=TTLPolicy(default_ttl=ttl, max_ttl=max_ttl, sliding=sliding),
            clock=clock,
            on_evict=on_evict,
        )

    def __getitem__(self, key):
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __setitem__(self, key, value):
        self.set(key, value)

    def __delitem__(self, key):
        if not self.delete(key):
            raise KeyError(key)

    def __iter__(self):
        return iter(self.keys())

    def get_or_set(self, key, factory, ttl=None):
        """Return the cached value or store and return ``factory()``."""
        value = self.get(key, _MISSING)
        if value is _MISSING:
            value = factory()
            self.set(key, value, ttl)
        return value

    def setdefault(self, key, default=None, ttl=None):
        return self.get_or_set(key, lambda: default, ttl)

    def update(self, mapping=(), **kwargs):
        pairs = mapping.items() if hasattr(mapping, "items") else mapping
        for key, value in pairs:
            self.set(key, value)
        for key, value in kwargs.items():
            self.set(key, value)
