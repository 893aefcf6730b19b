"""Semantic version objects (SemVer 2.0.0)."""

import functools
import re

from .errors import InvalidVersion

_NUM = r"0|[1-9]\d*"
_IDENT = r"(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)"
_BUILD_IDENT = r"[0-9A-Za-z-]+"

VERSION_RE = re.compile(
    rf"^v?(?P<major>{_NUM})\.(?P<minor>{_NUM})\.(?P<patch>{_NUM})"
    rf"(?:-(?P<pre>{_IDENT}(?:\.{_IDENT})*))?"
    rf"(?:\+(?P<build>{_BUILD_IDENT}(?:\.{_BUILD_IDENT})*))?$"
)


def _coerce_identifier(part):
    """Numeric prerelease identifiers compare numerically, so store them as ints."""
    return int(part) if part.isdigit() else part


def _compare_identifiers(a, b):
    a_num = isinstance(a, int)
    b_num = isinstance(b, int)
    if a_num and b_num:
        return (a > b) - (a < b)
    if a_num:
        return -1  # numeric identifiers have lower precedence
    if b_num:
        return 1
    return (a > b) - (a < b)


def _compare_prerelease(a, b):
    """Compare two prerelease tuples; an empty tuple (a release) sorts last."""
    if not a and not b:
        return 0
    if not a:
        return 1
    if not b:
        return -1
    for x, y in zip(a, b):
        c = _compare_identifiers(x, y)
        if c:
            return c
    return (len(a) > len(b)) - (len(a) < len(b))


@functools.total_ordering
class Version:
    """An immutable semantic version.

    Build metadata is kept for display but ignored by comparisons and hashing,
    as required by the specification.
    """

    __slots__ = ("major", "minor", "patch", "prerelease", "build")

    def __init__(self, major, minor=0, patch=0, prerelease=(), build=()):
        for name, value in (("major", major), ("minor", minor), ("patch", patch)):
            if not isinstance(value, int) or value < 0:
                raise InvalidVersion(f"{major}.{minor}.{patch}", f"{name} must be a non-negative int")
        if isinstance(prerelease, str):
            prerelease = tuple(_coerce_identifier(p) for p in prerelease.split(".")) if prerelease else ()
        if isinstance(build, str):
            build = tuple(build.split(".")) if build else ()
        object.__setattr__(self, "major", major)
        object.__setattr__(self, "minor", minor)
        object.__setattr__(self, "patch", patch)
        object.__setattr__(self, "prerelease", tuple(prerelease))
        object.__setattr__(self, "build", tuple(build))

    def __setattr__(self, name, value):
        raise AttributeError("Version objects are immutable")

    # -- construction -------------------------------------------------
    @classmethod
    def parse(cls, text):
        if isinstance(text, Version):
            return text
        if not isinstance(text, str):
            raise InvalidVersion(repr(text), "expected a string")
        stripped = text.strip()
        if stripped.startswith("="):
            stripped = stripped[1:].strip()
        m = VERSION_RE.match(stripped)
        if not m:
            raise InvalidVersion(text)
        pre = m.group("pre")
        build = m.group("build")
        return cls(
            int(m.group("major")),
            int(m.group("minor")),
            int(m.group("patch")),
            tuple(_coerce_identifier(p) for p in pre.split(".")) if pre else (),
            tuple(build.split(".")) if build else (),
        )

    @classmethod
    def is_valid(cls, text):
        try:
            cls.parse(text)
        except InvalidVersion:
            return False
        return True

    # -- properties ---------------------------------------------------
    @property
    def is_prerelease(self):
        return bool(self.prerelease)

    @property
    def release_tuple(self):
        return (self.major, self.minor, self.patch)

    def finalize(self):
        """Return the release version with prerelease and build stripped."""
        return Version(self.major, self.minor, self.patch)

    # -- bumping ------------------------------------------------------
    def bump(self, part, identifier=None):
        """Return the next version for ``part``.

        ``part`` is one of ``major``, ``minor``, ``patch``, ``prerelease``.
        Bumping a prerelease of a release tuple to the same level finalizes it
        (``1.0.0-rc.1`` bumped ``major`` is ``1.0.0``), like ``npm version``.
        """
        if part == "major":
            if self.prerelease and self.minor == 0 and self.patch == 0:
                return Version(self.major, 0, 0)
            return Version(self.major + 1, 0, 0)
        if part == "minor":
            if self.prerelease and self.patch == 0:
                return Version(self.major, self.minor, 0)
            return Version(self.major, self.minor + 1, 0)
        if part == "patch":
            if self.prerelease:
                return Version(self.major, self.minor, self.patch)
            return Version(self.major, self.minor, self.patch + 1)
        if part == "prerelease":
            if not self.prerelease:
                base = Version(self.major, self.minor, self.patch + 1)
                pre = (identifier, 0) if identifier else (0,)
                return Version(base.major, base.minor, base.patch, pre)
            pre = list(self.prerelease)
            if identifier and pre[0] != identifier:
                return Version(self.major, self.minor, self.patch, (identifier, 0))
            for i in range(len(pre) - 1, -1, -1):
                if isinstance(pre[i], int):
                    pre[i] += 1
                    break
            else:
                pre.append(0)
            return Version(self.major, self.minor, self.patch, tuple(pre))
        raise ValueError(f"unknown version part: {part!r}")

    # -- comparison ---------------------------------------------------
    def compare(self, other):
        other = Version.parse(other)
        a = self.release_tuple
        b = other.release_tuple
        if a != b:
            return (a > b) - (a < b)
        return _compare_prerelease(self.prerelease, other.prerelease)

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = Version.parse(other)
            except InvalidVersion:
                return NotImplemented
        if not isinstance(other, Version):
            return NotImplemented
        return self.compare(other) == 0

    def __lt__(self, other):
        if isinstance(other, str):
            other = Version.parse(other)
        if not isinstance(other, Version):
            return NotImplemented
        return self.compare(other) < 0

    def __hash__(self):
        return hash((self.major, self.minor, self.patch, self.prerelease))

    # -- display ------------------------------------------------------
    def __str__(self):
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(str(p) for p in self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def __repr__(self):
        return f"Version({str(self)!r})"


def parse(text):
    """Parse ``text`` into a :class:`Version`."""
    return Version.parse(text)


def compare(a, b):
    """Return -1, 0 or 1 comparing two versions (strings or Version objects)."""
    return Version.parse(a).compare(Version.parse(b))
