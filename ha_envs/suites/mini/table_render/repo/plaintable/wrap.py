"""Word wrapping of cell contents."""

import re

_SPACE_RE = re.compile(r"[ \t]+")


def _split_long_word(word, width):
    """Cut a word that does not fit on one line into ``width``-sized pieces."""
    return [word[i:i + width] for i in range(0, len(word), width)]


def wrap_paragraph(text, width):
    """Greedy word wrap of a single paragraph (no newlines) to ``width`` cells."""
    words = [w for w in _SPACE_RE.split(text.strip()) if w]
    if not words:
        return [""]
    lines = []
    current = ""
    for word in words:
        if len(word) > width:
            if current:
                lines.append(current)
                current = ""
            pieces = _split_long_word(word, width)
            lines.extend(pieces[:-1])
            current = pieces[-1]
            continue
        if not current:
            current = word
        elif len(current) + 1 + len(word) <= width:
            current = current + " " + word
        else:
            lines.append(current)
            current = word
    lines.append(current)
    return lines


def wrap_cell(text, width):
    """Wrap cell text to lines of at most ``width`` cells.

    Explicit newlines in the text are kept as line breaks.  ``width`` must
    be at least 1.
    """
    if width < 1:
        raise ValueError("width must be at least 1")
    out = []
    for paragraph in str(text).split("\n"):
        out.extend(wrap_paragraph(paragraph, width))
    return out
