from memo import memoize
from memo.pricing import quote


def test_caches_positional_calls():
    calls = []

    @memoize
    def square(x):
        calls.append(x)
        return x * x

    assert square(3) == 9
    assert square(3) == 9
    assert calls == [3]


def test_quote_positional():
    assert quote("gadget", "GBP") == 20.0
    assert quote("gadget") == 25.0
