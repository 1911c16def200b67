from .merge import DEFAULTS, load, merge

__all__ = ["DEFAULTS", "load", "merge"]
