import pytest

from units import convert


@pytest.mark.parametrize("value, src, dst, want", [
    (0, "C", "F", 32),
    (100, "C", "F", 212),
    (-40, "C", "F", -40),
    (212, "F", "C", 100),
    (32, "F", "K", 273.15),
    (100, "C", "K", 373.15),
    (0, "K", "C", -273.15),
    (0, "K", "F", -459.67),
    (98.6, "F", "C", 37),
])
def test_temperature(value, src, dst, want):
    assert convert(value, src, dst) == pytest.approx(want)


def test_round_trip():
    assert convert(convert(21.5, "C", "F"), "F", "C") == pytest.approx(21.5)


def test_other_dimensions_unchanged():
    assert convert(3, "ft", "m") == pytest.approx(0.9144)
    assert convert(2, "h", "s") == pytest.approx(7200)
