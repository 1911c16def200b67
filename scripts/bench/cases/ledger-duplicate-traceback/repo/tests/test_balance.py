from ledger.balance import average_entry, balance


def test_balance():
    assert balance([{"amount": 100}, {"amount": -40}]) == 60


def test_average():
    assert average_entry([{"amount": 100}, {"amount": 50}]) == 75
