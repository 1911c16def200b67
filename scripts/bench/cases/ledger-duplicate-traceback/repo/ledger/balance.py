"""Account balances from a list of entries."""


def balance(entries):
    """Sum of the entries' amounts, in cents; refunds are negative amounts."""
    total = 0
    for entry in entries:
        total += entry["amount"]
    return total


def average_entry(entries):
    """The mean amount of the entries, in cents (0 for no entries)."""
    return balance(entries) // len(entries)
