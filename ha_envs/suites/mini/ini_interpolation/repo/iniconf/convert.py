"""Converters used by the typed getters of :class:`iniconf.Config`."""

import re

_TRUE = {"1", "yes", "true", "on"}
_FALSE = {"0", "no", "false", "off"}

_DURATION_RE = re.compile(r"(?P<num>\d+(?:\.\d+)?)\s*(?P<unit>ms|s|m|h|d)?")
_DURATION_UNITS = {
    None: 1.0,
    "ms": 0.001,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}


def to_boolean(value):
    """``yes/no``, ``on/off``, ``true/false``, ``1/0`` (case-insensitive)."""
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"not a boolean: {value!r}")


def to_int(value):
    """Decimal integers; ``0x``/``0o``/``0b`` prefixes and ``_`` separators."""
    text = value.strip().replace("_", "")
    if not text:
        raise ValueError("empty integer")
    return int(text, 0) if text.lower().lstrip("+-")[:2] in ("0x", "0o", "0b") \
        else int(text, 10)


def to_float(value):
    return float(value.strip().replace("_", ""))


def to_list(value, separator=None):
    """Split on ``separator`` (default: commas and newlines), drop empties."""
    if separator is None:
        parts = re.split(r"[,\n]", value)
    else:
        parts = value.split(separator)
    return [part.strip() for part in parts if part.strip()]


def to_duration(value):
    """Durations like ``90``, ``1.5s``, ``250ms``, ``2h 30m`` -> seconds."""
    text = value.strip().lower()
    if not text:
        raise ValueError("empty duration")
    total = 0.0
    pos = 0
    for match in _DURATION_RE.finditer(text):
        if text[pos:match.start()].strip():
            raise ValueError(f"not a duration: {value!r}")
        total += float(match.group("num")) * _DURATION_UNITS[match.group("unit")]
        pos = match.end()
    if pos == 0 or text[pos:].strip():
        raise ValueError(f"not a duration: {value!r}")
    return total
