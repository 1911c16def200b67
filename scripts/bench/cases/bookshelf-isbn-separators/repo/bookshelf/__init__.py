"""A home library catalogue."""

__version__ = "1.4.0"
