"""Formatting of names and labels for invoices."""

ELLIPSIS = "…"


def truncate(text, width):
    """Shorten text to at most width characters, marking a cut with an ellipsis.

    Text that already fits is returned unchanged.
    """
    if len(text) >= width:
        return text[: width - 1] + ELLIPSIS
    return text


def initials(name):
    """'Ada Lovelace' -> 'AL'."""
    return "".join(part[0].upper() for part in name.split() if part)
