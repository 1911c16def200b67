"""Convert between the temperature scales our sensors report in."""

ABSOLUTE_ZERO_C = -273.15


def celsius_to_fahrenheit(c):
    return c * 9 / 5 + 32


def fahrenheit_to_celsius(f):
    return f - 32 * 5 / 9


def celsius_to_kelvin(c):
    if c < ABSOLUTE_ZERO_C:
        raise ValueError(f"{c} °C is below absolute zero")
    return c - ABSOLUTE_ZERO_C
