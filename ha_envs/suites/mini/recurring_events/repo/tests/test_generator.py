from datetime import date, datetime

import pytest

from recur import iter_days, occurrences


def dts(*items):
    return [datetime(*item) for item in items]


def test_daily_with_interval_and_window():
    got = list(occurrences("every 3 days", datetime(2024, 1, 30, 8), datetime(2024, 2, 1), datetime(2024, 2, 10)))
    assert got == dts((2024, 2, 2, 8), (2024, 2, 5, 8), (2024, 2, 8, 8))


def test_weekly_default_weekday():
    got = list(occurrences("every week", datetime(2024, 1, 4, 10), window_end=datetime(2024, 1, 26)))
    assert got == dts((2024, 1, 4, 10), (2024, 1, 11, 10), (2024, 1, 18, 10), (2024, 1, 25, 10))


def test_weekly_several_days_starting_monday():
    got = list(occurrences("every week on mon,wed,fri", datetime(2024, 1, 8, 9), window_end=datetime(2024, 1, 16)))
    assert got == dts((2024, 1, 8, 9), (2024, 1, 10, 9), (2024, 1, 12, 9), (2024, 1, 15, 9))


def test_biweekly_starting_on_first_listed_day():
    got = list(occurrences("every 2 weeks on tue,thu", datetime(2024, 1, 2, 14), window_end=datetime(2024, 2, 1)))
    assert got == dts((2024, 1, 2, 14), (2024, 1, 4, 14), (2024, 1, 16, 14), (2024, 1, 18, 14), (2024, 1, 30, 14))


def test_weekly_skips_days_before_start():
    got = list(occurrences("every week on mon,thu", datetime(2024, 1, 1, 9, 30), window_end=datetime(2024, 1, 9)))
    assert got == dts((2024, 1, 1, 9, 30), (2024, 1, 4, 9, 30), (2024, 1, 8, 9, 30))


def test_monthly_skips_missing_days_and_counts_from_end():
    got = list(occurrences("every month on day 31", datetime(2024, 1, 31, 12), window_end=datetime(2024, 6, 1)))
    assert [d.date() for d in got] == [date(2024, 1, 31), date(2024, 3, 31), date(2024, 5, 31)]
    got = list(occurrences("every month on day -1", datetime(2024, 1, 1), window_end=datetime(2024, 4, 1)))
    assert [d.day for d in got] == [31, 29, 31]


def test_monthly_interval_defaults_to_start_day():
    got = list(occurrences("every 2 months for 3 times", datetime(2024, 11, 15, 9)))
    assert got == dts((2024, 11, 15, 9), (2025, 1, 15, 9), (2025, 3, 15, 9))


def test_yearly_leap_day():
    got = list(occurrences("every year for 2 times", datetime(2024, 2, 29, 7)))
    assert got == dts((2024, 2, 29, 7), (2028, 2, 29, 7))


def test_times_count_and_until():
    got = list(occurrences("every day at 09:00,17:00 for 3 times", datetime(2024, 1, 1, 12)))
    assert got == dts((2024, 1, 1, 17), (2024, 1, 2, 9), (2024, 1, 2, 17))
    got = list(occurrences("every day until 2024-01-03", datetime(2024, 1, 1, 6)))
    assert got == dts((2024, 1, 1, 6), (2024, 1, 2, 6), (2024, 1, 3, 6))


def test_count_is_counted_from_series_start_not_window():
    got = list(occurrences("every day for 5 times", datetime(2024, 1, 1, 6), datetime(2024, 1, 4), datetime(2024, 2, 1)))
    assert got == dts((2024, 1, 4, 6), (2024, 1, 5, 6))


def test_one_off_and_unbounded():
    assert list(occurrences(None, datetime(2024, 1, 5, 9), datetime(2024, 1, 1), datetime(2024, 2, 1))) == dts((2024, 1, 5, 9))
    assert list(occurrences(None, datetime(2024, 3, 5, 9), datetime(2024, 1, 1), datetime(2024, 2, 1))) == []
    with pytest.raises(ValueError):
        list(occurrences("every day", datetime(2024, 1, 1)))


def test_iter_days_daily():
    assert list(iter_days("every 2 days", date(2024, 2, 27), date(2024, 3, 3))) == [
        date(2024, 2, 27), date(2024, 2, 29), date(2024, 3, 2)
    ]
