from decimal import Decimal

import pytest

from invoicing import AmountDiscount, PercentDiscount, TaxRate, TaxTable, default_tax_table


def test_default_table():
    table = default_tax_table()
    assert table.categories() == ["exempt", "reduced", "standard"]
    assert table.rate_for(None).percent == Decimal("20")
    assert table.tax_on("100") == Decimal("20.00")
    assert table.tax_on("40", "reduced") == Decimal("2.20")
    assert table.tax_on("40", "exempt") == Decimal("0")


def test_tax_is_rounded_to_cents():
    assert TaxRate("VAT", 20).tax_on("59.97") == Decimal("11.99")
    assert TaxRate("VAT", "5.5").tax_on("22.50") == Decimal("1.24")


def test_unknown_category():
    with pytest.raises(KeyError):
        default_tax_table().rate_for("luxury")


def test_invalid_rates():
    with pytest.raises(ValueError):
        TaxRate("bad", -1)
    with pytest.raises(TypeError):
        TaxTable().add("x", 20)


def test_percent_discount():
    assert PercentDiscount(10).amount_off("25.00") == Decimal("2.50")
    assert PercentDiscount("12.5").amount_off("80") == Decimal("10.00")
    assert PercentDiscount(15).describe() == "-15%"
    with pytest.raises(ValueError):
        PercentDiscount(120)


def test_amount_discount_is_capped():
    assert AmountDiscount(5).amount_off("20") == Decimal("5.00")
    assert AmountDiscount(50).amount_off("20") == Decimal("20.00")
    assert AmountDiscount(5).amount_off("-3") == Decimal("0")
    with pytest.raises(ValueError):
        AmountDiscount(-1)
