from ledger import format_money, parse_money


def test_negative_sign_comes_first():
    assert format_money(-5.5) == "-$5.50"
    assert format_money(-1234.5, "€") == "-€1,234.50"


def test_zero_and_positive_unchanged():
    assert format_money(0) == "$0.00"
    assert format_money(12) == "$12.00"


def test_round_trip():
    assert parse_money(format_money(-42.25)) == -42.25
