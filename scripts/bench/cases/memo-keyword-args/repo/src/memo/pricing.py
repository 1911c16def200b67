"""Price quotes in the customer's currency."""
from .memoize import memoize

RATES = {"USD": 1.0, "EUR": 0.9, "GBP": 0.8}
CATALOG = {"widget": 10.0, "gadget": 25.0}


@memoize
def quote(sku, currency="USD"):
    return round(CATALOG[sku] * RATES[currency], 2)
