from pricing.rules import bulk_discount, formatted, names, with_tax


def test_formatted():
    assert formatted(1230) == "12.30"


def test_names():
    assert "with_tax" in names()


def test_small_order():
    assert bulk_discount(100, 2) == 200


def test_tax_whole():
    assert with_tax(1000, 20) == 1200
