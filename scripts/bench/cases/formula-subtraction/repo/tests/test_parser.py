import pytest

from formula import evaluate


def test_precedence():
    assert evaluate("=2 + 3 * 4") == 14


def test_parentheses():
    assert evaluate("(1 + 2) * 3") == 9


def test_division_chain():
    assert evaluate("8 / 2 / 2") == 2


def test_addition_chain():
    assert evaluate("1 + 2 + 3") == 6


def test_unary_minus():
    assert evaluate("-3 * 2") == -6


def test_garbage():
    with pytest.raises(SyntaxError):
        evaluate("2 +")
