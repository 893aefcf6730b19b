"""recur: recurring events and agenda export."""

from .calendar import Calendar, Event, Occurrence, load_calendar
from .exclusions import ExclusionSet
from .export import export_text, parse_export
from .generator import iter_days, occurrences
from .rules import DAILY, MONTHLY, WEEKLY, YEARLY, Rule, RuleError, parse_rule
from .timeparse import parse_date, parse_datetime, parse_duration, parse_time

__all__ = [
    "Calendar",
    "DAILY",
    "Event",
    "ExclusionSet",
    "MONTHLY",
    "Occurrence",
    "Rule",
    "RuleError",
    "WEEKLY",
    "YEARLY",
    "export_text",
    "iter_days",
    "load_calendar",
    "occurrences",
    "parse_date",
    "parse_datetime",
    "parse_duration",
    "parse_export",
    "parse_rule",
    "parse_time",
]
