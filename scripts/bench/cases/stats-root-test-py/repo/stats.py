"""Small statistics for the dashboard tiles."""


def mean(values):
    """Arithmetic mean of values."""
    return sum(values) / len(values)


def spread(values):
    """Largest minus smallest value; 0 for no values."""
    if not values:
        return 0
    return max(values) - min(values)
