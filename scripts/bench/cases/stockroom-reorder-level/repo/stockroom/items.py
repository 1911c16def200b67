"""Stock items and the weekly reorder report."""
from dataclasses import dataclass


@dataclass
class Item:
    sku: str
    name: str
    quantity: int
    reorder_level: int = 0


def needs_reorder(item):
    """True when the item is at or below its reorder level."""
    return item.quantity < item.reorder_level


def reorder_report(items):
    """SKUs to reorder, sorted."""
    return sorted(i.sku for i in items if needs_reorder(i))


def total_units(items):
    return sum(i.quantity for i in items)
