"""Primitive comparators such as ``>=1.2.3`` or ``<2.0.0-0``."""

import re

from .errors import InvalidRange, InvalidVersion
from .version import Version

OPERATORS = ("", "=", "<", "<=", ">", ">=")

_COMPARATOR_RE = re.compile(r"^\s*(<=|>=|<|>|=)?\s*(\S*)\s*$")


class Comparator:
    """A single ``<op><version>`` constraint.

    The empty comparator (``Comparator("")``) is the *any* comparator and
    matches every version; :attr:`semver` is ``None`` for it.
    """

    __slots__ = ("operator", "semver")

    def __init__(self, text=""):
        if isinstance(text, Comparator):
            self.operator = text.operator
            self.semver = text.semver
            return
        m = _COMPARATOR_RE.match(text)
        if not m:
            raise InvalidRange(text, "invalid comparator")
        op, version = m.group(1) or "", m.group(2)
        if not version:
            if op:
                raise InvalidRange(text, "operator without a version")
            self.operator = ""
            self.semver = None
            return
        try:
            self.semver = Version.parse(version)
        except InvalidVersion:
            raise InvalidRange(text, "invalid version in comparator") from None
        self.operator = "=" if op == "" else op

    @classmethod
    def of(cls, operator, version):
        if operator not in OPERATORS:
            raise InvalidRange(operator, "unknown operator")
        comp = cls.__new__(cls)
        comp.operator = "=" if operator == "" else operator
        comp.semver = Version.parse(version)
        return comp

    @property
    def is_any(self):
        return self.semver is None

    def test(self, version):
        """Return True if ``version`` satisfies this single comparator."""
        if self.semver is None:
            return True
        version = Version.parse(version)
        c = version.compare(self.semver)
        op = self.operator
        if op == "=":
            return c == 0
        if op == "<":
            return c < 0
        if op == "<=":
            return c <= 0
        if op == ">":
            return c > 0
        if op == ">=":
            return c >= 0
        raise AssertionError(f"unreachable operator {op!r}")

    def __eq__(self, other):
        if not isinstance(other, Comparator):
            return NotImplemented
        return self.operator == other.operator and self.semver == other.semver

    def __hash__(self):
        return hash((self.operator, self.semver))

    def __str__(self):
        if self.semver is None:
            return ""
        op = "" if self.operator == "=" else self.operator
        return f"{op}{self.semver}"

    def __repr__(self):
        return f"Comparator({str(self)!r})"
