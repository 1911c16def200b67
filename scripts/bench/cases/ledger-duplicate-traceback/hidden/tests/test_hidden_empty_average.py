from ledger.balance import average_entry


def test_empty_average_is_zero():
    assert average_entry([]) == 0


def test_average_unchanged():
    assert average_entry([{"amount": 10}, {"amount": 20}, {"amount": 31}]) == 20
