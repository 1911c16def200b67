import pytest

from calc import evaluate, tokenize


def test_tokens():
    assert tokenize("12+(3)") == [("NUM", 12), ("OP", "+"), ("OP", "("), ("NUM", 3), ("OP", ")")]


def test_precedence():
    assert evaluate("2 + 3 * 4") == 14
    assert evaluate("(2 + 3) * 4") == 20
    assert evaluate("10 - 4 - 3") == 3


def test_bad_character():
    with pytest.raises(SyntaxError):
        tokenize("2 $ 3")
