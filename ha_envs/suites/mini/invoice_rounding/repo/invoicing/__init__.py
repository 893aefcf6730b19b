"""invoicing: line items, taxes, discounts, totals and text reports."""

from .discounts import AmountDiscount, Discount, PercentDiscount
from .invoice import Invoice, LineTotals
from .items import LineItem
from .money import CENT, ZERO, format_money, round_money, to_decimal
from .report import render_invoice
from .tax import TaxRate, TaxTable, default_tax_table

__all__ = [
    "AmountDiscount",
    "Discount",
    "PercentDiscount",
    "Invoice",
    "LineTotals",
    "LineItem",
    "CENT",
    "ZERO",
    "format_money",
    "round_money",
    "to_decimal",
    "render_invoice",
    "TaxRate",
    "TaxTable",
    "default_tax_table",
]
