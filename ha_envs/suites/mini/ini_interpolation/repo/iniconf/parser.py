"""Turn INI text into ordered sections of raw string values.

The grammar::

    ; comment            # comment
    [section name]
    key = value
    key: value
        continuation lines are indented and joined with a newline
    flag                 (only with allow_no_value=True, value is None)

Option names are lower-cased and stripped; section names are kept as written.
The ``[DEFAULT]`` section holds values visible from every other section.
"""

import re

from .errors import DuplicateOptionError, DuplicateSectionError, ParseError

DEFAULT_SECTION = "DEFAULT"
COMMENT_PREFIXES = ("#", ";")

_SECTION_RE = re.compile(r"^\[(?P<name>[^\]]*)\]\s*(?:[#;].*)?$")
_OPTION_RE = re.compile(r"^(?P<key>[^=:]+?)\s*(?P<sep>[=:])\s*(?P<value>.*)$")
_INLINE_COMMENT_RE = re.compile(r"\s+[#;].*$")


def optionxform(name):
    """Normalise an option name."""
    return name.strip().lower()


class ParsedConfig:
    """Result of :func:`parse`: defaults plus ordered sections."""

    def __init__(self):
        self.defaults = {}
        self.sections = {}

    def section_names(self):
        return list(self.sections)

    def __repr__(self):
        return f"ParsedConfig(sections={self.section_names()!r})"


def _strip_inline_comment(value, inline_comments):
    if not inline_comments:
        return value
    return _INLINE_COMMENT_RE.sub("", value)


def parse(text, *, strict=True, allow_no_value=False, inline_comments=True,
          target=None):
    """Parse ``text`` and return a :class:`ParsedConfig`.

    ``target`` may be an existing :class:`ParsedConfig` to merge into (later
    values win; duplicate checks only apply within ``text``).
    """
    result = target if target is not None else ParsedConfig()
    seen_sections = set()
    seen_options = set()
    current = None          # dict of the current section
    current_name = None
    last_key = None         # option that continuation lines extend
    last_indent = 0

    for lineno, raw_line in enumerate(text.splitlines(), start=1):
        line = raw_line.rstrip()
        stripped = line.strip()

        if not stripped or stripped.startswith(COMMENT_PREFIXES):
            # blank lines end a continuation; comments are skipped
            if not stripped:
                last_key = None
            continue

        indent = len(line) - len(line.lstrip())
        if last_key is not None and indent > last_indent and current is not None:
            previous = current[last_key]
            extra = _strip_inline_comment(stripped, inline_comments)
            current[last_key] = extra if not previous else previous + "\n" + extra
            continue

        match = _SECTION_RE.match(stripped)
        if match:
            name = match.group("name").strip()
            if not name:
                raise ParseError("empty section name", lineno, raw_line)
            if strict and name in seen_sections:
                raise DuplicateSectionError(name, lineno, raw_line)
            seen_sections.add(name)
            if name == DEFAULT_SECTION:
                current = result.defaults
            else:
                current = result.sections.setdefault(name, {})
            current_name = name
            last_key = None
            continue

        if current is None:
            raise ParseError("option outside of any section", lineno, raw_line)

        match = _OPTION_RE.match(stripped)
        if match:
            key = optionxform(match.group("key"))
            value = _strip_inline_comment(match.group("value").strip(),
                                          inline_comments)
        elif allow_no_value:
            key, value = optionxform(stripped), None
        else:
            raise ParseError("expected 'key = value'", lineno, raw_line)

        if not key:
            raise ParseError("empty option name", lineno, raw_line)
        if strict and (current_name, key) in seen_options:
            raise DuplicateOptionError(current_name, key, lineno, raw_line)
        seen_options.add((current_name, key))
        current[key] = value
        last_key = key if value is not None else None
        last_indent = indent

    return result
