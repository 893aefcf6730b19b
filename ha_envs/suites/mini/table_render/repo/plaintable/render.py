"""Laying out and rendering tables."""

from .columns import Column, compute_widths
from .styles import get_style
from .width import pad, truncate
from .wrap import wrap_cell


class Table:
    """A table: a list of columns and rows of values.

    Rows are lists (or tuples) with one value per column, or dicts keyed by
    column header.
    """

    def __init__(self, columns, rows=None):
        self.columns = [Column.coerce(c) for c in columns]
        if not self.columns:
            raise ValueError("a table needs at least one column")
        self.rows = []
        for row in rows or ():
            self.add_row(row)

    # -- data ---------------------------------------------------------
    def add_row(self, row):
        if isinstance(row, dict):
            unknown = set(row) - {c.header for c in self.columns}
            if unknown:
                raise KeyError(f"unknown columns: {', '.join(sorted(unknown))}")
            row = [row.get(c.header) for c in self.columns]
        row = list(row)
        if len(row) > len(self.columns):
            raise ValueError(f"row has {len(row)} values but the table has {len(self.columns)} columns")
        row.extend([None] * (len(self.columns) - len(row)))
        self.rows.append(row)
        return self

    def add_rows(self, rows):
        for row in rows:
            self.add_row(row)
        return self

    def sort_by(self, header, reverse=False):
        index = [c.header for c in self.columns].index(header)
        self.rows.sort(key=lambda r: (r[index] is None, r[index]), reverse=reverse)
        return self

    def __len__(self):
        return len(self.rows)

    # -- layout -------------------------------------------------------
    def _text_rows(self):
        return [[col.format(v) for col, v in zip(self.columns, row)] for row in self.rows]

    def _fit_cell(self, column, text, width):
        if column.wrap:
            return wrap_cell(text, width)
        return [truncate(line, width) for line in text.split("\n")]

    def layout(self, style="ascii", max_width=None, show_header=True):
        """Return ``(widths, aligns, header_lines, body)`` for rendering.

        ``body`` is a list of rows, each a list of per-column line lists.
        """
        style = get_style(style)
        text_rows = self._text_rows()
        n = len(self.columns)
        overhead = (
            len(style.left) + len(style.right) + len(style.sep) * (n - 1) + 2 * style.padding * n
        )
        widths = compute_widths(
            self.columns, text_rows, max_total=max_width, overhead=overhead,
            include_header=show_header,
        )
        aligns = [
            col.resolved_align([row[i] for row in self.rows])
            for i, col in enumerate(self.columns)
        ]
        header_lines = None
        if show_header:
            header_lines = [
                self._fit_cell(col, col.header, widths[i]) for i, col in enumerate(self.columns)
            ]
        body = [
            [self._fit_cell(col, row[i], widths[i]) for i, col in enumerate(self.columns)]
            for row in text_rows
        ]
        return widths, aligns, header_lines, body

    def render(self, style="ascii", max_width=None, show_header=True, row_separators=False):
        style = get_style(style)
        widths, aligns, header_lines, body = self.layout(style, max_width, show_header)
        header_aligns = [c.header_align or aligns[i] for i, c in enumerate(self.columns)]
        out = []

        def emit_rule(rule, with_aligns=False):
            line = style.rule_line(rule, widths, aligns if with_aligns else None)
            if line is not None:
                out.append(line)

        def emit_cells(cells, cell_aligns):
            height = max(len(lines) for lines in cells)
            space = " " * style.padding
            for k in range(height):
                parts = []
                for i, lines in enumerate(cells):
                    text = lines[k] if k < len(lines) else ""
                    parts.append(space + pad(text, widths[i], cell_aligns[i]) + space)
                out.append(style.left + style.sep.join(parts) + style.right)

        emit_rule(style.top)
        if header_lines is not None:
            emit_cells(header_lines, header_aligns)
            emit_rule(style.header, with_aligns=True)
        for index, cells in enumerate(body):
            if row_separators and index:
                emit_rule(style.row)
            emit_cells(cells, aligns)
        emit_rule(style.bottom)
        return "\n".join(out)

    def __str__(self):
        return self.render()

    # -- construction helpers -----------------------------------------
    @classmethod
    def from_records(cls, records, columns=None):
        records = list(records)
        if columns is None:
            columns = []
            for record in records:
                for key in record:
                    if key not in columns:
                        columns.append(key)
        table = cls(columns)
        headers = [c.header for c in table.columns]
        for record in records:
            table.add_row([record.get(h) for h in headers])
        return table

    @classmethod
    def from_csv(cls, source, **kwargs):
        from .csvinput import from_csv

        return from_csv(source, **kwargs)


def render_table(rows, headers, **kwargs):
    """Shortcut: ``render_table([[1, 2]], ["a", "b"], style="grid")``."""
    return Table(headers, rows).render(**kwargs)
