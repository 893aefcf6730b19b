"""Money helpers: conversion to Decimal, rounding to cents, formatting."""

from decimal import Decimal, InvalidOperation

CENT = Decimal("0.01")
ZERO = Decimal("0.00")

CURRENCY_SYMBOLS = {"EUR": "€", "USD": "$", "GBP": "£"}


def to_decimal(value):
    """Convert ``value`` (int, str, Decimal or float) to a Decimal.

    Floats go through ``str`` so that ``0.1`` becomes ``Decimal('0.1')`` and
    not its binary expansion. Strings may use ``_`` or ``,`` as thousands
    separators.
    """
    if isinstance(value, Decimal):
        return value
    if isinstance(value, bool):
        raise TypeError("booleans are not amounts")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, str):
        text = value.strip().replace("_", "").replace(",", "")
        try:
            return Decimal(text)
        except InvalidOperation:
            raise ValueError(f"not an amount: {value!r}") from None
    raise TypeError(f"cannot convert {type(value).__name__} to an amount")


def round_money(amount):
    """Round ``amount`` to whole cents.

    Commercial rounding: exact halves go away from zero, so ``0.125`` becomes
    ``0.13`` and ``-0.125`` becomes ``-0.13``. The result always has two
    decimal places.
    """
    amount = to_decimal(amount)
    return Decimal(f"{float(amount):.2f}")


def format_money(amount, currency=None, *, width=0):
    """``1234.5`` -> ``'1,234.50'`` (with a currency symbol or code if given)."""
    amount = to_decimal(amount).quantize(CENT)
    sign = "-" if amount < 0 else ""
    text = f"{abs(amount):,.2f}"
    if currency:
        symbol = CURRENCY_SYMBOLS.get(currency)
        text = f"{symbol}{text}" if symbol else f"{text} {currency}"
    return f"{sign}{text}".rjust(width)


def sum_money(amounts):
    """Sum already rounded amounts, returning ``0.00`` for an empty input."""
    total = ZERO
    for amount in amounts:
        total += to_decimal(amount)
    return total.quantize(CENT)
