from datetime import date, time

import pytest

from recur import DAILY, MONTHLY, WEEKLY, YEARLY, Rule, RuleError, parse_rule


def test_parse_simple_rules():
    assert parse_rule("every day") == Rule(DAILY)
    assert parse_rule("Every 3 Days") == Rule(DAILY, interval=3)
    assert parse_rule("every year") == Rule(YEARLY)
    assert parse_rule("every weekday") == Rule(WEEKLY, byweekday=(0, 1, 2, 3, 4))


def test_parse_weekly_rules():
    rule = parse_rule("every 2 weeks on wed, mon")
    assert rule.freq == WEEKLY
    assert rule.interval == 2
    assert rule.byweekday == (0, 2)
    assert parse_rule("every week on tuesday and thursday").byweekday == (1, 3)
    assert parse_rule("every week on mon-wed").byweekday == (0, 1, 2)
    assert parse_rule("every week on weekends").byweekday == (5, 6)


def test_parse_monthly_rules():
    assert parse_rule("every month on day 1,15").bymonthday == (1, 15)
    assert parse_rule("every 3 months on the last day").bymonthday == (-1,)
    assert parse_rule("every month").bymonthday == ()


def test_parse_times_and_bounds():
    rule = parse_rule("every day at 17:30, 9:00 until 2024-06-30")
    assert rule.times == (time(9, 0), time(17, 30))
    assert rule.until == date(2024, 6, 30)
    assert parse_rule("every week for 10 times").count == 10
    assert parse_rule("every week for 1 time").count == 1


@pytest.mark.parametrize(
    "text",
    [
        "every 2 weeks on mon,wed at 09:00 until 2024-06-30",
        "every weekday at 09:00,17:30",
        "every month on day -1,1 for 5 times",
        "every 3 days",
        "every year",
    ],
    ids=["weekly", "weekday", "monthly", "daily", "yearly"],
)
def test_describe_round_trip(text):
    rule = parse_rule(text)
    assert parse_rule(rule.describe()) == rule


@pytest.mark.parametrize(
    "text",
    [
        "each day",
        "every fortnight",
        "every 0 days",
        "every day on mon",
        "every week on funday",
        "every month on day 32",
        "every day at 25:00",
        "every 2 weekdays",
    ],
    ids=["no-every", "unit", "zero-interval", "daily-on", "bad-weekday", "bad-monthday", "bad-time", "weekday-interval"],
)
def test_invalid_rules(text):
    with pytest.raises(RuleError):
        parse_rule(text)


def test_rule_validation():
    with pytest.raises(RuleError):
        Rule(DAILY, until=date(2024, 1, 1), count=3)
    with pytest.raises(RuleError):
        Rule(MONTHLY, byweekday=(1,))
