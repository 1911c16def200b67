import pytest

from accounts.registry import Registry, UsernameTaken


def test_eszett_equals_double_s():
    r = Registry()
    r.register("Straße")
    with pytest.raises(UsernameTaken):
        r.register("STRASSE")
    assert r.lookup("strasse") == "Straße"


def test_lookup_with_capital_sharp_s():
    r = Registry()
    r.register("grüß")
    assert r.lookup("GRÜSS") == "grüß"
