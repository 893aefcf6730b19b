"""How much money goes back to the customer.

Item refunds are computed per line: ``units * unit price`` minus the matching share of the
order discount (the discount of a line is spread evenly over its units). Shipping is refunded
only when the caller says so (cancellation before anything shipped).
"""

from dataclasses import dataclass, field
from typing import Dict

from .errors import RefundError
from .money import div_round


@dataclass(frozen=True)
class RefundBreakdown:
    items_cents: int
    discount_cents: int
    shipping_cents: int
    quantities: Dict[str, int] = field(default_factory=dict)

    @property
    def total_cents(self):
        return self.items_cents - self.discount_cents + self.shipping_cents


class RefundCalculator:
    def __init__(self, refund_shipping_on_cancel=True):
        self.refund_shipping_on_cancel = refund_shipping_on_cancel

    def line_refund(self, order, sku, units):
        """``(gross, discount)`` cents for ``units`` units of the line ``sku``."""
        line = order.line(sku)
        if units < 0 or units > line.quantity:
            raise RefundError(f"cannot refund {units} units of {sku!r} (ordered {line.quantity})")
        gross = units * line.unit_price_cents
        line_discount = order.line_discounts()[sku]
        discount = div_round(line_discount * units, line.quantity)
        return gross, discount

    def breakdown(self, order, quantities, include_shipping=False):
        """Refund for the given ``{sku: units}``."""
        items = discount = 0
        kept = {}
        for sku, units in sorted(quantities.items()):
            if units == 0:
                continue
            gross, disc = self.line_refund(order, sku, units)
            items += gross
            discount += disc
            kept[sku] = units
        shipping = order.shipping_cents if include_shipping else 0
        return RefundBreakdown(items, discount, shipping, kept)

    def for_cancellation(self, order, cancelled_quantities):
        """Refund owed when the given units are cancelled.

        Shipping goes back only if nothing of the order was shipped.
        """
        include_shipping = self.refund_shipping_on_cancel and not order.any_shipped
        result = self.breakdown(order, cancelled_quantities, include_shipping=include_shipping)
        return self._cap(order, result)

    def for_return(self, order, returned_quantities):
        """Refund owed for returned units (shipping is never refunded on returns)."""
        for sku, units in returned_quantities.items():
            line = order.line(sku)
            if units > line.returnable:
                raise RefundError(
                    f"cannot return {units} {sku!r}: only {line.returnable} shipped and not returned"
                )
        return self._cap(order, self.breakdown(order, returned_quantities))

    @staticmethod
    def _cap(order, result):
        if result.total_cents > order.balance_cents:
            raise RefundError(
                f"order {order.order_id}: refund {result.total_cents} exceeds balance "
                f"{order.balance_cents}"
            )
        return result
