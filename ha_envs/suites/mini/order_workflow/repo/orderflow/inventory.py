"""Stock levels and per-order reservations.

For every SKU the inventory tracks ``on_hand`` (units physically in the warehouse) and
``reserved`` (units promised to orders that have not shipped yet); ``available`` is the
difference. An order's claim on a SKU is a :class:`Hold`: ``quantity`` units were reserved for
it, ``committed`` of them have shipped (they left ``on_hand`` and no longer count as reserved).
"""

from dataclasses import dataclass
from typing import Dict

from .errors import InsufficientStock, OrderError, ReservationError


@dataclass
class StockItem:
    sku: str
    on_hand: int = 0
    reserved: int = 0

    @property
    def available(self):
        return self.on_hand - self.reserved


@dataclass
class Hold:
    order_id: str
    sku: str
    quantity: int
    committed: int = 0

    @property
    def outstanding(self):
        """Units still reserved for the order (reserved and not shipped)."""
        return self.quantity - self.committed


class Inventory:
    def __init__(self, stock=None):
        self._items: Dict[str, StockItem] = {}
        self._holds: Dict[str, Dict[str, Hold]] = {}
        for sku, qty in (stock or {}).items():
            self.receive(sku, qty)

    # -- stock ---------------------------------------------------------------------------------

    def _item(self, sku):
        try:
            return self._items[sku]
        except KeyError:
            raise OrderError(f"unknown SKU {sku!r}") from None

    def receive(self, sku, quantity):
        """Goods arrive at the warehouse (also used to restock returned items)."""
        if quantity <= 0:
            raise ValueError("received quantity must be positive")
        item = self._items.setdefault(sku, StockItem(sku))
        item.on_hand += quantity
        return item.on_hand

    def on_hand(self, sku):
        return self._item(sku).on_hand

    def reserved(self, sku):
        return self._item(sku).reserved

    def available(self, sku):
        return self._item(sku).available

    def snapshot(self):
        return {sku: (i.on_hand, i.reserved, i.available) for sku, i in sorted(self._items.items())}

    # -- holds ---------------------------------------------------------------------------------

    def holds(self, order_id):
        """``{sku: Hold}`` for an order (a copy)."""
        return {sku: Hold(h.order_id, h.sku, h.quantity, h.committed)
                for sku, h in self._holds.get(order_id, {}).items()}

    def _hold(self, order_id, sku):
        try:
            return self._holds[order_id][sku]
        except KeyError:
            raise ReservationError(f"order {order_id} holds no {sku!r}") from None

    def reserve(self, order_id, sku, quantity):
        if quantity <= 0:
            raise ValueError("reserved quantity must be positive")
        item = self._item(sku)
        if item.available < quantity:
            raise InsufficientStock(sku, quantity, item.available)
        item.reserved += quantity
        holds = self._holds.setdefault(order_id, {})
        hold = holds.setdefault(sku, Hold(order_id, sku, 0))
        hold.quantity += quantity
        return hold

    def reserve_all(self, order_id, quantities):
        """Reserve several SKUs at once: either every reservation succeeds or none is made."""
        for sku, qty in quantities.items():
            item = self._item(sku)
            if item.available < qty:
                raise InsufficientStock(sku, qty, item.available)
        return {sku: self.reserve(order_id, sku, qty) for sku, qty in quantities.items()}

    def commit(self, order_id, sku, quantity):
        """Reserved units leave the warehouse (shipment)."""
        hold = self._hold(order_id, sku)
        if quantity <= 0 or quantity > hold.outstanding:
            raise ReservationError(
                f"order {order_id}: cannot ship {quantity} {sku!r}, {hold.outstanding} reserved"
            )
        item = self._item(sku)
        item.on_hand -= quantity
        item.reserved -= quantity
        hold.committed += quantity
        return hold

    def release(self, order_id, sku, quantity=None):
        """Give back (part of) what is still reserved for one SKU of an order."""
        hold = self._hold(order_id, sku)
        if quantity is None:
            quantity = hold.outstanding
        if quantity < 0 or quantity > hold.outstanding:
            raise ReservationError(
                f"order {order_id}: cannot release {quantity} {sku!r}, {hold.outstanding} reserved"
            )
        self._item(sku).reserved -= quantity
        hold.quantity -= quantity
        if hold.quantity == 0:
            del self._holds[order_id][sku]
        return quantity

    def release_order(self, order_id):
        """Drop every hold of an order; return ``{sku: units given back to available}``."""
        released = {}
        for sku, hold in sorted(self._holds.pop(order_id, {}).items()):
            self._item(sku).reserved -= hold.quantity
            released[sku] = hold.quantity
        return released
