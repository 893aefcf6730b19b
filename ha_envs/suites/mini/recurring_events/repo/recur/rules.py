"""Recurrence rules and their text syntax."""

import re
from dataclasses import dataclass, field
from datetime import date, time
from typing import Optional, Tuple

from .timeparse import WEEKDAYS, parse_date, parse_time, parse_weekday

DAILY = "daily"
WEEKLY = "weekly"
MONTHLY = "monthly"
YEARLY = "yearly"

FREQUENCIES = (DAILY, WEEKLY, MONTHLY, YEARLY)

_UNITS = {
    "day": DAILY, "days": DAILY,
    "week": WEEKLY, "weeks": WEEKLY,
    "month": MONTHLY, "months": MONTHLY,
    "year": YEARLY, "years": YEARLY,
}

_RULE_RE = re.compile(
    r"^every"
    r"(?:\s+(?P<n>\d+))?"
    r"\s+(?P<unit>[a-z]+)"
    r"(?:\s+on\s+(?P<on>.+?))?"
    r"(?:\s+at\s+(?P<at>[0-9:,\s]+?))?"
    r"(?:\s+until\s+(?P<until>\d{4}-\d{2}-\d{2})|\s+for\s+(?P<count>\d+)\s+times?)?"
    r"$"
)


class RuleError(ValueError):
    """Raised for rule text that cannot be understood."""


@dataclass(frozen=True)
class Rule:
    """A recurrence rule.

    ``byweekday`` holds weekday numbers (Monday = 0) for weekly rules;
    ``bymonthday`` holds days of the month for monthly rules (negative values
    count from the end, -1 being the last day).  Empty tuples mean "the
    weekday / day of month of the event start".  ``times`` lists the times of
    day; empty means "the time of the event start".
    """

    freq: str
    interval: int = 1
    byweekday: Tuple[int, ...] = ()
    bymonthday: Tuple[int, ...] = ()
    times: Tuple[time, ...] = ()
    until: Optional[date] = None
    count: Optional[int] = None
    source: str = field(default="", compare=False)

    def __post_init__(self):
        if self.freq not in FREQUENCIES:
            raise RuleError(f"unknown frequency {self.freq!r}")
        if self.interval < 1:
            raise RuleError("interval must be at least 1")
        if self.until is not None and self.count is not None:
            raise RuleError("a rule cannot have both 'until' and 'for N times'")
        if self.count is not None and self.count < 1:
            raise RuleError("count must be at least 1")
        if any(not 0 <= d <= 6 for d in self.byweekday):
            raise RuleError("weekdays must be between 0 (Monday) and 6 (Sunday)")
        if any(d == 0 or not -31 <= d <= 31 for d in self.bymonthday):
            raise RuleError("days of the month must be 1..31 or -31..-1")
        if self.byweekday and self.freq != WEEKLY:
            raise RuleError("weekdays can only be given for weekly rules")
        if self.bymonthday and self.freq != MONTHLY:
            raise RuleError("days of the month can only be given for monthly rules")
        object.__setattr__(self, "byweekday", tuple(sorted(set(self.byweekday))))
        object.__setattr__(self, "bymonthday", tuple(sorted(set(self.bymonthday))))
        object.__setattr__(self, "times", tuple(sorted(set(self.times))))

    @property
    def is_bounded(self):
        return self.until is not None or self.count is not None

    def describe(self):
        """Canonical rule text; ``parse_rule(rule.describe()) == rule``."""
        unit = {DAILY: "day", WEEKLY: "week", MONTHLY: "month", YEARLY: "year"}[self.freq]
        text = "every " + (f"{self.interval} {unit}s" if self.interval > 1 else unit)
        if self.byweekday:
            text += " on " + ",".join(WEEKDAYS[d] for d in self.byweekday)
        if self.bymonthday:
            text += " on day " + ",".join(str(d) for d in self.bymonthday)
        if self.times:
            text += " at " + ",".join(t.strftime("%H:%M") for t in self.times)
        if self.until is not None:
            text += f" until {self.until.isoformat()}"
        if self.count is not None:
            text += f" for {self.count} time" + ("s" if self.count != 1 else "")
        return text

    def __str__(self):
        return self.describe()


def _parse_weekdays(text):
    text = text.strip()
    if text in ("weekdays", "workdays"):
        return (0, 1, 2, 3, 4)
    if text in ("weekends", "weekend"):
        return (5, 6)
    days = []
    for part in re.split(r"\s*(?:,|\band\b)\s*", text):
        if not part:
            continue
        if "-" in part:
            first, last = (parse_weekday(p) for p in part.split("-", 1))
            if last < first:
                raise RuleError(f"weekday range {part!r} runs backwards")
            days.extend(range(first, last + 1))
        else:
            days.append(parse_weekday(part))
    if not days:
        raise RuleError(f"no weekdays in {text!r}")
    return tuple(days)


def _parse_monthdays(text):
    text = text.strip()
    if text in ("the last day", "last day"):
        return (-1,)
    m = re.match(r"^(?:the\s+)?days?\s+(-?\d+(?:\s*,\s*-?\d+)*)$", text)
    if not m:
        raise RuleError(f"expected 'day N[,N...]' but got {text!r}")
    return tuple(int(p) for p in m.group(1).split(","))


def parse_rule(text):
    """Parse rule text such as ``"every 2 weeks on mon,wed at 09:00 until 2024-06-30"``."""
    if isinstance(text, Rule):
        return text
    normalized = " ".join(str(text).lower().split())
    m = _RULE_RE.match(normalized)
    if not m:
        raise RuleError(f"cannot parse rule {text!r}")
    unit = m.group("unit")
    interval = int(m.group("n") or 1)
    byweekday = ()
    bymonthday = ()
    if unit in ("weekday", "weekdays"):
        if m.group("n") or m.group("on"):
            raise RuleError(f"'every weekday' takes no interval or 'on' part: {text!r}")
        freq = WEEKLY
        byweekday = (0, 1, 2, 3, 4)
    elif unit in _UNITS:
        freq = _UNITS[unit]
        on = m.group("on")
        if on:
            try:
                if freq == WEEKLY:
                    byweekday = _parse_weekdays(on)
                elif freq == MONTHLY:
                    bymonthday = _parse_monthdays(on)
                else:
                    raise RuleError(f"'on ...' is not supported for {unit} rules")
            except ValueError as exc:
                raise RuleError(f"{text!r}: {exc}") from None
    else:
        raise RuleError(f"unknown unit {unit!r} in {text!r}")
    times = ()
    if m.group("at"):
        try:
            times = tuple(parse_time(t) for t in m.group("at").split(",") if t.strip())
        except ValueError as exc:
            raise RuleError(f"{text!r}: {exc}") from None
    until = parse_date(m.group("until")) if m.group("until") else None
    count = int(m.group("count")) if m.group("count") else None
    return Rule(freq, interval, byweekday, bymonthday, times, until, count, source=str(text))
