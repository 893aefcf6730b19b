"""plaintable: plain-text table rendering."""

from .columns import Column, compute_widths
from .csvinput import from_csv, read_csv_rows
from .render import Table, render_table
from .styles import STYLES, BorderStyle, get_style
from .width import display_width, pad, truncate
from .wrap import wrap_cell

__all__ = [
    "BorderStyle",
    "Column",
    "STYLES",
    "Table",
    "compute_widths",
    "display_width",
    "from_csv",
    "get_style",
    "pad",
    "read_csv_rows",
    "render_table",
    "truncate",
    "wrap_cell",
]

__version__ = "1.3.0"
