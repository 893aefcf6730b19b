"""Helpers for amounts in integer cents."""

from decimal import ROUND_HALF_UP, Decimal


def to_cents(amount):
    """``"12.34"`` / ``Decimal("12.34")`` / ``12`` -> ``1234``. Floats are refused."""
    if isinstance(amount, float):
        raise TypeError("use str or Decimal for money, not float")
    value = Decimal(str(amount)) * 100
    cents = value.quantize(Decimal("1"), rounding=ROUND_HALF_UP)
    if cents != value:
        raise ValueError(f"{amount!r} has more than two decimals")
    return int(cents)


def format_cents(cents, currency="EUR"):
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return f"{sign}{cents // 100}.{cents % 100:02d} {currency}"


def div_round(numerator, denominator):
    """Integer division rounding half away from zero (both arguments are ints)."""
    if denominator <= 0:
        raise ValueError("denominator must be positive")
    q, r = divmod(abs(numerator), denominator)
    if 2 * r >= denominator:
        q += 1
    return q if numerator >= 0 else -q


def allocate(total, weights):
    """Split ``total`` cents in proportion to ``weights`` (largest remainder method).

    The parts always add up to ``total``; ties go to the earlier weight.
    """
    if total < 0:
        raise ValueError("cannot allocate a negative amount")
    weight_sum = sum(weights)
    if weight_sum == 0:
        return [0] * len(weights)
    parts = [total * w // weight_sum for w in weights]
    remainders = [(total * w % weight_sum, -i) for i, w in enumerate(weights)]
    leftover = total - sum(parts)
    for _, neg_i in sorted(remainders, reverse=True)[:leftover]:
        parts[-neg_i] += 1
    return parts
