"""Summary figures for the monthly dashboard."""


def total(values):
    """Sum of the amounts, in cents."""
    return sum(values)


def average(values):
    """Arithmetic mean of the amounts; an empty list has an average of 0.0."""
    return sum(values) / len(values)


def largest(values):
    """The largest amount, or None when there is none."""
    return max(values, default=None)
