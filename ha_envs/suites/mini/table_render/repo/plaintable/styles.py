"""Border styles."""

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Rule:
    """A horizontal rule: ``left + fill... + mid + fill... + right``."""

    left: str
    fill: str
    mid: str
    right: str


@dataclass(frozen=True)
class BorderStyle:
    name: str
    left: str           # outer left edge of a content line
    sep: str            # between two cells of a content line
    right: str          # outer right edge of a content line
    top: Optional[Rule] = None
    header: Optional[Rule] = None
    row: Optional[Rule] = None      # between body rows when row separators are on
    bottom: Optional[Rule] = None
    padding: int = 1                # spaces on each side of a cell
    markdown_align: bool = False    # header rule shows :--- / ---: / :---:

    def rule_line(self, rule, widths, aligns=None):
        if rule is None:
            return None
        parts = []
        for i, w in enumerate(widths):
            total = w + 2 * self.padding
            if self.markdown_align and aligns is not None:
                parts.append(_markdown_segment(rule.fill, total, aligns[i]))
            else:
                parts.append(rule.fill * total)
        return rule.left + rule.mid.join(parts) + rule.right


def _markdown_segment(fill, total, align):
    if total < 3:
        return fill * total
    if align == "right":
        return fill * (total - 1) + ":"
    if align == "center":
        return ":" + fill * (total - 2) + ":"
    return fill * total


ASCII = BorderStyle(
    "ascii", "|", "|", "|",
    top=Rule("+", "-", "+", "+"),
    header=Rule("+", "=", "+", "+"),
    row=Rule("+", "-", "+", "+"),
    bottom=Rule("+", "-", "+", "+"),
)

GRID = BorderStyle(
    "grid", "\u2502", "\u2502", "\u2502",
    top=Rule("\u250c", "\u2500", "\u252c", "\u2510"),
    header=Rule("\u251c", "\u2500", "\u253c", "\u2524"),
    row=Rule("\u251c", "\u2500", "\u253c", "\u2524"),
    bottom=Rule("\u2514", "\u2500", "\u2534", "\u2518"),
)

ROUNDED = BorderStyle(
    "rounded", "\u2502", "\u2502", "\u2502",
    top=Rule("\u256d", "\u2500", "\u252c", "\u256e"),
    header=Rule("\u251c", "\u2500", "\u253c", "\u2524"),
    row=Rule("\u251c", "\u2500", "\u253c", "\u2524"),
    bottom=Rule("\u2570", "\u2500", "\u2534", "\u256f"),
)

MARKDOWN = BorderStyle(
    "markdown", "|", "|", "|",
    header=Rule("|", "-", "|", "|"),
    markdown_align=True,
)

SIMPLE = BorderStyle(
    "simple", "", "  ", "",
    header=Rule("", "-", "  ", ""),
    padding=0,
)

PLAIN = BorderStyle("plain", "", "  ", "", padding=0)

STYLES = {s.name: s for s in (ASCII, GRID, ROUNDED, MARKDOWN, SIMPLE, PLAIN)}


def get_style(style):
    """Return a :class:`BorderStyle` given a style object or its name."""
    if isinstance(style, BorderStyle):
        return style
    try:
        return STYLES[style]
    except KeyError:
        raise ValueError(f"unknown style {style!r}; available: {', '.join(sorted(STYLES))}") from None
