import pytest

from calc import evaluate, tokenize


def test_decimal_token():
    assert tokenize("1.5 + 2") == [("NUM", 1.5), ("OP", "+"), ("NUM", 2)]


def test_decimal_arithmetic():
    assert evaluate("1.5 + 2") == 3.5
    assert evaluate("0.25 * 4") == 1.0
    assert evaluate("10.75 - 0.75") == 10.0


def test_integers_stay_integers():
    assert tokenize("42") == [("NUM", 42)]
    assert isinstance(tokenize("42")[0][1], int)


def test_not_a_number():
    with pytest.raises(SyntaxError):
        evaluate("1.2.3")
