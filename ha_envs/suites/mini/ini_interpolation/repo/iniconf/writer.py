"""Serialise configuration data back to INI text."""

from .parser import DEFAULT_SECTION


def _format_value(value):
    if value is None:
        return None
    lines = str(value).split("\n")
    return "\n".join([lines[0]] + ["    " + line for line in lines[1:]])


def _write_section(out, name, options, delimiter):
    out.append(f"[{name}]")
    for key, value in options.items():
        formatted = _format_value(value)
        if formatted is None:
            out.append(key)
        else:
            out.append(f"{key} {delimiter} {formatted}".rstrip())
    out.append("")


def dumps(defaults, sections, delimiter="="):
    """Return INI text for ``defaults`` and the ``sections`` mapping."""
    out = []
    if defaults:
        _write_section(out, DEFAULT_SECTION, defaults, delimiter)
    for name, options in sections.items():
        _write_section(out, name, options, delimiter)
    return "\n".join(out)
