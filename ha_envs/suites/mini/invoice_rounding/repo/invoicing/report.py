"""Plain-text rendering of an invoice."""

from .money import format_money


def _row(left, right, width):
    space = max(1, width - len(left) - len(right))
    return f"{left}{' ' * space}{right}"


def _truncate(text, length):
    return text if len(text) <= length else text[:length - 1] + "…"


def render_invoice(invoice, width=72):
    """Return the invoice as a block of text ``width`` characters wide."""
    cur = invoice.currency
    title = "CREDIT NOTE" if invoice.is_credit_note() else "INVOICE"
    out = [
        f"{title} {invoice.number}",
        f"Customer: {invoice.customer}",
        "=" * width,
    ]
    desc_width = max(10, width - 44)
    header = (f"{'Description':<{desc_width}} {'Qty':>8} {'Unit':>10} "
              f"{'Disc':>10} {'Net':>11}")
    out.append(header)
    out.append("-" * width)
    for t in invoice.line_totals():
        qty = t.item.quantity.normalize()
        qty_text = f"{qty:f}"
        disc = format_money(-t.discount) if t.discount else ""
        out.append(
            f"{_truncate(t.item.description, desc_width):<{desc_width}} "
            f"{qty_text:>8} {format_money(t.item.unit_price):>10} "
            f"{disc:>10} {format_money(t.net):>11}"
        )
    out.append("-" * width)
    out.append(_row("Subtotal", format_money(invoice.subtotal, cur), width))
    if invoice.discount_total:
        out.append(_row("  of which discounts",
                        format_money(-invoice.discount_total, cur), width))
    for name, (net, tax) in invoice.tax_summary().items():
        label = f"{name} on {format_money(net)}"
        out.append(_row(label, format_money(tax, cur), width))
    out.append("=" * width)
    out.append(_row("TOTAL", format_money(invoice.total, cur), width))
    if invoice.notes:
        out.append("")
        out.extend(invoice.notes.splitlines())
    return "\n".join(out) + "\n"
