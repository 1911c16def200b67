import pytest

from units import IncompatibleUnits, UnknownUnit, convert, format_quantity


def test_length():
    assert convert(3, "ft", "m") == pytest.approx(0.9144)
    assert convert(1, "mi", "km") == pytest.approx(1.609344)


def test_mass_and_time():
    assert convert(1, "lb", "g") == pytest.approx(453.59237)
    assert convert(90, "min", "h") == pytest.approx(1.5)


def test_incompatible():
    with pytest.raises(IncompatibleUnits):
        convert(1, "m", "kg")


def test_unknown():
    with pytest.raises(UnknownUnit):
        convert(1, "parsec", "m")


def test_same_unit_is_identity():
    assert convert(21.5, "C", "C") == pytest.approx(21.5)


def test_format():
    assert format_quantity(0.91440, "m") == "0.91 m"
