import pytest

from orderflow import allocate, format_cents, to_cents
from orderflow.money import div_round


def test_to_cents():
    assert to_cents("12.34") == 1234
    assert to_cents(7) == 700
    assert to_cents("0.5") == 50


def test_to_cents_rejects_float_and_sub_cent():
    with pytest.raises(TypeError):
        to_cents(1.5)
    with pytest.raises(ValueError):
        to_cents("1.005")


def test_format_cents():
    assert format_cents(123456) == "1234.56 EUR"
    assert format_cents(-5, "USD") == "-0.05 USD"


def test_div_round():
    assert div_round(5, 2) == 3
    assert div_round(4, 3) == 1
    assert div_round(-5, 2) == -3


def test_allocate_sums_to_total():
    assert allocate(100, [1, 1, 1]) == [34, 33, 33]
    assert allocate(1200, [10000, 2000]) == [1000, 200]
    assert allocate(0, [3, 4]) == [0, 0]
    assert allocate(10, [0, 0]) == [0, 0]
    parts = allocate(997, [13, 29, 58])
    assert sum(parts) == 997
