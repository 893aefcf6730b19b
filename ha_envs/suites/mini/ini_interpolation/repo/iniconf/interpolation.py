"""Expansion of ``$`` references inside values.

Syntax:

* ``${option}``          - an option of the same section (or DEFAULT)
* ``${section:option}``  - an option of another section (or DEFAULT)
* ``$$``                 - a literal ``$``

A referenced value is itself expanded before it is substituted. Unqualified
references inside a value always resolve against the section that value
belongs to. Expansion stops with :class:`InterpolationDepthError` after
``max_depth`` nested levels.
"""

import re

from .errors import (
    InterpolationDepthError,
    InterpolationMissingOptionError,
    InterpolationSyntaxError,
)

MAX_DEPTH = 10

_TOKEN_RE = re.compile(r"\$(?:(?P<dollar>\$)|\{(?P<ref>[^{}]*)\}|(?P<bad>.?))")


class Interpolator:
    """Expand references using ``lookup(section, option) -> raw value``.

    ``lookup`` must raise :class:`KeyError` when the option does not exist
    (neither in the section nor in DEFAULT) and return ``None`` for options
    declared without a value.
    """

    def __init__(self, lookup, max_depth=MAX_DEPTH, optionxform=str.lower):
        self._lookup = lookup
        self.max_depth = max_depth
        self._optionxform = optionxform

    def expand(self, section, option, rawval):
        """Return ``rawval`` (the value of ``[section] option``) expanded."""
        if rawval is None or "$" not in rawval:
            return rawval
        return self._expand(section, option, rawval, 1)

    def references(self, section, rawval):
        """List the ``(section, option)`` pairs ``rawval`` refers to directly."""
        refs = []
        if rawval is None:
            return refs
        for match in _TOKEN_RE.finditer(rawval):
            ref = match.group("ref")
            if ref is not None and ref.strip():
                refs.append(self._split_reference(section, ref))
        return refs

    # -- internals ---------------------------------------------------------

    def _split_reference(self, section, ref):
        ref = ref.strip()
        if ":" in ref:
            ref_section, _, ref_option = ref.partition(":")
            ref_section = ref_section.strip()
        else:
            ref_section, ref_option = section, ref
        return ref_section, self._optionxform(ref_option.strip())

    def _expand(self, section, option, value, depth):
        if depth > self.max_depth:
            raise InterpolationDepthError(section, option, value, self.max_depth)

        pieces = []
        pos = 0
        for match in _TOKEN_RE.finditer(value):
            pieces.append(value[pos:match.start()])
            pos = match.end()

            if match.group("dollar") is not None:
                pieces.append("$")
                continue

            ref = match.group("ref")
            if ref is None:
                raise InterpolationSyntaxError(
                    section, option, value,
                    "'$' must be followed by '$' or '{'")
            if not ref.strip():
                raise InterpolationSyntaxError(
                    section, option, value, "empty reference '${}'")
            if ref.count(":") > 1:
                raise InterpolationSyntaxError(
                    section, option, value,
                    f"more than one ':' in reference {ref!r}")

            ref_section, ref_option = self._split_reference(section, ref)
            if not ref_section or not ref_option:
                raise InterpolationSyntaxError(
                    section, option, value, f"incomplete reference {ref!r}")

            try:
                raw = self._lookup(ref_section, ref_option)
            except KeyError:
                raise InterpolationMissingOptionError(
                    section, option, value, ref_section, ref_option) from None

            if raw is None:
                raw = ""
            elif "$" in raw:
                raw = self._expand(section, ref_option, raw, depth + 1)
            pieces.append(raw)

        pieces.append(value[pos:])
        return "".join(pieces)
