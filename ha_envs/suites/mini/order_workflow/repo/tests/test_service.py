import pytest

from orderflow import OrderState, UnknownOrder


def test_ids_are_sequential(service):
    a = service.create_order("a", [("widget", 1, 100)])
    b = service.create_order("b", [("widget", 1, 100)])
    assert (a.order_id, b.order_id) == ("ORD-0001", "ORD-0002")


def test_get_unknown(service):
    with pytest.raises(UnknownOrder):
        service.get("ORD-9999")


def test_orders_by_state(service, paid_order):
    other = service.create_order("b", [("gizmo", 1, 100)])
    assert service.orders(OrderState.PAID) == [paid_order]
    assert service.orders(OrderState.DRAFT) == [other]
    assert len(service.orders()) == 2


def test_allowed_events(service, paid_order):
    assert service.allowed_events(paid_order.order_id) == ["cancel", "ship"]


def test_two_orders_compete_for_stock(service, inventory):
    a = service.create_order("a", [("gizmo", 2, 100)])
    b = service.create_order("b", [("gizmo", 2, 100)])
    service.place(a.order_id)
    with pytest.raises(Exception):
        service.place(b.order_id)
    service.cancel(a.order_id)
    assert service.place(b.order_id) is OrderState.PLACED
    assert inventory.available("gizmo") == 1


def test_discounted_order_cancelled_after_payment(service, inventory):
    order = service.create_order("d", [("widget", 4, 2500), ("gadget", 2, 1000)],
                                 discount_cents=1200, shipping_cents=500)
    service.place(order.order_id)
    service.pay(order.order_id, 11300)
    service.cancel(order.order_id)
    assert order.refunded_cents == 11300
    assert inventory.snapshot()["widget"] == (10, 0, 10)
