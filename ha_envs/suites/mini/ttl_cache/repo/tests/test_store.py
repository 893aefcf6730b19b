import pytest

from ttlcache import LRUStore, TTLCache, TTLPolicy


def make_store(clock, **kwargs):
    maxsize = kwargs.pop("maxsize", 3)
    on_evict = kwargs.pop("on_evict", None)
    return LRUStore(maxsize=maxsize, policy=TTLPolicy(**kwargs), clock=clock,
                    on_evict=on_evict)


def test_set_get_and_default(clock):
    store = make_store(clock)
    store.set("a", 1)
    assert store.get("a") == 1
    assert store.get("missing") is None
    assert store.get("missing", "dflt") == "dflt"


def test_lru_eviction_order(clock):
    store = make_store(clock, maxsize=3)
    for key in "abc":
        store.set(key, key.upper())
    assert store.get("a") == "A"          # a becomes most recently used
    store.set("d", "D")                    # evicts b
    assert store.keys() == ["d", "a", "c"]
    assert "b" not in store
    assert store.stats.evictions == 1


def test_peek_does_not_promote(clock):
    store = make_store(clock, maxsize=2)
    store.set("a", 1)
    store.set("b", 2)
    assert store.peek("a") == 1
    store.set("c", 3)
    assert store.keys() == ["c", "b"]


def test_entries_expire_after_ttl(clock):
    store = make_store(clock, default_ttl=10)
    store.set("a", 1)
    clock.advance(9.5)
    assert "a" in store
    clock.advance(1)
    assert "a" not in store
    assert store.get("a", "gone") == "gone"
    assert store.stats.expirations == 1
    assert store.stats.misses == 1


def test_per_entry_ttl_and_no_expiry(clock):
    store = make_store(clock, default_ttl=10)
    store.set("short", 1, ttl=2)
    store.set("long", 2, ttl=100)
    clock.advance(3)
    assert store.get("short") is None
    assert store.get("long") == 2
    forever = make_store(clock)
    forever.set("x", 1)
    clock.advance(10 ** 6)
    assert forever.get("x") == 1
    assert forever.ttl_remaining("x") is None


def test_overwrite_restarts_ttl(clock):
    store = make_store(clock, default_ttl=10)
    store.set("a", 1)
    clock.advance(8)
    store.set("a", 2)
    clock.advance(8)
    assert store.peek("a") == 2
    clock.advance(3)
    assert store.get("a") is None


def test_touch_restarts_ttl(clock):
    store = make_store(clock, default_ttl=10)
    store.set("a", 1)
    clock.advance(8)
    assert store.touch("a") is True
    clock.advance(8)
    assert store.get("a") == 1
    assert store.touch("missing") is False


def test_ttl_remaining(clock):
    store = make_store(clock, default_ttl=10)
    store.set("a", 1)
    clock.advance(3)
    assert store.ttl_remaining("a") == 7.0
    with pytest.raises(KeyError):
        store.ttl_remaining("missing")


def test_sliding_policy_extends_on_read(clock):
    store = make_store(clock, default_ttl=10, sliding=True)
    store.set("a", 1)
    clock.advance(6)
    assert store.get("a") == 1
    clock.advance(9)
    assert store.get("a") == 1
    clock.advance(11)
    assert store.get("a") is None


def test_purge_expired_and_len(clock):
    store = make_store(clock, maxsize=None, default_ttl=5)
    store.set("a", 1)
    store.set("b", 2, ttl=50)
    clock.advance(6)
    assert store.purge_expired() == 1
    assert len(store) == 1
    assert store.items() == [("b", 2)]


def test_delete_pop_clear_and_callback(clock):
    events = []
    store = make_store(clock, maxsize=2, default_ttl=5,
                       on_evict=lambda k, v, reason: events.append((k, reason)))
    store.set("a", 1)
    store.set("b", 2)
    assert store.delete("a") is True
    assert store.delete("a") is False
    assert store.pop("b") == 2
    assert store.pop("b", "x") == "x"
    store.set("c", 3)
    store.set("d", 4)
    store.set("e", 5)
    clock.advance(6)
    assert store.get("d") is None
    assert events == [("a", "deleted"), ("b", "deleted"), ("c", "evicted"),
                      ("d", "expired")]
    store.clear()
    assert store.keys() == []


def test_invalid_maxsize(clock):
    with pytest.raises(ValueError):
        LRUStore(maxsize=0, clock=clock)


def test_ttl_cache_mapping_api(clock):
    cache = TTLCache(maxsize=10, ttl=30, clock=clock)
    cache["a"] = 1
    cache.update({"b": 2}, c=3)
    assert cache["a"] == 1
    assert sorted(cache) == ["a", "b", "c"]
    del cache["a"]
    with pytest.raises(KeyError):
        cache["a"]
    with pytest.raises(KeyError):
        del cache["a"]
    assert cache.get_or_set("z", lambda: 26) == 26
    assert cache.get_or_set("z", lambda: 0) == 26
    assert cache.setdefault("y", 25) == 25
    clock.advance(31)
    assert len(cache) == 0


def test_stats(clock):
    store = make_store(clock)
    store.set("a", 1)
    store.get("a")
    store.get("a")
    store.get("b")
    assert (store.stats.hits, store.stats.misses, store.stats.sets) == (2, 1, 1)
    assert store.stats.hit_rate == pytest.approx(2 / 3)
    store.stats.reset()
    assert store.stats.lookups == 0
    assert store.stats.hit_rate == 0.0
