"""A tiny key = value config reader."""

from ._parser import loads

__all__ = ["loads"]
