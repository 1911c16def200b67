import pytest

from billing.invoice import invoice_total, line_total


@pytest.mark.parametrize("price, qty, want", [
    (2.675, 1, 2.68), (0.125, 1, 0.13), (1.005, 1, 1.01), (0.335, 3, 1.01), (2.5, 2, 5.0),
])
def test_half_cent_rounds_up(price, qty, want):
    assert line_total(price, qty) == want


def test_total_with_tax_rounds_half_up():
    # 0.25 * 1.1 = 0.275 -> 0.28
    assert invoice_total([(0.25, 1)], tax_rate=0.1) == 0.28


def test_total_of_half_cent_lines():
    assert invoice_total([(2.675, 1), (0.125, 1)]) == 2.81
