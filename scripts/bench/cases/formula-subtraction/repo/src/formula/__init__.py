from .parser import Parser, evaluate

__all__ = ["Parser", "evaluate"]
