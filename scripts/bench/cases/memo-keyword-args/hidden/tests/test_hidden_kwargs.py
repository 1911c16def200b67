from memo import memoize
from memo.pricing import quote


def test_keyword_currency():
    quote.cache_clear()
    assert quote("widget") == 10.0
    assert quote("widget", currency="EUR") == 9.0
    assert quote("widget", currency="GBP") == 8.0


def test_keyword_calls_are_cached_separately():
    calls = []

    @memoize
    def area(w, h=1, unit="m"):
        calls.append((w, h, unit))
        return f"{w * h} {unit}2"

    assert area(2, h=3) == "6 m2"
    assert area(2, h=4) == "8 m2"
    assert area(2, h=3, unit="cm") == "6 cm2"
    assert area(2, h=3) == "6 m2"
    assert area(2, h=3, unit="cm") == "6 cm2"
    assert len(calls) == 3
