"""Public entry points: :func:`compile`, :func:`query`, :func:`first` and :class:`JSONPath`."""

import functools
from typing import Any, List, NamedTuple, Tuple

from .evaluator import Evaluator
from .parser import parse


def _quote_name(name):
    escaped = name.replace("\\", "\\\\").replace("'", "\\'")
    escaped = "".join(c if ord(c) >= 0x20 else f"\\u{ord(c):04x}" for c in escaped)
    return "'" + escaped + "'"


def format_location(location):
    """``('store', 'book', 0)`` -> ``$['store']['book'][0]`` (normalized path)."""
    out = ["$"]
    for part in location:
        if isinstance(part, int):
            out.append(f"[{part}]")
        else:
            out.append(f"[{_quote_name(part)}]")
    return "".join(out)


class Match(NamedTuple):
    value: Any
    location: Tuple[Any, ...]

    @property
    def path(self):
        return format_location(self.location)


class JSONPath:
    """A compiled path expression."""

    def __init__(self, expression):
        self.expression = expression
        self.ast = parse(expression)

    def find(self, data) -> List[Match]:
        return [Match(v, loc) for v, loc in Evaluator(data).evaluate(self.ast)]

    def values(self, data) -> List[Any]:
        return [m.value for m in self.find(data)]

    def first(self, data, default=None):
        matches = self.find(data)
        return matches[0].value if matches else default

    def paths(self, data) -> List[str]:
        return [m.path for m in self.find(data)]

    def __repr__(self):
        return f"JSONPath({self.expression!r})"


@functools.lru_cache(maxsize=256)
def compile(expression) -> JSONPath:  # noqa: A001 - mirrors re.compile
    """Parse ``expression`` once; results are cached."""
    return JSONPath(expression)


def query(data, expression) -> List[Any]:
    """All values selected by ``expression`` in ``data``."""
    return compile(expression).values(data)


def first(data, expression, default=None):
    """The first value selected by ``expression``, or ``default``."""
    return compile(expression).first(data, default)


def paths(data, expression) -> List[str]:
    """The normalized paths of the values selected by ``expression``."""
    return compile(expression).paths(data)
