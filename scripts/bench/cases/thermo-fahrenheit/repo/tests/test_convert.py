import pytest

from thermo.convert import celsius_to_fahrenheit, celsius_to_kelvin


def test_celsius_to_fahrenheit():
    assert celsius_to_fahrenheit(100) == 212
    assert celsius_to_fahrenheit(-40) == -40


def test_celsius_to_kelvin():
    assert celsius_to_kelvin(0) == pytest.approx(273.15)


def test_below_absolute_zero():
    with pytest.raises(ValueError):
        celsius_to_kelvin(-300)
