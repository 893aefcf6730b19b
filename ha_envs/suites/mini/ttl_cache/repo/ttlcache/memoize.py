"""The ``@memoize`` decorator."""

import functools
import threading

from .clock import MonotonicClock
from .keys import make_key
from .policy import TTLPolicy
from .store import LRUStore

_MISSING = object()


def memoize(func=None, *, maxsize=128, ttl=None, clock=None, typed=False,
            key=None, store=None, cache_none=True):
    """Cache the results of a function in an :class:`LRUStore`.

    Usable bare (``@memoize``) or with options (``@memoize(ttl=60)``).

    * ``ttl``        - seconds a result stays valid (None: until evicted)
    * ``maxsize``    - number of results kept (least recently used go first)
    * ``clock``      - a :class:`ttlcache.Clock` (tests pass a FakeClock)
    * ``typed``      - ``f(1)`` and ``f(1.0)`` are cached separately
    * ``key``        - ``key(*args, **kwargs)`` builds the cache key
    * ``store``      - an existing store to use instead of a private one
    * ``cache_none`` - when False, ``None`` results are not cached

    The wrapper exposes ``cache``, ``cache_info()``, ``cache_clear()`` and
    ``invalidate(*args, **kwargs)``.
    """

    def decorate(fn):
        if store is not None:
            cache = store
        else:
            cache = LRUStore(
                maxsize=maxsize,
                policy=TTLPolicy(default_ttl=ttl),
                clock=clock if clock is not None else MonotonicClock(),
            )
        lock = threading.RLock()

        def build_key(args, kwargs):
            if key is not None:
                return key(*args, **kwargs)
            return make_key(args, kwargs, typed)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            k = build_key(args, kwargs)
            with lock:
                value = cache.get(k, _MISSING)
            if value is not _MISSING:
                return value
            value = fn(*args, **kwargs)
            if value is None and not cache_none:
                return value
            with lock:
                cache.set(k, value, ttl)
            return value

        def cache_info():
            with lock:
                return cache.stats.snapshot(len(cache), cache.maxsize)

        def cache_clear():
            with lock:
                cache.clear()
                cache.stats.reset()

        def invalidate(*args, **kwargs):
            with lock:
                return cache.delete(build_key(args, kwargs))

        wrapper.cache = cache
        wrapper.cache_info = cache_info
        wrapper.cache_clear = cache_clear
        wrapper.invalidate = invalidate
        return wrapper

    if func is not None:
        return decorate(func)
    return decorate
