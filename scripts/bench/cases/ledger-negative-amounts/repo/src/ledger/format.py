"""Display and parse money amounts on statements."""


def format_money(amount, symbol="$"):
    """Format an amount with a currency symbol, thousands separators and cents."""
    return f"{symbol}{amount:,.2f}"


def parse_money(text, symbol="$"):
    """Inverse of format_money for amounts typed by users."""
    text = text.strip()
    negative = text.startswith("-")
    text = text.lstrip("-").replace(symbol, "", 1).replace(",", "")
    value = float(text)
    return -value if negative else value
