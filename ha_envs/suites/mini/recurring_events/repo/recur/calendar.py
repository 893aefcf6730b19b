"""Events and calendars."""

from dataclasses import dataclass
from datetime import datetime

from .exclusions import ExclusionSet
from .generator import occurrences
from .rules import parse_rule
from .timeparse import format_duration, parse_datetime, parse_duration


@dataclass(frozen=True)
class Occurrence:
    """One concrete happening of an event."""

    event: "Event"
    start: datetime
    end: datetime

    @property
    def title(self):
        return self.event.title

    @property
    def location(self):
        return self.event.location

    def overlaps(self, other):
        return self.start < other.end and other.start < self.end


class Event:
    """A titled event, either one-off (``rule=None``) or recurring."""

    def __init__(self, title, start, duration="1h", rule=None, exclusions=None, location=""):
        if not isinstance(start, datetime):
            raise TypeError("start must be a datetime")
        if not title or not str(title).strip():
            raise ValueError("an event needs a title")
        self.title = str(title).strip()
        self.start = start
        self.duration = parse_duration(duration)
        if self.duration.total_seconds() <= 0:
            raise ValueError("duration must be positive")
        self.rule = parse_rule(rule) if rule is not None else None
        self.exclusions = ExclusionSet.coerce(exclusions)
        self.location = location

    @property
    def is_recurring(self):
        return self.rule is not None

    def occurrences(self, window_start, window_end):
        """Occurrences starting in ``[window_start, window_end)``."""
        for start in occurrences(self.rule, self.start, window_start, window_end, self.exclusions):
            yield Occurrence(self, start, start + self.duration)

    def describe(self):
        parts = [self.title, self.start.strftime("%Y-%m-%d %H:%M"), format_duration(self.duration)]
        parts.append(self.rule.describe() if self.rule else "once")
        if self.exclusions:
            parts.append("except " + self.exclusions.describe())
        if self.location:
            parts.append("@ " + self.location)
        return " | ".join(parts)

    def __repr__(self):
        return f"Event({self.title!r}, {self.start!r}, rule={self.rule.describe() if self.rule else None!r})"


class Calendar:
    """A collection of events."""

    def __init__(self, events=()):
        self.events = []
        for event in events:
            self.add(event)

    def add(self, event):
        if not isinstance(event, Event):
            raise TypeError("Calendar.add expects an Event")
        self.events.append(event)
        return event

    def remove(self, title):
        before = len(self.events)
        self.events = [e for e in self.events if e.title != title]
        return before - len(self.events)

    def __len__(self):
        return len(self.events)

    def occurrences_between(self, window_start, window_end):
        """All occurrences starting in ``[window_start, window_end)``, sorted by start then title."""
        if window_end <= window_start:
            return []
        found = []
        for event in self.events:
            found.extend(event.occurrences(window_start, window_end))
        found.sort(key=lambda o: (o.start, o.title))
        return found

    def on_day(self, day):
        start = datetime(day.year, day.month, day.day)
        return self.occurrences_between(start, start.replace(hour=23, minute=59, second=59, microsecond=999999))

    def conflicts(self, window_start, window_end):
        """Pairs of overlapping occurrences of different events."""
        items = self.occurrences_between(window_start, window_end)
        pairs = []
        for i, a in enumerate(items):
            for b in items[i + 1:]:
                if b.start >= a.end:
                    break
                if a.event is not b.event and a.overlaps(b):
                    pairs.append((a, b))
        return pairs


def load_calendar(text):
    """Build a calendar from lines ``title | start | duration | rule [| except ...] [| @ location]``.

    ``rule`` may be ``once``.  Blank lines and lines starting with ``#`` are
    ignored.
    """
    calendar = Calendar()
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split("|")]
        if len(parts) < 4:
            raise ValueError(f"line {lineno}: expected 'title | start | duration | rule'")
        title, start, duration, rule = parts[:4]
        exclusions = []
        location = ""
        for extra in parts[4:]:
            if extra.startswith("except "):
                exclusions.extend(e.strip() for e in extra[len("except "):].split(",") if e.strip())
            elif extra.startswith("@"):
                location = extra[1:].strip()
            else:
                raise ValueError(f"line {lineno}: unexpected field {extra!r}")
        try:
            calendar.add(Event(
                title,
                parse_datetime(start),
                duration,
                None if rule.lower() == "once" else rule,
                exclusions,
                location,
            ))
        except ValueError as exc:
            raise ValueError(f"line {lineno}: {exc}") from None
    return calendar
