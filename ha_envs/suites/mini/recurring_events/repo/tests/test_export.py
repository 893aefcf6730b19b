from datetime import datetime

from recur import Calendar, Event, export_text, parse_export


def make_calendar():
    cal = Calendar()
    cal.add(Event("Standup", datetime(2024, 1, 8, 9, 30), "15m", "every week on mon,wed,fri",
                  ["2024-01-10"], "Room 1"))
    cal.add(Event("Rent", datetime(2024, 1, 1, 8, 0), rule="every month on day 1"))
    cal.add(Event("Deploy", datetime(2024, 1, 12, 23, 0), "2h"))
    return cal


def test_export_lines():
    text = export_text(make_calendar(), datetime(2024, 1, 1), datetime(2024, 1, 16))
    assert text == (
        "# agenda 2024-01-01 00:00 .. 2024-01-16 00:00\n"
        "2024-01-01 Mon 08:00-09:00 Rent\n"
        "2024-01-08 Mon 09:30-09:45 Standup @ Room 1\n"
        "2024-01-12 Fri 09:30-09:45 Standup @ Room 1\n"
        "2024-01-12 Fri 23:00-01:00+1 Deploy\n"
        "2024-01-15 Mon 09:30-09:45 Standup @ Room 1\n"
    )


def test_export_grouped_by_day():
    text = export_text(make_calendar(), datetime(2024, 1, 12), datetime(2024, 1, 13), group_by_day=True)
    assert text.splitlines()[1:] == [
        "== 2024-01-12 Fri ==",
        "  09:30-09:45 Standup @ Room 1",
        "  23:00-01:00+1 Deploy",
    ]


def test_export_round_trip():
    cal = make_calendar()
    window = (datetime(2024, 1, 1), datetime(2024, 3, 1))
    expected = [(o.start, o.end, o.title, o.location) for o in cal.occurrences_between(*window)]
    assert parse_export(export_text(cal, *window)) == expected
    assert parse_export(export_text(cal, *window, group_by_day=True)) == expected


def test_export_lists_duplicate_events_once():
    cal = make_calendar()
    cal.add(Event("Rent", datetime(2024, 1, 1, 8, 0), rule="every month on day 1"))
    text = export_text(cal, datetime(2024, 1, 1), datetime(2024, 1, 2))
    assert text.count("Rent") == 1


def test_empty_export():
    assert export_text(Calendar(), datetime(2024, 1, 1), datetime(2024, 1, 2)) == "# agenda 2024-01-01 00:00 .. 2024-01-02 00:00\n"
