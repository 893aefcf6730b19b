"""Measuring and fitting text into a number of terminal cells."""

ELLIPSIS = "\u2026"

ALIGNMENTS = ("left", "right", "center")


def display_width(text):
    """Return the number of terminal cells ``text`` occupies.

    For multi-line text the widest line is returned.
    """
    text = str(text)
    if "\n" in text:
        return max(display_width(line) for line in text.split("\n"))
    return len(text)


def pad(text, width, align="left", fill=" "):
    """Pad ``text`` with ``fill`` to exactly ``width`` cells.

    Text that is already wider than ``width`` is returned unchanged.
    """
    if align not in ALIGNMENTS:
        raise ValueError(f"unknown alignment {align!r}; expected one of {ALIGNMENTS}")
    text = str(text)
    missing = width - display_width(text)
    if missing <= 0:
        return text
    if align == "left":
        return text + fill * missing
    if align == "right":
        return fill * missing + text
    left = missing // 2
    return fill * left + text + fill * (missing - left)


def truncate(text, width, ellipsis=ELLIPSIS):
    """Shorten ``text`` to at most ``width`` cells, marking the cut with ``ellipsis``."""
    text = str(text)
    if width <= 0:
        return ""
    if display_width(text) <= width:
        return text
    room = width - display_width(ellipsis)
    if room <= 0:
        return ellipsis[:width]
    return text[:room] + ellipsis
