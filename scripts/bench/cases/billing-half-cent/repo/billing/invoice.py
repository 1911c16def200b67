"""Invoice lines and totals, in currency units rounded to the cent."""


def line_total(unit_price, quantity):
    return round(unit_price * quantity, 2)


def invoice_total(lines, tax_rate=0.0):
    """Sum of the rounded lines, plus tax, rounded to the cent.

    lines: iterable of (unit_price, quantity).
    """
    subtotal = sum(line_total(price, qty) for price, qty in lines)
    return round(subtotal * (1 + tax_rate), 2)
