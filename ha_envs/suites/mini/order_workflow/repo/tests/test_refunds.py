import pytest

from orderflow import Order, OrderLine, RefundCalculator, RefundError


def order(discount=0, shipping=0, paid=True):
    o = Order("O-1", "bob", [OrderLine("widget", 4, 2500), OrderLine("gadget", 2, 1000)],
              discount_cents=discount, shipping_cents=shipping)
    if paid:
        o.paid_cents = o.total_cents
    return o


def test_breakdown_without_discount():
    b = RefundCalculator().breakdown(order(), {"widget": 2})
    assert (b.items_cents, b.discount_cents, b.shipping_cents, b.total_cents) == (5000, 0, 0, 5000)


def test_breakdown_spreads_line_discount_over_units():
    calc = RefundCalculator()
    o = order(discount=1200)
    assert calc.breakdown(o, {"widget": 1}).total_cents == 2250
    assert calc.breakdown(o, {"gadget": 1}).total_cents == 900
    assert calc.breakdown(o, {"widget": 4, "gadget": 2}).total_cents == 10800


def test_breakdown_skips_zero_quantities():
    b = RefundCalculator().breakdown(order(), {"widget": 0, "gadget": 1})
    assert b.quantities == {"gadget": 1}


def test_cancellation_refunds_shipping_when_nothing_shipped():
    o = order(shipping=500)
    b = RefundCalculator().for_cancellation(o, {"widget": 4, "gadget": 2})
    assert b.shipping_cents == 500
    assert b.total_cents == o.total_cents


def test_cancellation_shipping_policy_can_be_disabled():
    o = order(shipping=500)
    b = RefundCalculator(refund_shipping_on_cancel=False).for_cancellation(o, {"widget": 4, "gadget": 2})
    assert b.total_cents == 12000


def test_no_shipping_refund_once_something_shipped():
    o = order(shipping=500)
    o.line("widget").shipped = 1
    b = RefundCalculator().for_cancellation(o, {"widget": 3, "gadget": 2})
    assert b.shipping_cents == 0
    assert b.total_cents == 9500


def test_refund_cannot_exceed_balance():
    o = order(paid=False)
    with pytest.raises(RefundError):
        RefundCalculator().for_cancellation(o, {"widget": 1})


def test_return_limited_to_shipped_units():
    o = order()
    o.line("widget").shipped = 2
    assert RefundCalculator().for_return(o, {"widget": 2}).total_cents == 5000
    with pytest.raises(RefundError):
        RefundCalculator().for_return(o, {"widget": 3})


def test_refund_more_than_ordered():
    with pytest.raises(RefundError):
        RefundCalculator().line_refund(order(), "gadget", 3)
