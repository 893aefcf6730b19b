"""Expanding rules into concrete occurrences."""

from datetime import date, datetime, timedelta

from .exclusions import ExclusionSet
from .rules import DAILY, MONTHLY, WEEKLY, YEARLY, parse_rule
from .timeparse import add_months, days_in_month

# A monthly/yearly rule may have periods without any valid day (day 31 in a
# 30-day month, Feb 29); give up after this many empty periods in a row.
MAX_EMPTY_PERIODS = 400


def _daily(rule, first, last):
    step = timedelta(days=rule.interval)
    day = first
    while last is None or day <= last:
        yield day
        day += step


def _weekly(rule, first, last):
    weekdays = rule.byweekday or (first.weekday(),)
    step = timedelta(weeks=rule.interval)
    cursor = first
    while last is None or cursor <= last:
        week_start = cursor - timedelta(days=cursor.weekday())
        for weekday in weekdays:
            day = week_start + timedelta(days=weekday)
            if day < cursor:
                continue  # already behind us
            if last is not None and day > last:
                return
            yield day
        cursor += step


def _resolve_monthdays(monthdays, year, month):
    size = days_in_month(year, month)
    out = set()
    for md in monthdays:
        if 0 < md <= size:
            out.add(md)
        elif md < 0 and -md <= size:
            out.add(size + md + 1)
    return sorted(out)


def _monthly(rule, first, last):
    monthdays = rule.bymonthday or (first.day,)
    empty = 0
    period = 0
    while True:
        year, month = add_months(first.year, first.month, period * rule.interval)
        if last is not None and date(year, month, 1) > last:
            return
        found = False
        for md in _resolve_monthdays(monthdays, year, month):
            day = date(year, month, md)
            if day < first:
                continue
            if last is not None and day > last:
                return
            found = True
            yield day
        empty = 0 if found else empty + 1
        if empty > MAX_EMPTY_PERIODS:
            return
        period += 1


def _yearly(rule, first, last):
    empty = 0
    year = first.year
    while True:
        if last is not None and date(year, 1, 1) > last:
            return
        try:
            day = date(year, first.month, first.day)
        except ValueError:  # Feb 29 in a common year
            empty += 1
            if empty > MAX_EMPTY_PERIODS:
                return
        else:
            empty = 0
            if last is not None and day > last:
                return
            yield day
        year += rule.interval


_EXPANDERS = {DAILY: _daily, WEEKLY: _weekly, MONTHLY: _monthly, YEARLY: _yearly}


def iter_days(rule, first, last=None):
    """Yield, in order, the days on which ``rule`` fires for a series starting on ``first``.

    ``last`` (inclusive) bounds the iteration; without it the iterator may be
    infinite.
    """
    rule = parse_rule(rule)
    if isinstance(first, datetime):
        first = first.date()
    if isinstance(last, datetime):
        last = last.date()
    return _EXPANDERS[rule.freq](rule, first, last)


def occurrences(rule, start, window_start=None, window_end=None, exclusions=None):
    """Yield the start datetimes of a series, in chronological order.

    ``start`` is the first possible occurrence (its time is used when the
    rule has no ``at`` part).  Only occurrences with
    ``window_start <= occurrence < window_end`` are yielded.  ``exclusions``
    (an :class:`ExclusionSet` or anything it accepts) removes occurrences;
    they still count towards ``for N times``.  With ``rule=None`` the event
    happens once, at ``start``.
    """
    if not isinstance(start, datetime):
        raise TypeError("start must be a datetime")
    excluded = ExclusionSet.coerce(exclusions)
    if rule is None:
        in_window = (window_start is None or start >= window_start) and (
            window_end is None or start < window_end
        )
        if in_window and not excluded.excludes(start):
            yield start
        return
    rule = parse_rule(rule)
    if window_end is None and not rule.is_bounded:
        raise ValueError("unbounded rule: give window_end, 'until' or 'for N times'")
    last = rule.until
    if window_end is not None:
        window_last = (window_end - timedelta(microseconds=1)).date()
        last = window_last if last is None else min(last, window_last)
    times = rule.times or (start.time(),)
    produced = 0
    for day in iter_days(rule, start.date(), last):
        for moment in times:
            occurrence = datetime.combine(day, moment)
            if occurrence < start:
                continue
            if rule.count is not None and produced >= rule.count:
                return
            produced += 1
            if window_end is not None and occurrence >= window_end:
                return
            if window_start is not None and occurrence < window_start:
                continue
            if excluded and excluded.excludes(occurrence):
                continue
            yield occurrence
