from invoicing import Invoice, PercentDiscount


def test_render_contains_lines_and_totals():
    inv = Invoice("2024-007", "Jane Doe", notes="Thank you!")
    inv.add_line("Hosting (monthly)", 3, "19.99")
    inv.add_line("Support", 2, "45", discount=PercentDiscount(20))
    text = inv.render()
    lines = text.splitlines()
    assert lines[0] == "INVOICE 2024-007"
    assert lines[1] == "Customer: Jane Doe"
    assert any(l.startswith("Hosting (monthly)") and l.endswith("59.97") for l in lines)
    assert any(l.startswith("Support") and "-18.00" in l and l.endswith("72.00")
               for l in lines)
    assert any(l.startswith("Subtotal") and l.endswith("€131.97") for l in lines)
    assert any(l.startswith("  of which discounts") and l.endswith("-€18.00")
               for l in lines)
    assert any(l.startswith("VAT 20% on 131.97") and l.endswith("€26.39")
               for l in lines)
    assert any(l.startswith("TOTAL") and l.endswith("€158.36") for l in lines)
    assert lines[-1] == "Thank you!"


def test_render_width_and_credit_note():
    inv = Invoice("CN-2", "Jane Doe", currency="USD")
    inv.add_line("A very long description that will not fit in the column", -1, "10")
    text = inv.render(width=60)
    assert text.startswith("CREDIT NOTE CN-2")
    assert all(len(l) <= 60 for l in text.splitlines())
    assert "TOTAL" in text and "-$12.00" in text
