"""Plain-text agenda export.

Format (one occurrence per line)::

    # agenda 2024-01-01 00:00 .. 2024-02-01 00:00
    2024-01-03 Wed 09:00-09:30 Standup @ Room 1
    2024-01-03 Wed 23:00-01:00+1 Deploy

``+N`` marks an end N days after the start day.  With ``group_by_day=True``
occurrences are listed under ``== 2024-01-03 Wed ==`` headers instead.
"""

import re
from datetime import datetime, timedelta

from .timeparse import parse_date, parse_time

_DAY_NAMES = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")

_LINE_RE = re.compile(
    r"^(?:(?P<date>\d{4}-\d{2}-\d{2}) (?P<dow>[A-Z][a-z]{2}) )?"
    r"(?P<start>\d{2}:\d{2})-(?P<end>\d{2}:\d{2})(?:\+(?P<plus>\d+))?"
    r" (?P<title>.+?)(?: @ (?P<location>.+))?$"
)
_HEADER_RE = re.compile(r"^== (?P<date>\d{4}-\d{2}-\d{2}) [A-Z][a-z]{2} ==$")


def _fmt_range(occurrence):
    text = f"{occurrence.start:%H:%M}-{occurrence.end:%H:%M}"
    extra_days = (occurrence.end.date() - occurrence.start.date()).days
    if extra_days:
        text += f"+{extra_days}"
    return text


def _fmt_body(occurrence):
    text = f"{_fmt_range(occurrence)} {occurrence.title}"
    if occurrence.location:
        text += f" @ {occurrence.location}"
    return text


def _day_label(day):
    return f"{day:%Y-%m-%d} {_DAY_NAMES[day.weekday()]}"


def export_text(calendar, window_start, window_end, group_by_day=False):
    """Render the occurrences of ``calendar`` in ``[window_start, window_end)``."""
    lines = [f"# agenda {window_start:%Y-%m-%d %H:%M} .. {window_end:%Y-%m-%d %H:%M}"]
    seen = set()
    current_day = None
    for occurrence in calendar.occurrences_between(window_start, window_end):
        # The same event can be present twice in a calendar (e.g. imported
        # from two sources); list each (start, title) only once.
        key = (occurrence.start, occurrence.title)
        if key in seen:
            continue
        seen.add(key)
        if group_by_day:
            day = occurrence.start.date()
            if day != current_day:
                lines.append(f"== {_day_label(day)} ==")
                current_day = day
            lines.append("  " + _fmt_body(occurrence))
        else:
            lines.append(f"{_day_label(occurrence.start.date())} {_fmt_body(occurrence)}")
    return "\n".join(lines) + "\n"


def parse_export(text):
    """Parse :func:`export_text` output into ``(start, end, title, location)`` tuples."""
    entries = []
    current_day = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        header = _HEADER_RE.match(line)
        if header:
            current_day = parse_date(header.group("date"))
            continue
        m = _LINE_RE.match(line)
        if not m:
            raise ValueError(f"line {lineno}: cannot parse {raw!r}")
        if m.group("date"):
            day = parse_date(m.group("date"))
        elif current_day is not None:
            day = current_day
        else:
            raise ValueError(f"line {lineno}: occurrence without a date")
        start = datetime.combine(day, parse_time(m.group("start")))
        end_day = day + timedelta(days=int(m.group("plus") or 0))
        end = datetime.combine(end_day, parse_time(m.group("end")))
        entries.append((start, end, m.group("title"), m.group("location") or ""))
    return entries
