"""The invoice: lines, per-line totals, invoice totals and tax summary."""

from collections import OrderedDict

from .items import LineItem
from .money import ZERO, sum_money
from .tax import default_tax_table


class LineTotals:
    """Rounded figures of one line."""

    __slots__ = ("item", "gross", "discount", "net", "tax", "total", "rate")

    def __init__(self, item, gross, discount, net, tax, rate):
        self.item = item
        self.gross = gross
        self.discount = discount
        self.net = net
        self.tax = tax
        self.total = net + tax
        self.rate = rate

    def as_dict(self):
        return {
            "description": self.item.description,
            "gross": self.gross,
            "discount": self.discount,
            "net": self.net,
            "tax": self.tax,
            "total": self.total,
            "rate": self.rate.name,
        }


class Invoice:
    """An invoice made of :class:`LineItem` objects.

    Each line is rounded on its own; the invoice totals are sums of the
    rounded line figures.
    """

    def __init__(self, number, customer, *, currency="EUR", tax_table=None,
                 notes=""):
        self.number = number
        self.customer = customer
        self.currency = currency
        self.tax_table = tax_table or default_tax_table()
        self.notes = notes
        self.lines = []

    def add(self, item):
        if not isinstance(item, LineItem):
            raise TypeError("expected a LineItem")
        self.lines.append(item)
        return self

    def add_line(self, description, quantity, unit_price, **kwargs):
        return self.add(LineItem(description, quantity, unit_price, **kwargs))

    def remove(self, description):
        before = len(self.lines)
        self.lines = [line for line in self.lines
                      if line.description != description]
        return before - len(self.lines)

    def line_totals(self):
        result = []
        for item in self.lines:
            rate = self.tax_table.rate_for(item.tax_category)
            gross = item.gross_amount()
            discount = item.discount_amount()
            net = gross - discount
            tax = rate.tax_on(net)
            result.append(LineTotals(item, gross, discount, net, tax, rate))
        return result

    @property
    def gross_total(self):
        return sum_money(t.gross for t in self.line_totals())

    @property
    def discount_total(self):
        return sum_money(t.discount for t in self.line_totals())

    @property
    def subtotal(self):
        """Sum of net line amounts (after discounts, before tax)."""
        return sum_money(t.net for t in self.line_totals())

    @property
    def tax_total(self):
        return sum_money(t.tax for t in self.line_totals())

    @property
    def total(self):
        return self.subtotal + self.tax_total

    def tax_summary(self):
        """``OrderedDict(rate name -> (taxable net, tax))`` in first-seen order."""
        summary = OrderedDict()
        for totals in self.line_totals():
            net, tax = summary.get(totals.rate.name, (ZERO, ZERO))
            summary[totals.rate.name] = (net + totals.net, tax + totals.tax)
        return summary

    def is_credit_note(self):
        return self.total < 0

    def render(self, width=72):
        from .report import render_invoice
        return render_invoice(self, width=width)
