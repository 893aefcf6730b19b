"""Building tables from CSV text."""

import csv
import io

from .columns import Column


def read_csv_rows(source, delimiter=",", header=True, strip=True):
    """Return ``(headers, rows)`` read from CSV text or an open file.

    Without a header row the columns are named ``col1``, ``col2``, ...
    Short rows are padded with None; blank lines are skipped.
    """
    if isinstance(source, str):
        source = io.StringIO(source)
    reader = csv.reader(source, delimiter=delimiter)
    records = []
    for record in reader:
        if not record or all(not cell.strip() for cell in record):
            continue
        if strip:
            record = [cell.strip() for cell in record]
        records.append(record)
    if not records:
        return [], []
    if header:
        headers, rows = records[0], records[1:]
    else:
        size = max(len(r) for r in records)
        headers, rows = [f"col{i + 1}" for i in range(size)], records
    width = max([len(headers)] + [len(r) for r in rows])
    headers = list(headers) + [f"col{i + 1}" for i in range(len(headers), width)]
    padded = [list(r) + [None] * (width - len(r)) for r in rows]
    return headers, padded


def from_csv(source, delimiter=",", header=True, columns=None, **column_options):
    """Create a :class:`~plaintable.render.Table` from CSV.

    ``columns`` optionally maps header names to :class:`Column` keyword
    arguments (``{"price": {"fmt": ".2f"}}``); ``column_options`` apply to
    every column.  Empty CSV cells become None.
    """
    from .render import Table

    headers, rows = read_csv_rows(source, delimiter=delimiter, header=header)
    if not headers:
        raise ValueError("CSV input is empty")
    specs = []
    for name in headers:
        options = dict(column_options)
        options.update((columns or {}).get(name, {}))
        specs.append(Column(name, **options))
    table = Table(specs)
    for row in rows:
        table.add_row([None if v == "" else v for v in row])
    return table
