from billing.invoice import invoice_total, line_total


def test_line_total():
    assert line_total(19.99, 3) == 59.97


def test_invoice_total_with_tax():
    assert invoice_total([(19.99, 3)], tax_rate=0.2) == 71.96


def test_empty_invoice():
    assert invoice_total([]) == 0
