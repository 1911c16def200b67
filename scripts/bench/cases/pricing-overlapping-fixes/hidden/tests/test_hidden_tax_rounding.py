from pricing.rules import with_tax


def test_half_cent_rounds_up():
    assert with_tax(105, 10) == 116


def test_below_half_rounds_down():
    assert with_tax(104, 10) == 114


def test_whole():
    assert with_tax(1000, 20) == 1200
