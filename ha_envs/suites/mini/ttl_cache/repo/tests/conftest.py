import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ttlcache import FakeClock  # noqa: E402


@pytest.fixture
def clock():
    return FakeClock(1000.0)
