"""Exact sign-flip tests on paired differences: the paired gate's test and ``ha compare``'s.

Under "no difference between the two sides" each paired unit's difference is as likely to have
either sign, so the p-value is the share of the 2^n sign assignments whose sum is at least as
extreme as the observed one. Rates of groups are fractions with small denominators (k of G
rollouts), so the differences lie on a lattice and the null distribution of the sum is computed
exactly by convolution at any n (2^46 assignments in well under a millisecond); off a lattice,
up to 2^16 assignments are enumerated, beyond that sampled (and the p-value says so: it is then
``(hits + 1) / (samples + 1)``).
"""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction


def sign_flip_p(diffs: list[float], samples: int = 20000, seed: int = 0) -> float:
    """P(sum of randomly signed ``diffs`` >= their observed sum): the one-sided p-value of a rise.
    Exact on a lattice (``_lattice``) or up to 16 non-zero differences; sampled otherwise."""
    nz = [abs(d) for d in diffs if d != 0]
    observed = sum(d for d in diffs if d != 0)
    if not nz:
        return 1.0
    steps = _lattice(diffs)
    if steps is not None:
        return _lattice_p(steps)
    eps = 1e-9 * max(nz)
    if len(nz) <= 16:
        hits = sum(1 for signs in itertools.product((1, -1), repeat=len(nz))
                   if sum(s * d for s, d in zip(signs, nz)) >= observed - eps)
        return hits / 2 ** len(nz)
    rng = random.Random(seed)
    hits = sum(1 for _ in range(samples) if sum(d if rng.random() < 0.5 else -d for d in nz) >= observed - eps)
    return (hits + 1) / (samples + 1)


def sign_flip_p_two_sided(diffs: list[float], samples: int = 20000, seed: int = 0) -> float:
    """P(|sum of randomly signed ``diffs``| >= |their observed sum|): the two-sided p-value of a
    difference in either direction (the null distribution is symmetric, so twice the one-sided
    p-value of the observed direction, capped at 1; 1.0 when the sum is 0)."""
    total = sum(diffs)
    if abs(total) <= 1e-12 * max((abs(d) for d in diffs), default=1.0):
        return 1.0
    oriented = diffs if total > 0 else [-d for d in diffs]
    return min(1.0, 2 * sign_flip_p(oriented, samples, seed))


MAX_LATTICE = 1 << 20
"""The largest sum of |integer differences| the exact convolution takes (its array's half width)."""


def _lattice(diffs: list[float]) -> list[int] | None:
    """The differences as integers on a common grid 1/m (m the least common denominator, at most
    1000 per difference), or None when they are not such fractions or the grid is too fine."""
    fracs = []
    for d in diffs:
        if d == 0:
            continue
        f = Fraction(d).limit_denominator(1000)
        if abs(float(f) - d) > 1e-9:
            return None
        fracs.append(f)
    m = 1
    for f in fracs:
        m = m * f.denominator // math.gcd(m, f.denominator)
    steps = [int(f * m) for f in fracs]
    return steps if sum(abs(k) for k in steps) <= MAX_LATTICE else None


def _lattice_p(steps: list[int]) -> float:
    """The exact sign-flip p-value of integer steps: the null distribution of their signed sum,
    one convolution per distinct |step| (c equal steps k sum to k * (2j - c), j ~ Binomial(c, 1/2))."""
    import numpy as np

    counts: dict[int, int] = {}
    for k in steps:
        counts[abs(k)] = counts.get(abs(k), 0) + 1
    dist = np.ones(1)
    for k, c in counts.items():
        kernel = np.zeros(2 * k * c + 1)
        kernel[::2 * k] = [math.comb(c, j) / 2.0 ** c for j in range(c + 1)]
        dist = np.convolve(dist, kernel)
    width = (len(dist) - 1) // 2  # dist[i]: P(signed sum = i - width)
    return float(min(1.0, dist[width + sum(steps):].sum()))
