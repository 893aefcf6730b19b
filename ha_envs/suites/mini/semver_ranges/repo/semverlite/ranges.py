"""Range expressions (npm / node-semver flavour).

A range is a union (``||``) of comparator sets; a comparator set is an
intersection of primitive comparators.  Sugar such as ``^1.2``, ``~1.2.3``,
``1.x`` or ``1.2.3 - 2.0`` is desugared into primitive comparators when the
range is parsed, e.g. ``^1.2.3`` becomes ``>=1.2.3 <2.0.0-0``.
"""

import re

from .comparator import Comparator
from .errors import InvalidRange, InvalidVersion
from .version import Version

_XNUM = r"(?:0|[1-9]\d*|[xX*])"
_PRE = r"(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?"
_BUILD = r"(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?"
_PARTIAL = rf"v?{_XNUM}(?:\.{_XNUM}(?:\.{_XNUM}{_PRE}{_BUILD})?)?"

_PARTIAL_RE = re.compile(
    r"^v?(?P<M>0|[1-9]\d*|[xX*])"
    r"(?:\.(?P<m>0|[1-9]\d*|[xX*])"
    r"(?:\.(?P<p>0|[1-9]\d*|[xX*])"
    r"(?:-(?P<pre>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
    r"(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?)?)?$"
)
_HYPHEN_RE = re.compile(rf"^\s*({_PARTIAL})\s+-\s+({_PARTIAL})\s*$")
_OPERATOR_SPACE_RE = re.compile(r"(<=|>=|<|>|=|~>|~|\^)\s+")
_TOKEN_RE = re.compile(r"^(?P<op><=|>=|<|>|=|~>|~|\^)?(?P<ver>.*)$")


def _parse_partial(text, original):
    """Return ``(major, minor, patch, prerelease)``; wildcards become None."""
    m = _PARTIAL_RE.match(text)
    if not m:
        raise InvalidRange(original, f"invalid version {text!r}")

    def num(group):
        value = m.group(group)
        if value is None or value in ("x", "X", "*"):
            return None
        return int(value)

    major, minor, patch = num("M"), num("m"), num("p")
    # Anything after a wildcard is a wildcard too: 1.x.3 means 1.x
    if major is None:
        minor = patch = None
    elif minor is None:
        patch = None
    pre = m.group("pre") if patch is not None else None
    if pre:
        try:
            Version.parse(f"0.0.0-{pre}")
        except InvalidVersion:
            raise InvalidRange(original, f"invalid prerelease in {text!r}") from None
    return major, minor, patch, pre


def _v(major, minor, patch, pre=None):
    return f"{major}.{minor}.{patch}" + (f"-{pre}" if pre else "")


def _caret(major, minor, patch, pre):
    if major is None:
        return [""]
    if minor is None:
        return [f">={_v(major, 0, 0)}", f"<{_v(major + 1, 0, 0, '0')}"]
    if patch is None:
        if major == 0:
            return [f">={_v(0, minor, 0)}", f"<{_v(0, minor + 1, 0, '0')}"]
        return [f">={_v(major, minor, 0)}", f"<{_v(major + 1, 0, 0, '0')}"]
    lower = f">={_v(major, minor, patch, pre)}"
    if major > 0:
        upper = _v(major + 1, 0, 0, "0")
    elif minor > 0:
        upper = _v(0, minor + 1, 0, "0")
    else:
        upper = _v(0, 0, patch + 1, "0")
    return [lower, f"<{upper}"]


def _tilde(major, minor, patch, pre):
    if major is None:
        return [""]
    if minor is None:
        return [f">={_v(major, 0, 0)}", f"<{_v(major + 1, 0, 0, '0')}"]
    if patch is None:
        return [f">={_v(major, minor, 0)}", f"<{_v(major, minor + 1, 0, '0')}"]
    return [f">={_v(major, minor, patch, pre)}", f"<{_v(major, minor + 1, 0, '0')}"]


def _xrange(op, major, minor, patch, pre):
    if op == "=":
        op = ""
    if major is None:
        if op in ("<", ">"):
            return ["<0.0.0-0"]  # nothing is allowed
        return [""]
    if minor is not None and patch is not None:
        return [f"{op}{_v(major, minor, patch, pre)}"]
    # partial version with an operator
    if op == "":
        if minor is None:
            return [f">={_v(major, 0, 0)}", f"<{_v(major + 1, 0, 0, '0')}"]
        return [f">={_v(major, minor, 0)}", f"<{_v(major, minor + 1, 0, '0')}"]
    if op == ">=":
        return [f">={_v(major, minor or 0, 0)}"]
    if op == ">":
        if minor is None:
            return [f">={_v(major + 1, 0, 0)}"]
        return [f">={_v(major, minor + 1, 0)}"]
    if op == "<":
        return [f"<{_v(major, minor or 0, 0, '0')}"]
    if op == "<=":
        if minor is None:
            return [f"<{_v(major + 1, 0, 0, '0')}"]
        return [f"<{_v(major, minor + 1, 0, '0')}"]
    raise InvalidRange(op, "unknown operator")


