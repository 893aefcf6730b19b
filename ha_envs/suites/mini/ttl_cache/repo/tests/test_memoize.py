import pytest

from ttlcache import LRUStore, TTLPolicy, make_key, memoize


class Counter:
    def __init__(self):
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return (self.calls, args, tuple(sorted(kwargs.items())))


def test_bare_decorator_caches():
    counter = Counter()
    fn = memoize(counter)
    assert fn(1) == fn(1)
    assert counter.calls == 1
    fn(2)
    assert counter.calls == 2


def test_keyword_order_does_not_matter(clock):
    counter = Counter()
    fn = memoize(clock=clock)(counter)
    fn(1, a=1, b=2)
    fn(1, b=2, a=1)
    assert counter.calls == 1


def test_typed():
    counter = Counter()
    fn = memoize(typed=True)(counter)
    fn(1)
    fn(1.0)
    assert counter.calls == 2
    assert make_key((1,), {}) == make_key((1.0,), {})
    assert make_key((1,), {}, typed=True) != make_key((1.0,), {}, typed=True)


def test_unhashable_arguments_raise():
    fn = memoize(Counter())
    with pytest.raises(TypeError):
        fn([1, 2])


def test_expires_after_ttl(clock):
    counter = Counter()
    fn = memoize(ttl=10, clock=clock)(counter)
    first = fn("x")
    clock.advance(11)
    second = fn("x")
    assert first != second
    assert counter.calls == 2
    clock.advance(4)
    assert fn("x") == second


def test_maxsize(clock):
    counter = Counter()
    fn = memoize(maxsize=2, clock=clock)(counter)
    fn(1)
    fn(2)
    fn(3)          # evicts 1
    fn(2)
    assert counter.calls == 3
    fn(1)
    assert counter.calls == 4


def test_cache_info_and_clear(clock):
    fn = memoize(maxsize=8, clock=clock)(Counter())
    fn(1)
    fn(1)
    fn(2)
    info = fn.cache_info()
    assert (info.hits, info.misses, info.currsize, info.maxsize) == (1, 2, 2, 8)
    fn.cache_clear()
    info = fn.cache_info()
    assert (info.hits, info.misses, info.currsize) == (0, 0, 0)


def test_invalidate(clock):
    counter = Counter()
    fn = memoize(clock=clock)(counter)
    fn(1, k=2)
    assert fn.invalidate(1, k=2) is True
    assert fn.invalidate(1, k=2) is False
    fn(1, k=2)
    assert counter.calls == 2


def test_custom_key_and_store(clock):
    store = LRUStore(maxsize=4, policy=TTLPolicy(default_ttl=5), clock=clock)
    counter = Counter()
    fn = memoize(store=store, key=lambda user, **_: user)(counter)
    fn("bob", verbose=True)
    fn("bob", verbose=False)
    assert counter.calls == 1
    assert store.keys() == ["bob"]
    clock.advance(6)
    fn("bob")
    assert counter.calls == 2


def test_none_results(clock):
    calls = []

    def lookup(x):
        calls.append(x)
        return None

    cached = memoize(clock=clock)(lookup)
    cached(1)
    cached(1)
    assert calls == [1]
    uncached = memoize(clock=clock, cache_none=False)(lookup)
    uncached(2)
    uncached(2)
    assert calls == [1, 2, 2]


def test_wraps_metadata():
    @memoize(ttl=1)
    def documented(x):
        """Docstring."""
        return x

    assert documented.__name__ == "documented"
    assert documented.__doc__ == "Docstring."
    assert documented.__wrapped__(3) == 3
