import pytest

from orderflow import Order, OrderError, OrderLine, OrderState


def make_order(**kw):
    lines = [OrderLine("widget", 4, 2500), OrderLine("gadget", 2, 1000)]
    return Order("O-1", "bob", lines, **kw)


def test_totals():
    order = make_order(discount_cents=1200, shipping_cents=500)
    assert order.subtotal_cents == 12000
    assert order.total_cents == 11300
    assert order.state is OrderState.DRAFT


def test_line_discounts_follow_subtotals():
    order = make_order(discount_cents=1200)
    assert order.line_discounts() == {"widget": 1000, "gadget": 200}


def test_line_counters():
    line = OrderLine("widget", 5, 100)
    line.shipped = 2
    assert line.unshipped == 3
    assert line.returnable == 2
    line.cancelled = 3
    assert line.unshipped == 0


def test_invalid_orders():
    with pytest.raises(OrderError):
        Order("O-1", "bob", [])
    with pytest.raises(OrderError):
        Order("O-1", "bob", [OrderLine("a", 1, 1), OrderLine("a", 2, 1)])
    with pytest.raises(OrderError):
        OrderLine("a", 0, 100)
    with pytest.raises(OrderError):
        make_order(discount_cents=20000)


def test_line_lookup():
    order = make_order()
    assert order.line("gadget").quantity == 2
    with pytest.raises(OrderError):
        order.line("nope")


def test_summary():
    order = make_order()
    assert order.summary()["lines"]["widget"] == {
        "quantity": 4, "shipped": 0, "cancelled": 0, "returned": 0}
    assert order.summary()["state"] == "draft"
