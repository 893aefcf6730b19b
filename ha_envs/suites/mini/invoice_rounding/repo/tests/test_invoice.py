from decimal import Decimal

import pytest

from invoicing import AmountDiscount, Invoice, LineItem, PercentDiscount


def make_invoice():
    inv = Invoice("2024-001", "ACME Ltd")
    inv.add(LineItem("Consulting", quantity="1.5", unit_price="120.00"))
    inv.add(LineItem("Books", quantity=2, unit_price="12.50",
                     tax_category="reduced", discount=PercentDiscount(10)))
    inv.add_line("Postage", 1, "4.90", tax_category="exempt")
    return inv


def test_line_amounts():
    item = LineItem("Widget", 3, "19.99", discount=AmountDiscount("2"))
    assert item.gross_amount() == Decimal("59.97")
    assert item.discount_amount() == Decimal("2.00")
    assert item.net_amount() == Decimal("57.97")


def test_line_needs_description():
    with pytest.raises(ValueError):
        LineItem("  ", 1, 1)


def test_line_totals():
    totals = make_invoice().line_totals()
    assert [t.net for t in totals] == [Decimal("180.00"), Decimal("22.50"),
                                       Decimal("4.90")]
    assert [t.tax for t in totals] == [Decimal("36.00"), Decimal("1.24"),
                                       Decimal("0")]
    assert totals[1].as_dict()["discount"] == Decimal("2.50")


def test_invoice_totals():
    inv = make_invoice()
    assert inv.gross_total == Decimal("209.90")
    assert inv.discount_total == Decimal("2.50")
    assert inv.subtotal == Decimal("207.40")
    assert inv.tax_total == Decimal("37.24")
    assert inv.total == Decimal("244.64")


def test_tax_summary():
    summary = make_invoice().tax_summary()
    assert list(summary) == ["VAT 20%", "VAT 5.5%", "Exempt"]
    assert summary["VAT 5.5%"] == (Decimal("22.50"), Decimal("1.24"))


def test_remove_and_credit_note():
    inv = make_invoice()
    assert inv.remove("Books") == 1
    assert inv.total == Decimal("220.90")
    credit = Invoice("CN-1", "ACME Ltd")
    credit.add_line("Refund", -1, "50")
    assert credit.total == Decimal("-60.00")
    assert credit.is_credit_note()


def test_add_rejects_non_items():
    with pytest.raises(TypeError):
        Invoice("x", "y").add(("a", 1, 2))
