"""The units we know, each as a factor to its dimension's base unit."""
from dataclasses import dataclass


class UnknownUnit(KeyError):
    pass


@dataclass(frozen=True)
class Unit:
    symbol: str
    dimension: str
    factor: float  # value in base units = value * factor


_UNITS = [
    Unit("m", "length", 1.0),
    Unit("km", "length", 1000.0),
    Unit("cm", "length", 0.01),
    Unit("mm", "length", 0.001),
    Unit("in", "length", 0.0254),
    Unit("ft", "length", 0.3048),
    Unit("mi", "length", 1609.344),
    Unit("kg", "mass", 1.0),
    Unit("g", "mass", 0.001),
    Unit("lb", "mass", 0.45359237),
    Unit("s", "time", 1.0),
    Unit("min", "time", 60.0),
    Unit("h", "time", 3600.0),
    Unit("K", "temperature", 1.0),
    Unit("C", "temperature", 1.0),
    Unit("F", "temperature", 5 / 9),
]
UNITS = {u.symbol: u for u in _UNITS}


def lookup(symbol):
    try:
        return UNITS[symbol]
    except KeyError:
        raise UnknownUnit(symbol) from None
