from datetime import date, datetime, timedelta

import pytest

from recur import Calendar, Event, load_calendar

TEXT = """
# team calendar
Standup | 2024-01-08 09:30 | 15m | every weekday | except 2024-01-10 | @ Room 1
Planning | 2024-01-08 10:00 | 1h | every 2 weeks on mon
Offsite | 2024-01-18 09:00 | 8h | once | @ Lisbon
"""


def test_load_calendar():
    cal = load_calendar(TEXT)
    assert len(cal) == 3
    standup = cal.events[0]
    assert standup.location == "Room 1"
    assert standup.duration == timedelta(minutes=15)
    assert standup.exclusions.excludes(datetime(2024, 1, 10, 9, 30))
    assert not cal.events[2].is_recurring


def test_load_calendar_errors_mention_line():
    with pytest.raises(ValueError, match="line 1"):
        load_calendar("Broken | 2024-01-01 09:00")
    with pytest.raises(ValueError, match="line 2"):
        load_calendar("\nX | 2024-01-01 09:00 | 1h | every blue moon")


def test_occurrences_between_sorted():
    cal = load_calendar(TEXT)
    items = cal.occurrences_between(datetime(2024, 1, 8), datetime(2024, 1, 9))
    assert [(o.start.hour, o.start.minute, o.title) for o in items] == [(9, 30, "Standup"), (10, 0, "Planning")]
    assert items[0].end == datetime(2024, 1, 8, 9, 45)


def test_on_day_and_conflicts():
    cal = load_calendar(TEXT)
    titles = [o.title for o in cal.on_day(date(2024, 1, 18))]
    assert titles == ["Offsite", "Standup"]
    conflicts = cal.conflicts(datetime(2024, 1, 15), datetime(2024, 1, 20))
    assert [(a.title, b.title, a.start.day) for a, b in conflicts] == [("Offsite", "Standup", 18)]


def test_event_validation_and_describe():
    with pytest.raises(ValueError):
        Event("", datetime(2024, 1, 1))
    with pytest.raises(TypeError):
        Event("x", date(2024, 1, 1))
    event = Event("Gym", datetime(2024, 1, 1, 7), "45m", "every week on mon,thu", ["2024-01-04"], "Club")
    assert event.describe() == "Gym | 2024-01-01 07:00 | 45m | every week on mon,thu | except 2024-01-04 | @ Club"
    cal = Calendar([event])
    assert cal.remove("Gym") == 1 and len(cal) == 0
