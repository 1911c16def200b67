from ledger import format_money, parse_money


def test_positive():
    assert format_money(1234.5) == "$1,234.50"


def test_other_symbol():
    assert format_money(3, "€") == "€3.00"


def test_parse():
    assert parse_money("-$1,234.50") == -1234.5
    assert parse_money("$3") == 3.0
