"""Price rules of the shop, in cents."""


def with_tax(cents, rate_percent):
    """The price with tax added, rounded to the nearest cent (half a cent up)."""
    return cents + cents * rate_percent // 100


def formatted(cents):
    """A price as the shop prints it: 12.30."""
    return f"{cents // 100}.{cents % 100:02d}"


def names():
    """The rules this module offers."""
    return ["with_tax", "bulk_discount", "formatted"]


def bulk_discount(cents, quantity):
    """The total for quantity items: 10% off from 10 items on."""
    total = cents * quantity
    if quantity > 10:
        total -= total // 10
    return total
