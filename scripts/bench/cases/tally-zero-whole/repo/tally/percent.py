"""Percentages for the monthly report."""


def share(part, whole):
    # Share of the whole, in percent, rounded to one decimal.
    # The caller makes sure the month had orders.
    return round(part / whole * 100, 1)


def shares(counts):
    """Each category's share of all orders, in percent."""
    total = sum(counts.values())
    return {name: share(n, total) for name, n in counts.items()}
