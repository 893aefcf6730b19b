import pytest

from orderflow import Inventory, OrderService


@pytest.fixture
def inventory():
    return Inventory({"widget": 10, "gadget": 5, "gizmo": 3})


@pytest.fixture
def service(inventory):
    return OrderService(inventory)


@pytest.fixture
def paid_order(service):
    """widget 4 x 25.00, gadget 2 x 10.00, shipping 5.00, placed and paid (total 125.00)."""
    order = service.create_order("alice", [("widget", 4, 2500), ("gadget", 2, 1000)],
                                 shipping_cents=500)
    service.place(order.order_id)
    service.pay(order.order_id, order.total_cents)
    return order