def _hyphen(low_text, high_text, original):
    lo = _parse_partial(low_text, original)
    hi = _parse_partial(high_text, original)
    out = []
    if lo[0] is not None:
        out.append(f">={_v(lo[0], lo[1] or 0, lo[2] or 0, lo[3] if lo[2] is not None else None)}")
    if hi[0] is not None:
        if hi[1] is None:
            out.append(f"<{_v(hi[0] + 1, 0, 0, '0')}")
        elif hi[2] is None:
            out.append(f"<{_v(hi[0], hi[1] + 1, 0, '0')}")
        else:
            out.append(f"<={_v(hi[0], hi[1], hi[2], hi[3])}")
    return out or [""]


def _desugar_token(token, original):
    m = _TOKEN_RE.match(token)
    op, ver = m.group("op") or "", m.group("ver")
    if not ver:
        raise InvalidRange(original, f"dangling operator {op!r}")
    parts = _parse_partial(ver, original)
    if op == "^":
        return _caret(*parts)
    if op in ("~", "~>"):
        return _tilde(*parts)
    return _xrange(op, *parts)


def parse_comparator_set(text, original=None):
    """Parse one ``||``-free comparator set into a tuple of Comparators."""
    original = text if original is None else original
    text = text.strip()
    if not text:
        return (Comparator(""),)
    hm = _HYPHEN_RE.match(text)
    if hm:
        raw = _hyphen(hm.group(1), hm.group(2), original)
    else:
        text = _OPERATOR_SPACE_RE.sub(r"\1", text)
        raw = []
        for token in text.split():
            raw.extend(_desugar_token(token, original))
    comparators = [Comparator(c) for c in raw]
    # An "any" comparator is redundant next to real constraints.
    real = [c for c in comparators if not c.is_any]
    return tuple(real) if real else (Comparator(""),)


class Range:
    """A parsed range expression.

    ``include_prerelease=True`` lets prerelease versions match any comparator
    set they fall within, instead of only sets that explicitly mention a
    prerelease of the same ``major.minor.patch``.
    """

    def __init__(self, text, include_prerelease=False):
        if isinstance(text, Range):
            self.raw = text.raw
            self.set = text.set
            self.include_prerelease = include_prerelease or text.include_prerelease
            return
        if not isinstance(text, str):
            raise InvalidRange(repr(text), "expected a string")
        self.raw = text
        self.include_prerelease = include_prerelease
        sets = [parse_comparator_set(part, text) for part in text.split("||")]
        # drop duplicate sets while keeping order
        unique = []
        for s in sets:
            if s not in unique:
                unique.append(s)
        self.set = unique

    @property
    def range(self):
        return "||".join(" ".join(str(c) for c in s) or "*" for s in self.set)

    def __str__(self):
        return self.range

    def __repr__(self):
        return f"Range({self.range!r})"

    def __eq__(self, other):
        if not isinstance(other, Range):
            return NotImplemented
        return self.set == other.set and self.include_prerelease == other.include_prerelease

    def __hash__(self):
        return hash((tuple(self.set), self.include_prerelease))

    def test(self, version):
        """Return True if ``version`` satisfies the range."""
        try:
            version = Version.parse(version)
        except InvalidVersion:
            return False
        return any(self._test_set(s, version) for s in self.set)

    __contains__ = test

    def _test_set(self, comparators, version):
        for comparator in comparators:
            if not comparator.test(version):
                return False
        if version.prerelease and not self.include_prerelease:
            # Prereleases are opt-in: the comparator set has to mention a
            # prerelease itself for a prerelease version to be acceptable.
            return any(c.semver is not None and c.semver.prerelease for c in comparators)
        return True

    def lower_bounds(self):
        """Return the smallest version allowed by each comparator set (or None)."""
        out = []
        for s in self.set:
            low = Version(0, 0, 0)
            for c in s:
                if c.semver is None:
                    continue
                if c.operator in (">=", "=") and c.semver > low:
                    low = c.semver
                elif c.operator == ">":
                    bumped = c.semver.bump("prerelease") if c.semver.prerelease else c.semver.bump("patch")
                    if bumped > low:
                        low = bumped
            out.append(low if self._test_set(s, low) else None)
        return out


def satisfies(version, range_text, include_prerelease=False):
    """Return True if ``version`` satisfies ``range_text``; invalid input is False."""
    try:
        rng = Range(range_text, include_prerelease=include_prerelease)
    except InvalidRange:
        return False
    return rng.test(version)
