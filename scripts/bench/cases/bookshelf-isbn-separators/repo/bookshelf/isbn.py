"""ISBN-10 and ISBN-13 numbers."""


def normalize(isbn):
    """The ISBN's digits (and a final X), without separators."""
    return isbn.strip().replace(" ", "")


def is_valid(isbn):
    """Whether isbn is an ISBN-10 or ISBN-13 with a correct check digit."""
    digits = normalize(isbn)
    if len(digits) == 10:
        total = sum((10 - i) * (10 if c == "X" else int(c)) for i, c in enumerate(digits))
        return total % 11 == 0
    if len(digits) == 13 and digits.isdigit():
        total = sum((1 if i % 2 == 0 else 3) * int(c) for i, c in enumerate(digits))
        return total % 10 == 0
    return False
