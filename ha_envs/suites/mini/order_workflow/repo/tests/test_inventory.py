import pytest

from orderflow import InsufficientStock, Inventory, OrderError, ReservationError


def test_reserve_reduces_available(inventory):
    inventory.reserve("A", "widget", 4)
    assert inventory.on_hand("widget") == 10
    assert inventory.reserved("widget") == 4
    assert inventory.available("widget") == 6


def test_reserve_more_than_available(inventory):
    inventory.reserve("A", "gadget", 4)
    with pytest.raises(InsufficientStock) as info:
        inventory.reserve("B", "gadget", 2)
    assert info.value.available == 1


def test_reserve_all_is_atomic(inventory):
    with pytest.raises(InsufficientStock):
        inventory.reserve_all("A", {"widget": 2, "gizmo": 4})
    assert inventory.reserved("widget") == 0
    assert inventory.holds("A") == {}


def test_unknown_sku(inventory):
    with pytest.raises(OrderError):
        inventory.reserve("A", "doohickey", 1)


def test_commit_ships_reserved_units(inventory):
    inventory.reserve("A", "widget", 4)
    inventory.commit("A", "widget", 3)
    assert inventory.on_hand("widget") == 7
    assert inventory.reserved("widget") == 1
    assert inventory.available("widget") == 6
    hold = inventory.holds("A")["widget"]
    assert (hold.quantity, hold.committed, hold.outstanding) == (4, 3, 1)


def test_commit_more_than_reserved(inventory):
    inventory.reserve("A", "widget", 2)
    with pytest.raises(ReservationError):
        inventory.commit("A", "widget", 3)
    with pytest.raises(ReservationError):
        inventory.commit("B", "widget", 1)


def test_release_part_of_a_hold(inventory):
    inventory.reserve("A", "widget", 4)
    assert inventory.release("A", "widget", 1) == 1
    assert inventory.reserved("widget") == 3
    assert inventory.release("A", "widget") == 3
    assert inventory.reserved("widget") == 0
    assert inventory.holds("A") == {}


def test_release_after_partial_commit(inventory):
    inventory.reserve("A", "widget", 4)
    inventory.commit("A", "widget", 1)
    assert inventory.release("A", "widget") == 3
    assert inventory.reserved("widget") == 0
    assert inventory.on_hand("widget") == 9
    with pytest.raises(ReservationError):
        inventory.release("A", "widget", 1)


def test_release_order_gives_everything_back(inventory):
    inventory.reserve_all("A", {"widget": 4, "gadget": 2})
    inventory.reserve("B", "widget", 3)
    assert inventory.release_order("A") == {"gadget": 2, "widget": 4}
    assert inventory.reserved("widget") == 3
    assert inventory.available("widget") == 7
    assert inventory.available("gadget") == 5
    assert inventory.holds("A") == {}


def test_release_order_without_holds(inventory):
    assert inventory.release_order("nobody") == {}


def test_receive_and_snapshot():
    inv = Inventory()
    inv.receive("a", 3)
    inv.receive("a", 2)
    inv.reserve("X", "a", 1)
    assert inv.snapshot() == {"a": (5, 1, 4)}
    with pytest.raises(ValueError):
        inv.receive("a", 0)
