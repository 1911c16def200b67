from tally.percent import share, shares


def test_share_of_nothing():
    assert share(0, 0) == 0.0


def test_month_without_orders():
    assert shares({"books": 0, "games": 0}) == {"books": 0.0, "games": 0.0}


def test_other_shares_unchanged():
    assert share(1, 4) == 25.0
    assert share(1, 3) == 33.3
