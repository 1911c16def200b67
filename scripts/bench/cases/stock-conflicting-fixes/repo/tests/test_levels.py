from stock.levels import reorder_needed


def test_plenty():
    assert not reorder_needed(50, 0, 10)
