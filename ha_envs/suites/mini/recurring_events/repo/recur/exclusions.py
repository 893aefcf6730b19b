"""Exclusions (cancelled days or single cancelled occurrences)."""

from datetime import date, datetime, timedelta

from .timeparse import parse_date, parse_date_or_datetime


def _as_date(value):
    return date(value.year, value.month, value.day)


class ExclusionSet:
    """A set of excluded whole days and excluded single occurrences.

    Items may be ``date`` objects (the whole day is cancelled), ``datetime``
    objects (only the occurrence starting at exactly that moment is
    cancelled), or strings: ``"2024-01-10"``, ``"2024-01-10 17:00"`` or an
    inclusive day range ``"2024-12-24..2024-12-26"``.
    """

    def __init__(self, items=()):
        self._days = set()
        self._instants = set()
        for item in items:
            self.add(item)

    @classmethod
    def coerce(cls, value):
        if value is None:
            return cls()
        if isinstance(value, ExclusionSet):
            return value
        if isinstance(value, (str, date)):
            value = [value]
        return cls(value)

    def add(self, item):
        if isinstance(item, str):
            if ".." in item:
                first, last = (parse_date(p) for p in item.split("..", 1))
                self.add_range(first, last)
                return
            item = parse_date_or_datetime(item)
        if isinstance(item, date):
            self._days.add(_as_date(item))
        elif isinstance(item, datetime):
            self._instants.add(item)
        else:
            raise TypeError(f"cannot exclude {item!r}")

    def add_range(self, first, last):
        if last < first:
            raise ValueError("exclusion range ends before it starts")
        day = first
        while day <= last:
            self._days.add(day)
            day += timedelta(days=1)

    def excludes(self, occurrence):
        """True if the occurrence starting at ``occurrence`` is cancelled."""
        if occurrence in self._instants:
            return True
        return _as_date(occurrence) in self._days

    __contains__ = excludes

    def __len__(self):
        return len(self._days) + len(self._instants)

    def __bool__(self):
        return bool(self._days or self._instants)

    def items(self):
        """All exclusions, sorted, as dates and datetimes."""
        out = list(self._days) + list(self._instants)
        return sorted(out, key=lambda v: (_as_date(v), isinstance(v, datetime), v if isinstance(v, datetime) else datetime.min))

    def describe(self):
        parts = []
        for item in self.items():
            if isinstance(item, datetime):
                parts.append(item.strftime("%Y-%m-%d %H:%M"))
            else:
                parts.append(item.isoformat())
        return ", ".join(parts)
