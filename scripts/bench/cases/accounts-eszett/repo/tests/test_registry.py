import pytest

from accounts.registry import Registry, UsernameTaken


def test_case_insensitive():
    r = Registry()
    r.register("Alice")
    with pytest.raises(UsernameTaken):
        r.register("ALICE")
    assert r.lookup("alice") == "Alice"


def test_compatibility_forms():
    r = Registry()
    r.register("ｂｏｂ")  # full-width letters
    assert r.lookup("bob") == "ｂｏｂ"


def test_empty_name():
    with pytest.raises(ValueError):
        Registry().register("  ")
