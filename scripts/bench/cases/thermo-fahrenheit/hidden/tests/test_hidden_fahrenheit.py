import pytest

from thermo.convert import celsius_to_fahrenheit, fahrenheit_to_celsius


@pytest.mark.parametrize("f, c", [(212, 100), (32, 0), (98.6, 37), (-40, -40)])
def test_fahrenheit_to_celsius(f, c):
    assert fahrenheit_to_celsius(f) == pytest.approx(c)


def test_round_trip():
    assert fahrenheit_to_celsius(celsius_to_fahrenheit(21.5)) == pytest.approx(21.5)
