"""Orders and order lines. All amounts are integer cents."""

from dataclasses import dataclass, field
from enum import Enum
from typing import Dict, List, Optional

from .errors import OrderError
from .money import allocate


class OrderState(str, Enum):
    DRAFT = "draft"
    PLACED = "placed"
    PAID = "paid"
    PARTIALLY_SHIPPED = "partially_shipped"
    SHIPPED = "shipped"
    DELIVERED = "delivered"
    CANCELLED = "cancelled"
    RETURNED = "returned"

    def __str__(self):
        return self.value


@dataclass
class OrderLine:
    sku: str
    quantity: int
    unit_price_cents: int
    shipped: int = 0
    cancelled: int = 0
    returned: int = 0

    def __post_init__(self):
        if not self.sku:
            raise OrderError("a line needs a SKU")
        if self.quantity <= 0:
            raise OrderError(f"line {self.sku}: quantity must be positive")
        if self.unit_price_cents < 0:
            raise OrderError(f"line {self.sku}: negative price")

    @property
    def subtotal_cents(self):
        return self.quantity * self.unit_price_cents

    @property
    def unshipped(self):
        """Units neither shipped nor cancelled yet."""
        return self.quantity - self.shipped - self.cancelled

    @property
    def returnable(self):
        return self.shipped - self.returned


@dataclass
class Refund:
    amount_cents: int
    reason: str
    items: Dict[str, int] = field(default_factory=dict)


@dataclass
class Order:
    order_id: str
    customer: str
    lines: List[OrderLine]
    discount_cents: int = 0
    shipping_cents: int = 0
    state: OrderState = OrderState.DRAFT
    paid_cents: int = 0
    refunds: List[Refund] = field(default_factory=list)
    cancel_reason: Optional[str] = None

    def __post_init__(self):
        if not self.lines:
            raise OrderError(f"order {self.order_id} has no lines")
        skus = [line.sku for line in self.lines]
        if len(set(skus)) != len(skus):
            raise OrderError(f"order {self.order_id} lists a SKU twice")
        if self.discount_cents < 0 or self.shipping_cents < 0:
            raise OrderError("discount and shipping must not be negative")
        if self.discount_cents > self.subtotal_cents:
            raise OrderError("discount larger than the order subtotal")

    # -- lookup --------------------------------------------------------------------------------

    def line(self, sku):
        for line in self.lines:
            if line.sku == sku:
                return line
        raise OrderError(f"order {self.order_id} has no line for {sku!r}")

    # -- amounts -------------------------------------------------------------------------------

    @property
    def subtotal_cents(self):
        return sum(line.subtotal_cents for line in self.lines)

    @property
    def total_cents(self):
        return self.subtotal_cents - self.discount_cents + self.shipping_cents

    def line_discounts(self):
        """The order discount split over the lines in proportion to their subtotals."""
        parts = allocate(self.discount_cents, [line.subtotal_cents for line in self.lines])
        return {line.sku: part for line, part in zip(self.lines, parts)}

    @property
    def refunded_cents(self):
        return sum(r.amount_cents for r in self.refunds)

    @property
    def balance_cents(self):
        """What the customer has paid and not been refunded."""
        return self.paid_cents - self.refunded_cents

    # -- fulfilment ----------------------------------------------------------------------------

    @property
    def any_shipped(self):
        return any(line.shipped for line in self.lines)

    @property
    def fully_shipped(self):
        return all(line.unshipped == 0 for line in self.lines) and self.any_shipped

    @property
    def fully_returned(self):
        return self.any_shipped and all(line.returnable == 0 for line in self.lines)

    def summary(self):
        return {
            "order_id": self.order_id,
            "state": str(self.state),
            "total_cents": self.total_cents,
            "paid_cents": self.paid_cents,
            "refunded_cents": self.refunded_cents,
            "lines": {
                line.sku: {
                    "quantity": line.quantity,
                    "shipped": line.shipped,
                    "cancelled": line.cancelled,
                    "returned": line.returned,
                }
                for line in self.lines
            },
        }
