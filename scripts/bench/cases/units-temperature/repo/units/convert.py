"""Convert values between units of the same dimension."""
from .registry import lookup


class IncompatibleUnits(ValueError):
    pass


def convert(value, from_symbol, to_symbol):
    src, dst = lookup(from_symbol), lookup(to_symbol)
    if src.dimension != dst.dimension:
        raise IncompatibleUnits(f"cannot convert {src.dimension} to {dst.dimension}")
    return value * src.factor / dst.factor


def format_quantity(value, symbol, digits=2):
    return f"{round(value, digits):g} {symbol}"
