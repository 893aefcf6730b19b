"""The exact sign-flip tests (``ha_agents.runs.stats``) against brute-force enumeration."""

from __future__ import annotations

import itertools
import random

import pytest

from ha_agents.runs.stats import sign_flip_p, sign_flip_p_two_sided


def brute(diffs, two_sided):
    obs = sum(diffs)
    sums = [sum(s * d for s, d in zip(signs, diffs)) for signs in itertools.product((1, -1), repeat=len(diffs))]
    hit = (lambda t: abs(t) >= abs(obs) - 1e-12) if two_sided else (lambda t: t >= obs - 1e-12)
    return sum(1 for t in sums if hit(t)) / len(sums)


def test_exact_p_values_match_enumeration_on_and_off_the_lattice():
    rng = random.Random(3)
    for _ in range(60):
        n = rng.randint(1, 11)
        diffs = [rng.choice([-1, -0.5, -0.25, 0, 0, 0.25, 0.5, 0.75, 1]) for _ in range(n)]
        if rng.random() < 0.3:
            diffs = [d * 0.3183 for d in diffs]  # off any small-denominator lattice: enumerated
        if sum(diffs) > 0:
            assert sign_flip_p(diffs) == pytest.approx(brute(diffs, False), abs=1e-12)
        expected = brute(diffs, True) if abs(sum(diffs)) > 1e-12 else 1.0
        assert sign_flip_p_two_sided(diffs) == pytest.approx(expected, abs=1e-12), diffs


def test_two_sided_is_symmetric_and_tied_sums_are_no_evidence():
    d = [1.0, 1.0, 0.5, -0.25, 1.0, 0.75]
    assert sign_flip_p_two_sided(d) == sign_flip_p_two_sided([-x for x in d]) < 1.0
    assert sign_flip_p_two_sided([0.5, -0.5]) == 1.0 and sign_flip_p_two_sided([]) == 1.0
    assert sign_flip_p_two_sided([1.0] * 30) == pytest.approx(2.0 ** -29)  # exact far beyond enumeration
