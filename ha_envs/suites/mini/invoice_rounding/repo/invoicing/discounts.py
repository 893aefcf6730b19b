"""Line discounts."""

from decimal import Decimal

from .money import ZERO, round_money, to_decimal


class Discount:
    """Base class: ``amount_off(base)`` returns the rounded reduction."""

    label = "discount"

    def amount_off(self, base):
        raise NotImplementedError

    def describe(self):
        return self.label


class PercentDiscount(Discount):
    """``PercentDiscount(15)`` takes 15 % off the line amount."""

    def __init__(self, percent):
        percent = to_decimal(percent)
        if not Decimal(0) <= percent <= Decimal(100):
            raise ValueError("percent must be between 0 and 100")
        self.percent = percent

    def amount_off(self, base):
        base = to_decimal(base)
        return round_money(base * self.percent / Decimal(100))

    def describe(self):
        return f"-{self.percent.normalize()}%"

    def __repr__(self):
        return f"PercentDiscount({self.percent})"


class AmountDiscount(Discount):
    """A fixed reduction, never more than the line amount itself."""

    def __init__(self, amount):
        amount = to_decimal(amount)
        if amount < 0:
            raise ValueError("discount amount cannot be negative")
        self.amount = round_money(amount)

    def amount_off(self, base):
        base = to_decimal(base)
        if base <= 0:
            return ZERO
        return min(self.amount, round_money(base))

    def describe(self):
        return f"-{self.amount}"

    def __repr__(self):
        return f"AmountDiscount({self.amount})"
