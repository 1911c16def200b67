from tally.percent import share, shares


def test_quarter():
    assert share(1, 4) == 25.0


def test_shares():
    assert shares({"books": 3, "games": 1}) == {"books": 75.0, "games": 25.0}
