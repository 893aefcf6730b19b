"""The one timing helper the benchmark scripts share."""

from __future__ import annotations

import statistics
import time
from typing import Callable


def median_ms(fn: Callable[[], object], n: int, warmup: int = 10) -> float:
    """Median wall time of ``fn`` in milliseconds over ``n`` calls, after ``min(warmup, n)`` unmeasured ones."""
    for _ in range(min(warmup, n)):
        fn()
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1000
