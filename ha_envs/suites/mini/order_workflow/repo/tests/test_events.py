from orderflow import EventLog


def test_emit_and_query():
    log = EventLog()
    log.emit("A", "o1", x=1)
    log.emit("B", "o2")
    log.emit("A", "o2", x=2)
    assert [e.seq for e in log] == [1, 2, 3]
    assert len(log) == 3
    assert [e.data["x"] for e in log.of_type("A")] == [1, 2]
    assert log.types("o2") == ["B", "A"]
    assert log.last("A").data == {"x": 2}
    assert log.last("C") is None


def test_subscribe_and_unsubscribe():
    log = EventLog()
    seen = []
    unsubscribe = log.subscribe(lambda e: seen.append(e.type))
    log.emit("A", "o1")
    unsubscribe()
    log.emit("B", "o1")
    assert seen == ["A"]


def test_order_event_trail(service, paid_order):
    oid = paid_order.order_id
    assert service.events.types(oid) == [
        "OrderCreated", "StockReserved", "OrderPlaced", "StateChanged",
        "PaymentCaptured", "StateChanged",
    ]
    assert service.events.last("StockReserved", oid).data == {
        "quantities": {"widget": 4, "gadget": 2}}


def test_cancel_events(service, paid_order):
    oid = paid_order.order_id
    service.cancel(oid, reason="duplicate")
    released = service.events.last("ReservationReleased", oid)
    assert released.data == {"quantities": {"gadget": 2, "widget": 4}}
    refund = service.events.last("RefundIssued", oid)
    assert refund.data["amount_cents"] == 12500
    assert refund.data["shipping_cents"] == 500
    assert service.events.last("OrderCancelled", oid).data["reason"] == "duplicate"
    assert service.events.state_history(oid) == ["draft", "placed", "paid", "cancelled"]
