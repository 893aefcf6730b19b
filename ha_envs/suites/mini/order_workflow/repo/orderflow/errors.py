"""Exceptions of the orderflow package."""


class OrderError(Exception):
    """Base class for every error raised by orderflow."""


class InvalidTransition(OrderError):
    """The requested event is not allowed in the order's current state."""

    def __init__(self, order_id, state, event):
        self.order_id = order_id
        self.state = state
        self.event = event
        super().__init__(f"order {order_id}: cannot {event} when {state}")


class InsufficientStock(OrderError):
    def __init__(self, sku, requested, available):
        self.sku = sku
        self.requested = requested
        self.available = available
        super().__init__(f"not enough {sku!r}: requested {requested}, available {available}")


class ReservationError(OrderError):
    """A reservation does not exist or does not cover the requested quantity."""


class PaymentError(OrderError):
    pass


class RefundError(OrderError):
    pass


class UnknownOrder(OrderError, KeyError):
    pass
