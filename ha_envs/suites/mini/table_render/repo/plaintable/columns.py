"""Column model and column width computation."""

from .width import ALIGNMENTS, display_width

_NUMERIC_TYPES = (int, float)


def looks_numeric(value):
    """True for numbers and strings such as ``"12"``, ``"-3.5"``, ``"1,024"``."""
    if isinstance(value, bool):
        return False
    if isinstance(value, _NUMERIC_TYPES):
        return True
    if isinstance(value, str):
        text = value.strip().replace(",", "").replace("_", "")
        if not text:
            return False
        try:
            float(text)
        except ValueError:
            return False
        return True
    return False


class Column:
    """Description of one table column.

    ``align`` is ``left``, ``right``, ``center`` or ``auto`` (right for
    numeric columns, left otherwise).  ``width`` fixes the content width;
    ``max_width`` / ``min_width`` bound it.  Cells wider than the column are
    wrapped when ``wrap`` is true and truncated otherwise.  ``fmt`` is a
    format spec (``".2f"``) or a callable used to turn values into text.
    """

    def __init__(self, header, align="auto", width=None, min_width=1, max_width=None,
                 wrap=True, fmt=None, header_align=None, missing=""):
        if align != "auto" and align not in ALIGNMENTS:
            raise ValueError(f"unknown alignment {align!r}")
        if header_align is not None and header_align not in ALIGNMENTS:
            raise ValueError(f"unknown header alignment {header_align!r}")
        if width is not None and width < 1:
            raise ValueError("width must be positive")
        if min_width < 1:
            raise ValueError("min_width must be positive")
        if max_width is not None and max_width < min_width:
            raise ValueError("max_width is smaller than min_width")
        self.header = str(header)
        self.align = align
        self.width = width
        self.min_width = min_width
        self.max_width = max_width
        self.wrap = wrap
        self.fmt = fmt
        self.header_align = header_align
        self.missing = missing

    @classmethod
    def coerce(cls, spec):
        if isinstance(spec, Column):
            return spec
        if isinstance(spec, dict):
            return cls(**spec)
        return cls(spec)

    def format(self, value):
        """Turn a cell value into text."""
        if value is None:
            return self.missing
        if callable(self.fmt):
            return str(self.fmt(value))
        if self.fmt:
            try:
                return format(value, self.fmt)
            except (TypeError, ValueError):
                pass
            if isinstance(value, str) and looks_numeric(value):
                number = float(value.strip().replace(",", "").replace("_", ""))
                try:
                    return format(number, self.fmt)
                except (TypeError, ValueError):
                    pass
            return str(value)
        if isinstance(value, float):
            return f"{value:g}"
        return str(value)

    def resolved_align(self, values):
        if self.align != "auto":
            return self.align
        present = [v for v in values if v is not None and v != ""]
        if present and all(looks_numeric(v) for v in present):
            return "right"
        return "left"

    def __repr__(self):
        return f"Column({self.header!r}, align={self.align!r})"


def natural_width(column, texts, include_header=True):
    """Width the column would like: its widest line, within its bounds."""
    if column.width is not None:
        return column.width
    widest = display_width(column.header) if include_header else 0
    for text in texts:
        widest = max(widest, display_width(text))
    widest = max(widest, column.min_width)
    if column.max_width is not None:
        widest = min(widest, column.max_width)
    return widest


def compute_widths(columns, text_rows, max_total=None, overhead=0, include_header=True):
    """Return the content width of every column.

    ``text_rows`` holds already formatted cell texts.  When ``max_total`` is
    given the widest flexible columns (no fixed ``width``) are narrowed one
    cell at a time until ``sum(widths) + overhead`` fits, never below their
    ``min_width``.
    """
    widths = []
    for i, column in enumerate(columns):
        texts = [row[i] for row in text_rows]
        widths.append(natural_width(column, texts, include_header))
    if max_total is None:
        return widths
    budget = max_total - overhead
    while sum(widths) > budget:
        candidates = [
            i for i, c in enumerate(columns)
            if c.width is None and widths[i] > c.min_width
        ]
        if not candidates:
            break
        widest = max(candidates, key=lambda i: (widths[i], -i))
        widths[widest] -= 1
    return widths
