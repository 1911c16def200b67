import pytest

from bookshelf.catalogue import Catalogue


def test_add_and_look_up():
    shelf = Catalogue()
    shelf.add("9783161484100", "Example")
    assert shelf.title("9783161484100") == "Example"


def test_rejects_invalid():
    with pytest.raises(ValueError):
        Catalogue().add("12345", "Nope")
