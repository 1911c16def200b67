from stockroom.items import Item, needs_reorder, reorder_report, total_units


def test_below_level_is_reordered():
    assert needs_reorder(Item("A", "Pens", quantity=2, reorder_level=5))


def test_well_stocked_is_not_reordered():
    assert not needs_reorder(Item("A", "Pens", quantity=50, reorder_level=5))


def test_report_is_sorted():
    items = [Item("Z", "z", 0, 3), Item("B", "b", 1, 3), Item("M", "m", 9, 3)]
    assert reorder_report(items) == ["B", "Z"]
    assert total_units(items) == 10
