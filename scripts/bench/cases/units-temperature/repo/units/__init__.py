from .convert import IncompatibleUnits, convert, format_quantity
from .registry import UnknownUnit, lookup

__all__ = ["IncompatibleUnits", "UnknownUnit", "convert", "format_quantity", "lookup"]
