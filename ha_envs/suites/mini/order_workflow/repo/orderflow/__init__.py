"""orderflow: order fulfilment (orders, state machine, inventory, refunds, event log)."""

from .errors import (
    InsufficientStock,
    InvalidTransition,
    OrderError,
    PaymentError,
    RefundError,
    ReservationError,
    UnknownOrder,
)
from .events import Event, EventLog
from .inventory import Hold, Inventory
from .models import Order, OrderLine, OrderState, Refund
from .money import allocate, format_cents, to_cents
from .refunds import RefundBreakdown, RefundCalculator
from .service import OrderService
from .state_machine import TRANSITIONS, OrderStateMachine, allowed_events, can

__all__ = [
    "Event",
    "EventLog",
    "Hold",
    "InsufficientStock",
    "InvalidTransition",
    "Inventory",
    "Order",
    "OrderError",
    "OrderLine",
    "OrderService",
    "OrderState",
    "OrderStateMachine",
    "PaymentError",
    "Refund",
    "RefundBreakdown",
    "RefundCalculator",
    "RefundError",
    "ReservationError",
    "TRANSITIONS",
    "UnknownOrder",
    "allocate",
    "allowed_events",
    "can",
    "format_cents",
    "to_cents",
]

__version__ = "1.2.0"
