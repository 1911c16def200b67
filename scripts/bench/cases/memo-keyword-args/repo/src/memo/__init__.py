from .memoize import memoize

__all__ = ["memoize"]
