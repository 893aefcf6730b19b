from decimal import Decimal

import pytest

from invoicing import format_money, round_money, to_decimal
from invoicing.money import sum_money


def test_to_decimal_accepts_common_types():
    assert to_decimal(3) == Decimal("3")
    assert to_decimal("1,234.50") == Decimal("1234.50")
    assert to_decimal(0.1) == Decimal("0.1")
    assert to_decimal(Decimal("2.5")) == Decimal("2.5")


def test_to_decimal_rejects_garbage():
    with pytest.raises(ValueError):
        to_decimal("abc")
    with pytest.raises(TypeError):
        to_decimal(True)
    with pytest.raises(TypeError):
        to_decimal([1])


def test_round_money_two_places():
    assert str(round_money(10)) == "10.00"
    assert str(round_money("1.234")) == "1.23"
    assert str(round_money("1.236")) == "1.24"
    assert str(round_money("-1.236")) == "-1.24"
    assert str(round_money("19.999")) == "20.00"


def test_format_money():
    assert format_money("1234.5") == "1,234.50"
    assert format_money("-3", "EUR") == "-€3.00"
    assert format_money("7", "CHF") == "7.00 CHF"
    assert format_money("1", width=6) == "  1.00"


def test_sum_money():
    assert str(sum_money([])) == "0.00"
    assert sum_money(["1.10", "2.20", Decimal("3.30")]) == Decimal("6.60")
