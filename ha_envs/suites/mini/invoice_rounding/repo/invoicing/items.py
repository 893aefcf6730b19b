"""Invoice line items."""

from .money import ZERO, round_money, to_decimal


class LineItem:
    """One line: ``quantity`` x ``unit_price``, optional discount and tax category.

    ``quantity`` may be fractional (hours, kilograms) and negative for credit
    lines; ``unit_price`` is a price before tax.
    """

    def __init__(self, description, quantity, unit_price, *,
                 tax_category=None, discount=None, sku=None):
        if not description or not str(description).strip():
            raise ValueError("a line needs a description")
        self.description = str(description).strip()
        self.quantity = to_decimal(quantity)
        self.unit_price = to_decimal(unit_price)
        self.tax_category = tax_category
        self.discount = discount
        self.sku = sku

    def gross_amount(self):
        """``quantity * unit_price`` rounded to cents, before discount."""
        return round_money(self.quantity * self.unit_price)

    def discount_amount(self):
        if self.discount is None:
            return ZERO
        return self.discount.amount_off(self.gross_amount())

    def net_amount(self):
        """Amount after discount, before tax."""
        return self.gross_amount() - self.discount_amount()

    def __repr__(self):
        return (f"LineItem({self.description!r}, quantity={self.quantity}, "
                f"unit_price={self.unit_price})")
