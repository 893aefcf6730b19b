"""Parsing of dates, times and durations used in rules and calendars."""

import re
from datetime import date, datetime, time, timedelta

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")

_WEEKDAY_ALIASES = {
    "monday": "mon", "tuesday": "tue", "tues": "tue", "wednesday": "wed",
    "thursday": "thu", "thur": "thu", "thurs": "thu", "friday": "fri",
    "saturday": "sat", "sunday": "sun",
}

_DATE_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_TIME_RE = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?$")
_DURATION_RE = re.compile(r"^(?:(\d+)d)?\s*(?:(\d+)h)?\s*(?:(\d+)m(?:in)?)?$")


def parse_date(text):
    """``"2024-01-31"`` -> ``date(2024, 1, 31)``."""
    m = _DATE_RE.match(text.strip())
    if not m:
        raise ValueError(f"invalid date {text!r}, expected YYYY-MM-DD")
    return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))


def parse_time(text):
    """``"9:05"`` -> ``time(9, 5)``."""
    m = _TIME_RE.match(text.strip())
    if not m:
        raise ValueError(f"invalid time {text!r}, expected HH:MM")
    return time(int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))


def parse_datetime(text):
    """``"2024-01-31 09:30"`` (or ``T`` as separator) -> datetime."""
    text = text.strip().replace("T", " ")
    parts = text.split()
    if len(parts) != 2:
        raise ValueError(f"invalid datetime {text!r}, expected 'YYYY-MM-DD HH:MM'")
    return datetime.combine(parse_date(parts[0]), parse_time(parts[1]))


def parse_date_or_datetime(text):
    """Return a date for ``YYYY-MM-DD`` and a datetime when a time is present."""
    text = text.strip()
    if " " in text or "T" in text:
        return parse_datetime(text)
    return parse_date(text)


def parse_duration(value):
    """Accept a timedelta, minutes as int, or text such as ``"1h30m"``/``"45m"``/``"2d"``."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, int):
        return timedelta(minutes=value)
    text = str(value).strip().lower()
    m = _DURATION_RE.match(text)
    if not text or not m or not any(m.groups()):
        raise ValueError(f"invalid duration {value!r}")
    days, hours, minutes = (int(g or 0) for g in m.groups())
    return timedelta(days=days, hours=hours, minutes=minutes)


def format_duration(delta):
    total = int(delta.total_seconds() // 60)
    days, rest = divmod(total, 24 * 60)
    hours, minutes = divmod(rest, 60)
    out = ""
    if days:
        out += f"{days}d"
    if hours:
        out += f"{hours}h"
    if minutes or not out:
        out += f"{minutes}m"
    return out


def parse_weekday(text):
    """``"Wednesday"``/``"wed"`` -> 2 (Monday is 0)."""
    key = text.strip().lower()
    key = _WEEKDAY_ALIASES.get(key, key)
    if key not in WEEKDAYS:
        raise ValueError(f"unknown weekday {text!r}")
    return WEEKDAYS.index(key)


def days_in_month(year, month):
    if month == 12:
        return 31
    return (date(year, month + 1, 1) - date(year, month, 1)).days


def add_months(year, month, count):
    """Return ``(year, month)`` ``count`` months after ``year-month``."""
    index = year * 12 + (month - 1) + count
    return index // 12, index % 12 + 1
