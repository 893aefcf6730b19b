import pytest

from orderflow import InvalidTransition, OrderState, PaymentError, ReservationError, can
from orderflow.state_machine import TERMINAL_STATES, allowed_events


def test_transition_table():
    assert can(OrderState.DRAFT, "place")
    assert not can(OrderState.DRAFT, "ship")
    assert allowed_events(OrderState.PAID) == ["cancel", "ship"]
    assert TERMINAL_STATES == {OrderState.CANCELLED, OrderState.RETURNED}


def test_happy_path(service, inventory):
    order = service.create_order("alice", [("widget", 2, 1999)], shipping_cents=495)
    assert service.place(order.order_id) is OrderState.PLACED
    assert inventory.available("widget") == 8
    assert service.pay(order.order_id, 4493) is OrderState.PAID
    assert service.ship(order.order_id, {"widget": 2}) is OrderState.SHIPPED
    assert inventory.on_hand("widget") == 8
    assert inventory.reserved("widget") == 0
    assert service.deliver(order.order_id) is OrderState.DELIVERED
    assert service.events.state_history(order.order_id) == [
        "draft", "placed", "paid", "shipped", "delivered"]


def test_place_fails_without_stock(service):
    order = service.create_order("bob", [("gizmo", 4, 100)])
    with pytest.raises(Exception):
        service.place(order.order_id)
    assert order.state is OrderState.DRAFT


def test_payment_must_match_total(service):
    order = service.create_order("bob", [("gizmo", 1, 100)])
    service.place(order.order_id)
    with pytest.raises(PaymentError):
        service.pay(order.order_id, 99)
    assert order.state is OrderState.PLACED


def test_cannot_ship_before_paying(service):
    order = service.create_order("bob", [("gizmo", 1, 100)])
    service.place(order.order_id)
    with pytest.raises(InvalidTransition):
        service.ship(order.order_id, {"gizmo": 1})


def test_partial_shipments(service, paid_order, inventory):
    oid = paid_order.order_id
    assert service.ship(oid, {"widget": 3}) is OrderState.PARTIALLY_SHIPPED
    assert service.ship(oid, {"widget": 1, "gadget": 1}) is OrderState.PARTIALLY_SHIPPED
    assert service.ship(oid, {"gadget": 1}) is OrderState.SHIPPED
    assert inventory.snapshot()["widget"] == (6, 0, 6)
    assert inventory.snapshot()["gadget"] == (3, 0, 3)


def test_cannot_ship_more_than_ordered(service, paid_order):
    with pytest.raises(ReservationError):
        service.ship(paid_order.order_id, {"widget": 5})
    with pytest.raises(ReservationError):
        service.ship(paid_order.order_id, {"widget": 0})
    assert paid_order.state is OrderState.PAID


def test_cancel_placed_order(service, inventory):
    order = service.create_order("carol", [("gadget", 3, 1000)])
    service.place(order.order_id)
    assert inventory.available("gadget") == 2
    assert service.cancel(order.order_id, reason="changed mind") is OrderState.CANCELLED
    assert inventory.available("gadget") == 5
    assert order.refunds == []
    assert order.cancel_reason == "changed mind"
    assert order.line("gadget").cancelled == 3


def test_cancel_paid_order_refunds_everything(service, paid_order, inventory):
    service.cancel(paid_order.order_id)
    assert paid_order.refunded_cents == 12500
    assert paid_order.balance_cents == 0
    assert inventory.available("widget") == 10
    assert inventory.available("gadget") == 5


def test_cannot_cancel_shipped_order(service, paid_order):
    oid = paid_order.order_id
    service.ship(oid, {"widget": 4, "gadget": 2})
    with pytest.raises(InvalidTransition):
        service.cancel(oid)


def test_terminal_states(service, paid_order):
    service.cancel(paid_order.order_id)
    for action in (lambda: service.pay(paid_order.order_id, 1),
                   lambda: service.cancel(paid_order.order_id),
                   lambda: service.ship(paid_order.order_id, {"widget": 1})):
        with pytest.raises(InvalidTransition):
            action()


def test_partial_return_then_full_return(service, paid_order, inventory):
    oid = paid_order.order_id
    service.ship(oid, {"widget": 4, "gadget": 2})
    service.deliver(oid)
    assert service.return_items(oid, {"widget": 1}) is OrderState.DELIVERED
    assert paid_order.refunded_cents == 2500
    assert inventory.on_hand("widget") == 7
    assert service.return_items(oid, {"widget": 3, "gadget": 2}) is OrderState.RETURNED
    assert paid_order.refunded_cents == 12000
    assert paid_order.balance_cents == 500


def test_return_without_restock(service, paid_order, inventory):
    oid = paid_order.order_id
    service.ship(oid, {"widget": 4, "gadget": 2})
    service.deliver(oid)
    service.return_items(oid, {"gadget": 1}, restock=False)
    assert inventory.on_hand("gadget") == 3
    assert paid_order.refunded_cents == 1000
