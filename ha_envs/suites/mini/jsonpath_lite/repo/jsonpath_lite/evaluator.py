"""Applies a parsed :class:`~jsonpath_lite.nodes.Path` to JSON-like data.

The evaluator works on *node lists*: lists of ``(value, location)`` pairs, where ``location``
is the tuple of member names and array indexes leading from the root to ``value``.
"""

from . import nodes as n
from .errors import JSONPathTypeError


def is_array(value):
    return isinstance(value, (list, tuple))


def is_object(value):
    return isinstance(value, dict)


def children(value, location):
    """The direct children of a value, with their locations, in document order."""
    if is_object(value):
        return [(v, location + (k,)) for k, v in value.items()]
    if is_array(value):
        return [(v, location + (i,)) for i, v in enumerate(value)]
    return []


def descendants(value, location):
    """The value itself and every value below it, in document (pre-)order."""
    out = [(value, location)]
    for child, loc in children(value, location):
        out.extend(descendants(child, loc))
    return out


def normalize_index(index, length):
    """Python-style negative indexes; return None when out of range."""
    if index < 0:
        index += length
    if 0 <= index < length:
        return index
    return None


def slice_indices(selector, length):
    """Indexes selected by a slice on an array of ``length`` elements."""
    step = 1 if selector.step is None else selector.step
    if step == 0:
        return []
    return list(range(length))[slice(selector.start, selector.stop, step)]


class Evaluator:
    """Evaluates paths against one document (the root is kept for ``$`` inside filters)."""

    def __init__(self, root):
        if not isinstance(root, (dict, list, tuple, str, int, float, bool, type(None))):
            raise JSONPathTypeError(f"cannot query a {type(root).__name__}")
        self.root = root
        # imported here to avoid a cycle: filters needs the evaluator to resolve paths
        from .filters import FilterContext

        self._filter_context = FilterContext(self)

    def evaluate(self, path, current=None, current_location=()):
        """Return the node list selected by ``path``."""
        if path.absolute:
            nodes = [(self.root, ())]
        else:
            nodes = [(current, current_location)]
        for segment in path.segments:
            nodes = self._apply_segment(segment, nodes)
        return nodes

    def _apply_segment(self, segment, nodes):
        out = []
        if isinstance(segment, n.ChildSegment):
            for value, loc in nodes:
                for selector in segment.selectors:
                    out.extend(self._select(selector, value, loc))
        elif isinstance(segment, n.DescendantSegment):
            for value, loc in nodes:
                for desc, dloc in descendants(value, loc):
                    for selector in segment.selectors:
                        out.extend(self._select(selector, desc, dloc))
        else:  # pragma: no cover - the parser never builds anything else
            raise TypeError(f"unknown segment {segment!r}")
        return out

    def _select(self, selector, value, loc):
        if isinstance(selector, n.NameSelector):
            if is_object(value) and selector.name in value:
                return [(value[selector.name], loc + (selector.name,))]
            return []
        if isinstance(selector, n.IndexSelector):
            if is_array(value):
                i = normalize_index(selector.index, len(value))
                if i is not None:
                    return [(value[i], loc + (i,))]
            return []
        if isinstance(selector, n.SliceSelector):
            if is_array(value):
                return [(value[i], loc + (i,)) for i in slice_indices(selector, len(value))]
            return []
        if isinstance(selector, n.WildcardSelector):
            return children(value, loc)
        if isinstance(selector, n.FilterSelector):
            return [
                (child, cloc)
                for child, cloc in children(value, loc)
                if self._filter_context.test(selector.expression, child, cloc)
            ]
        raise TypeError(f"unknown selector {selector!r}")  # pragma: no cover
