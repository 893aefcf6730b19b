from datetime import date, datetime

from recur import ExclusionSet, occurrences


def test_whole_day_exclusions():
    ex = ExclusionSet(["2024-01-10", date(2024, 1, 12)])
    assert ex.excludes(datetime(2024, 1, 10, 9))
    assert ex.excludes(datetime(2024, 1, 12, 23, 59))
    assert not ex.excludes(datetime(2024, 1, 11, 9))
    assert len(ex) == 2


def test_day_range_exclusion():
    ex = ExclusionSet(["2024-12-24..2024-12-26"])
    assert [ex.excludes(datetime(2024, 12, d, 10)) for d in (23, 24, 25, 26, 27)] == [False, True, True, True, False]
    assert ex.describe() == "2024-12-24, 2024-12-25, 2024-12-26"


def test_exclusions_in_generator():
    got = list(occurrences("every day", datetime(2024, 1, 1, 9), window_end=datetime(2024, 1, 6),
                           exclusions=["2024-01-02", "2024-01-04"]))
    assert [d.day for d in got] == [1, 3, 5]


def test_excluded_occurrences_still_count():
    got = list(occurrences("every day for 4 times", datetime(2024, 1, 1, 9), exclusions="2024-01-02"))
    assert [d.day for d in got] == [1, 3, 4]


def test_coerce_and_empty():
    assert not ExclusionSet.coerce(None)
    ex = ExclusionSet(["2024-01-01"])
    assert ExclusionSet.coerce(ex) is ex
    assert ExclusionSet.coerce(date(2024, 5, 1)).excludes(datetime(2024, 5, 1, 8))
