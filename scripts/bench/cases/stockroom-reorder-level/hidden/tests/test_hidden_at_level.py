from stockroom.items import Item, needs_reorder, reorder_report


def test_item_at_level_is_reordered():
    assert needs_reorder(Item("P-10", "Printer paper", quantity=10, reorder_level=10))


def test_report_includes_item_at_level():
    items = [Item("P-10", "Printer paper", 10, 10), Item("T-1", "Toner", 11, 10)]
    assert reorder_report(items) == ["P-10"]
