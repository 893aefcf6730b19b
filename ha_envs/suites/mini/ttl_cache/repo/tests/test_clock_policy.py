import pytest

from ttlcache import FakeClock, MonotonicClock, TTLPolicy
from ttlcache.clock import Clock


def test_fake_clock_advance_and_set():
    clock = FakeClock()
    assert clock.now() == 0.0
    assert clock.advance(2.5) == 2.5
    assert clock.sleep(0.5) == 3.0
    assert clock.set(10) == 10.0
    with pytest.raises(ValueError):
        clock.advance(-1)
    with pytest.raises(ValueError):
        clock.set(9)


def test_clock_deadlines(clock):
    assert clock.expired(None) is False
    assert clock.remaining(None) is None
    assert clock.expired(clock.now() + 1) is False
    assert clock.expired(clock.now() - 1) is True
    assert clock.remaining(clock.now() + 4) == 4.0
    assert clock.remaining(clock.now() - 4) == 0.0


def test_clock_is_abstract():
    with pytest.raises(NotImplementedError):
        Clock().now()
    assert isinstance(MonotonicClock(), Clock)


def test_policy_resolve():
    assert TTLPolicy().resolve() is None
    assert TTLPolicy(default_ttl=30).resolve() == 30.0
    assert TTLPolicy(default_ttl=30).resolve(5) == 5.0
    assert TTLPolicy(max_ttl=60).resolve() == 60.0
    assert TTLPolicy(max_ttl=60).resolve(90) == 60.0
    assert TTLPolicy(default_ttl=0).resolve() == 0.0


def test_policy_validation():
    with pytest.raises(ValueError):
        TTLPolicy(default_ttl=-1)
    with pytest.raises(ValueError):
        TTLPolicy(default_ttl=10, max_ttl=5)
    with pytest.raises(TypeError):
        TTLPolicy(default_ttl="10")
    with pytest.raises(ValueError):
        TTLPolicy().resolve(-3)


def test_policy_deadline():
    policy = TTLPolicy(default_ttl=10)
    assert policy.deadline(100.0, 10.0) == 110.0
    assert policy.deadline(100.0, None) is None
