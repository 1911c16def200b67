import pytest

from bookshelf.catalogue import Catalogue
from bookshelf.isbn import is_valid


def test_hyphenated_isbn13():
    assert is_valid("978-3-16-148410-0")


def test_isbn10_with_lowercase_x():
    assert is_valid("0-8044-2957-x")
    assert is_valid("080442957X")


def test_wrong_check_digit_still_rejected():
    assert not is_valid("978-3-16-148410-1")
    assert not is_valid("0-8044-2957-5")


def test_garbage_is_rejected_not_a_crash():
    assert not is_valid("12345abcde")


def test_catalogue_finds_either_spelling():
    shelf = Catalogue()
    shelf.add("978-3-16-148410-0", "Example")
    assert shelf.title("9783161484100") == "Example"
    with pytest.raises(ValueError):
        shelf.add("0-8044-2957-5", "Nope")
