"""Picking versions out of a list of candidates."""

from .errors import InvalidVersion, SemverError
from .ranges import Range
from .version import Version


class ResolutionError(SemverError):
    """Raised by :func:`resolve_all` when some package cannot be satisfied."""

    def __init__(self, unsatisfied):
        self.unsatisfied = dict(unsatisfied)
        details = ", ".join(f"{name} ({' and '.join(ranges)})" for name, ranges in sorted(self.unsatisfied.items()))
        super().__init__(f"no version satisfies: {details}")


def _valid(versions):
    """Yield ``(original, Version)`` for each parseable candidate."""
    for original in versions:
        try:
            yield original, Version.parse(original)
        except InvalidVersion:
            continue


def sort_versions(versions, reverse=False):
    """Sort version strings by precedence, dropping ones that do not parse.

    Versions with equal precedence (differing only in build metadata) keep
    their input order.
    """
    pairs = list(_valid(versions))
    pairs.sort(key=lambda pair: _SortKey(pair[1]), reverse=reverse)
    return [original for original, _ in pairs]


class _SortKey:
    __slots__ = ("version",)

    def __init__(self, version):
        self.version = version

    def __lt__(self, other):
        return self.version.compare(other.version) < 0

    def __eq__(self, other):
        return self.version.compare(other.version) == 0


def filter_satisfying(versions, range_text, include_prerelease=False):
    """Return the candidates satisfying the range, in input order."""
    rng = Range(range_text, include_prerelease=include_prerelease)
    return [original for original, v in _valid(versions) if rng.test(v)]


def max_satisfying(versions, range_text, include_prerelease=False):
    """Return the highest candidate satisfying the range, or None."""
    best = None
    best_version = None
    rng = Range(range_text, include_prerelease=include_prerelease)
    for original, v in _valid(versions):
        if rng.test(v) and (best_version is None or v.compare(best_version) > 0):
            best, best_version = original, v
    return best


def min_satisfying(versions, range_text, include_prerelease=False):
    """Return the lowest candidate satisfying the range, or None."""
    best = None
    best_version = None
    rng = Range(range_text, include_prerelease=include_prerelease)
    for original, v in _valid(versions):
        if rng.test(v) and (best_version is None or v.compare(best_version) < 0):
            best, best_version = original, v
    return best


def resolve_all(requirements, available, include_prerelease=False, prefer="max"):
    """Pick one version per package.

    ``requirements`` maps a package name to a range string or a list of range
    strings (all of which must hold); ``available`` maps a package name to its
    published versions.  Returns ``{name: version}``; raises
    :class:`ResolutionError` naming every package that cannot be satisfied.
    """
    if prefer not in ("max", "min"):
        raise ValueError("prefer must be 'max' or 'min'")
    chosen = {}
    unsatisfied = {}
    for name, ranges in requirements.items():
        if isinstance(ranges, (str, Range)):
            ranges = [ranges]
        ranges = [Range(r, include_prerelease=include_prerelease) for r in ranges]
        candidates = list(available.get(name, ()))
        for rng in ranges:
            candidates = [c for c in candidates if rng.test(c)]
        if not candidates:
            unsatisfied[name] = [r.range for r in ranges]
            continue
        pick = max_satisfying if prefer == "max" else min_satisfying
        chosen[name] = pick(candidates, "*", include_prerelease=True)
    if unsatisfied:
        raise ResolutionError(unsatisfied)
    return chosen
