"""Reading and smoothing sensor data."""

from .smoothing import moving_average
from .units import celsius_to_fahrenheit

__all__ = ["moving_average", "celsius_to_fahrenheit"]
