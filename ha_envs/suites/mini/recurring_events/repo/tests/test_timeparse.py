from datetime import date, datetime, time, timedelta

import pytest

from recur import parse_date, parse_datetime, parse_duration, parse_time
from recur.timeparse import add_months, days_in_month, format_duration, parse_weekday


def test_parse_date_time_datetime():
    assert parse_date("2024-02-29") == date(2024, 2, 29)
    assert parse_time("9:05") == time(9, 5)
    assert parse_datetime("2024-01-03 09:30") == datetime(2024, 1, 3, 9, 30)
    assert parse_datetime("2024-01-03T09:30") == datetime(2024, 1, 3, 9, 30)
    with pytest.raises(ValueError):
        parse_date("2023-02-29")
    with pytest.raises(ValueError):
        parse_datetime("2024-01-03")


def test_durations():
    assert parse_duration("1h30m") == timedelta(minutes=90)
    assert parse_duration("45min") == timedelta(minutes=45)
    assert parse_duration("2d") == timedelta(days=2)
    assert parse_duration(15) == timedelta(minutes=15)
    assert format_duration(timedelta(minutes=90)) == "1h30m"
    assert format_duration(timedelta(days=1)) == "1d"
    with pytest.raises(ValueError):
        parse_duration("soon")


def test_calendar_helpers():
    assert days_in_month(2024, 2) == 29
    assert days_in_month(2023, 2) == 28
    assert days_in_month(2024, 12) == 31
    assert add_months(2024, 11, 3) == (2025, 2)
    assert add_months(2024, 1, -1) == (2023, 12)
    assert parse_weekday("Thursday") == 3
