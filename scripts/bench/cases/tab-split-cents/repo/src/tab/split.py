"""Share a restaurant bill between friends."""


def split_evenly(total, people):
    """Split `total` (dollars) between `people`; the shares add up to total."""
    if people < 1:
        raise ValueError("need at least one person")
    share = round(total / people, 2)
    return [share] * people


def split_by_weight(total, weights):
    """Split by weights (e.g. what each person ordered), to the cent."""
    if not weights or sum(weights) <= 0:
        raise ValueError("weights must add up to more than zero")
    whole = sum(weights)
    return [round(total * w / whole, 2) for w in weights]
