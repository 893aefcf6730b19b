"""The append-only event log written by every transition."""

from dataclasses import dataclass, field
from typing import Any, Dict, List


@dataclass(frozen=True)
class Event:
    seq: int
    type: str
    order_id: str
    data: Dict[str, Any] = field(default_factory=dict)


class EventLog:
    def __init__(self):
        self._events: List[Event] = []
        self._subscribers = []

    def emit(self, type_, order_id, **data):
        event = Event(len(self._events) + 1, type_, order_id, dict(data))
        self._events.append(event)
        for callback in list(self._subscribers):
            callback(event)
        return event

    def subscribe(self, callback):
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback)

    def __iter__(self):
        return iter(list(self._events))

    def __len__(self):
        return len(self._events)

    def for_order(self, order_id):
        return [e for e in self._events if e.order_id == order_id]

    def of_type(self, type_, order_id=None):
        return [e for e in self._events
                if e.type == type_ and (order_id is None or e.order_id == order_id)]

    def types(self, order_id):
        return [e.type for e in self.for_order(order_id)]

    def last(self, type_, order_id=None):
        found = self.of_type(type_, order_id)
        return found[-1] if found else None

    def state_history(self, order_id):
        """The states an order went through, rebuilt from its StateChanged events."""
        history = []
        for e in self.of_type("StateChanged", order_id):
            if not history:
                history.append(e.data["from"])
            history.append(e.data["to"])
        return history
