"""Tax rates and the table that maps tax categories to rates."""

from decimal import Decimal

from .money import ZERO, round_money, to_decimal

HUNDRED = Decimal(100)


class TaxRate:
    """A named percentage, e.g. ``TaxRate("VAT 20%", 20)``."""

    def __init__(self, name, percent):
        percent = to_decimal(percent)
        if percent < 0:
            raise ValueError("tax rates cannot be negative")
        self.name = name
        self.percent = percent

    def tax_on(self, net):
        """Tax for a net amount, rounded to cents."""
        if not self.percent:
            return ZERO
        return round_money(to_decimal(net) * self.percent / HUNDRED)

    def __eq__(self, other):
        return (isinstance(other, TaxRate) and self.name == other.name
                and self.percent == other.percent)

    def __hash__(self):
        return hash((self.name, self.percent))

    def __repr__(self):
        return f"TaxRate({self.name!r}, {self.percent})"


class TaxTable:
    """Maps a line's tax category (``"standard"``, ``"reduced"``...) to a rate."""

    def __init__(self, rates=None, default_category="standard"):
        self._rates = dict(rates or {})
        self.default_category = default_category

    def add(self, category, rate):
        if not isinstance(rate, TaxRate):
            raise TypeError("rate must be a TaxRate")
        self._rates[category] = rate
        return self

    def categories(self):
        return sorted(self._rates)

    def rate_for(self, category=None):
        category = category or self.default_category
        try:
            return self._rates[category]
        except KeyError:
            raise KeyError(f"unknown tax category {category!r}") from None

    def tax_on(self, net, category=None):
        return self.rate_for(category).tax_on(net)


def default_tax_table():
    """Standard 20 %, reduced 5.5 %, and a zero-rated ``exempt`` category."""
    return TaxTable({
        "standard": TaxRate("VAT 20%", 20),
        "reduced": TaxRate("VAT 5.5%", "5.5"),
        "exempt": TaxRate("Exempt", 0),
    })
