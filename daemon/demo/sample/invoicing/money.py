"""Prices are integers in cents; never floats."""


def format_cents(cents):
    """1995 -> '19.95'."""
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return f"{sign}{cents // 100}.{cents % 100:02d}"


def apply_discount(cents, percent):
    """Price after a percentage discount, rounded half up to a whole cent."""
    return cents * (100 - percent) // 100
