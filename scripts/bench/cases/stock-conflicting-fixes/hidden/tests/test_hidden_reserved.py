from stock.levels import reorder_needed


def test_reserved_counted():
    assert reorder_needed(12, 5, 10)


def test_free_above_minimum():
    assert not reorder_needed(30, 5, 10)
