"""The order life cycle.

``TRANSITIONS`` lists, for every state, the events allowed in it and the states they may lead to.
:class:`OrderStateMachine` checks an event against that table, runs the event's action
(``_on_<event>``), which returns the target state, and records the change in the event log.
"""

from .errors import InvalidTransition, PaymentError, ReservationError
from .models import OrderState, Refund

S = OrderState

TRANSITIONS = {
    S.DRAFT: {"place": {S.PLACED}},
    S.PLACED: {"pay": {S.PAID}, "cancel": {S.CANCELLED}},
    S.PAID: {"ship": {S.PARTIALLY_SHIPPED, S.SHIPPED}, "cancel": {S.CANCELLED}},
    S.PARTIALLY_SHIPPED: {"ship": {S.PARTIALLY_SHIPPED, S.SHIPPED}, "cancel": {S.CANCELLED}},
    S.SHIPPED: {"deliver": {S.DELIVERED}},
    S.DELIVERED: {"return": {S.DELIVERED, S.RETURNED}},
    S.CANCELLED: {},
    S.RETURNED: {},
}

TERMINAL_STATES = frozenset(s for s, events in TRANSITIONS.items() if not events)


def allowed_events(state):
    return sorted(TRANSITIONS[state])


def can(state, event):
    return event in TRANSITIONS[state]


class OrderStateMachine:
    def __init__(self, inventory, events, refunds):
        self.inventory = inventory
        self.events = events
        self.refunds = refunds

    def fire(self, order, event, **kwargs):
        """Run ``event`` on ``order``; return the order's new state."""
        if not can(order.state, event):
            raise InvalidTransition(order.order_id, order.state, event)
        action = getattr(self, "_on_" + event)
        target = action(order, **kwargs)
        if target not in TRANSITIONS[order.state][event]:  # pragma: no cover - programming error
            raise AssertionError(f"{event} from {order.state} cannot lead to {target}")
        previous, order.state = order.state, target
        self.events.emit("StateChanged", order.order_id, event=event,
                         **{"from": str(previous), "to": str(target)})
        return target

    # -- actions -------------------------------------------------------------------------------

    def _on_place(self, order):
        quantities = {line.sku: line.quantity for line in order.lines}
        self.inventory.reserve_all(order.order_id, quantities)
        self.events.emit("StockReserved", order.order_id, quantities=quantities)
        self.events.emit("OrderPlaced", order.order_id, total_cents=order.total_cents)
        return S.PLACED

    def _on_pay(self, order, amount_cents):
        if amount_cents != order.total_cents:
            raise PaymentError(
                f"order {order.order_id}: payment of {amount_cents} does not match total "
                f"{order.total_cents}"
            )
        order.paid_cents += amount_cents
        self.events.emit("PaymentCaptured", order.order_id, amount_cents=amount_cents)
        return S.PAID

    def _on_ship(self, order, quantities):
        if not quantities or any(q <= 0 for q in quantities.values()):
            raise ReservationError("a shipment needs positive quantities")
        for sku, qty in quantities.items():
            line = order.line(sku)
            if qty > line.unshipped:
                raise ReservationError(
                    f"order {order.order_id}: cannot ship {qty} {sku!r}, {line.unshipped} left"
                )
        for sku, qty in sorted(quantities.items()):
            self.inventory.commit(order.order_id, sku, qty)
            order.line(sku).shipped += qty
        self.events.emit("ItemsShipped", order.order_id, quantities=dict(sorted(quantities.items())))
        return S.SHIPPED if order.fully_shipped else S.PARTIALLY_SHIPPED

    def _on_deliver(self, order):
        self.events.emit("OrderDelivered", order.order_id)
        return S.DELIVERED

    def _on_cancel(self, order, reason="customer request"):
        # Everything that was ordered and is not going out is cancelled.
        cancelled = {line.sku: line.quantity for line in order.lines if line.quantity}
        released = self.inventory.release_order(order.order_id)
        self.events.emit("ReservationReleased", order.order_id, quantities=released)
        for line in order.lines:
            line.cancelled = cancelled.get(line.sku, 0)
        order.cancel_reason = reason
        self.events.emit("OrderCancelled", order.order_id, reason=reason,
                         cancelled=dict(sorted(cancelled.items())))
        if order.paid_cents:
            breakdown = self.refunds.for_cancellation(order, cancelled)
            self._issue_refund(order, breakdown, "cancellation")
        return S.CANCELLED

    def _on_return(self, order, quantities, restock=True):
        breakdown = self.refunds.for_return(order, quantities)
        for sku, qty in sorted(quantities.items()):
            if qty <= 0:
                continue
            order.line(sku).returned += qty
            if restock:
                self.inventory.receive(sku, qty)
                self.events.emit("Restocked", order.order_id, sku=sku, quantity=qty)
        self.events.emit("ItemsReturned", order.order_id, quantities=breakdown.quantities)
        self._issue_refund(order, breakdown, "return")
        return S.RETURNED if order.fully_returned else S.DELIVERED

    # -- helpers -------------------------------------------------------------------------------

    def _issue_refund(self, order, breakdown, reason):
        if breakdown.total_cents <= 0:
            return None
        refund = Refund(breakdown.total_cents, reason, dict(breakdown.quantities))
        order.refunds.append(refund)
        self.events.emit("RefundIssued", order.order_id, amount_cents=refund.amount_cents,
                         reason=reason, items=dict(breakdown.quantities),
                         shipping_cents=breakdown.shipping_cents)
        return refund
