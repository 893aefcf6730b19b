"""The syntax tree of a compiled path.

A :class:`Path` is a list of segments applied left to right; each segment holds one or more
selectors. Filter selectors hold an expression tree of the classes at the end of this module.
"""

from dataclasses import dataclass, field
from typing import Any, List, Optional, Tuple


# -- selectors ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class NameSelector:
    name: str


@dataclass(frozen=True)
class IndexSelector:
    index: int


@dataclass(frozen=True)
class SliceSelector:
    start: Optional[int] = None
    stop: Optional[int] = None
    step: Optional[int] = None


@dataclass(frozen=True)
class WildcardSelector:
    pass


@dataclass(frozen=True)
class FilterSelector:
    expression: Any


# -- segments ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ChildSegment:
    """``.name``, ``[...]``: apply the selectors to the current values."""

    selectors: Tuple[Any, ...]


@dataclass(frozen=True)
class DescendantSegment:
    """``..name``, ``..[...]``: apply the selectors to every value at any depth below."""

    selectors: Tuple[Any, ...]


@dataclass(frozen=True)
class Path:
    """A whole path. ``absolute`` is True for ``$...`` and False for ``@...``."""

    absolute: bool
    segments: Tuple[Any, ...] = field(default_factory=tuple)

    @property
    def is_singular(self):
        """True when the path can select at most one value (names and indexes only)."""
        for seg in self.segments:
            if not isinstance(seg, ChildSegment) or len(seg.selectors) != 1:
                return False
            if not isinstance(seg.selectors[0], (NameSelector, IndexSelector)):
                return False
        return True


# -- filter expressions ------------------------------------------------------------------------

@dataclass(frozen=True)
class Literal:
    value: Any


@dataclass(frozen=True)
class Comparison:
    op: str
    left: Any
    right: Any


@dataclass(frozen=True)
class And:
    operands: Tuple[Any, ...]


@dataclass(frozen=True)
class Or:
    operands: Tuple[Any, ...]


@dataclass(frozen=True)
class Not:
    operand: Any


@dataclass(frozen=True)
class Exists:
    """A path used as a test: true when it selects at least one value."""

    path: Path


def walk(node) -> List[Any]:
    """All nodes of an expression tree, depth first (for tests and debugging)."""
    out = [node]
    if isinstance(node, Comparison):
        out += walk(node.left) + walk(node.right)
    elif isinstance(node, (And, Or)):
        for op in node.operands:
            out += walk(op)
    elif isinstance(node, Not):
        out += walk(node.operand)
    elif isinstance(node, Exists):
        out += walk(node.path)
    return out
