"""The façade used by the web layer: orders by id, one method per user action."""

from .errors import UnknownOrder
from .events import EventLog
from .inventory import Inventory
from .models import Order, OrderLine
from .refunds import RefundCalculator
from .state_machine import OrderStateMachine, allowed_events


class OrderService:
    def __init__(self, inventory=None, events=None, refunds=None, id_prefix="ORD"):
        self.inventory = inventory if inventory is not None else Inventory()
        self.events = events if events is not None else EventLog()
        self.refunds = refunds if refunds is not None else RefundCalculator()
        self.machine = OrderStateMachine(self.inventory, self.events, self.refunds)
        self._orders = {}
        self._next_id = 1
        self._prefix = id_prefix

    def create_order(self, customer, lines, discount_cents=0, shipping_cents=0):
        """``lines`` is a list of ``(sku, quantity, unit_price_cents)``."""
        order_id = f"{self._prefix}-{self._next_id:04d}"
        order = Order(
            order_id,
            customer,
            [OrderLine(sku, qty, price) for sku, qty, price in lines],
            discount_cents=discount_cents,
            shipping_cents=shipping_cents,
        )
        self._next_id += 1
        self._orders[order_id] = order
        self.events.emit("OrderCreated", order_id, customer=customer,
                         total_cents=order.total_cents)
        return order

    def get(self, order_id):
        try:
            return self._orders[order_id]
        except KeyError:
            raise UnknownOrder(order_id) from None

    def orders(self, state=None):
        return [o for o in self._orders.values() if state is None or o.state == state]

    def allowed_events(self, order_id):
        return allowed_events(self.get(order_id).state)

    # -- user actions --------------------------------------------------------------------------

    def place(self, order_id):
        return self.machine.fire(self.get(order_id), "place")

    def pay(self, order_id, amount_cents):
        return self.machine.fire(self.get(order_id), "pay", amount_cents=amount_cents)

    def ship(self, order_id, quantities):
        return self.machine.fire(self.get(order_id), "ship", quantities=dict(quantities))

    def deliver(self, order_id):
        return self.machine.fire(self.get(order_id), "deliver")

    def cancel(self, order_id, reason="customer request"):
        return self.machine.fire(self.get(order_id), "cancel", reason=reason)

    def return_items(self, order_id, quantities, restock=True):
        return self.machine.fire(self.get(order_id), "return", quantities=dict(quantities),
                                 restock=restock)
