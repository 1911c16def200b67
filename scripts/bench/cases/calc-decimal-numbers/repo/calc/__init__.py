from .evaluate import evaluate
from .lexer import tokenize

__all__ = ["evaluate", "tokenize"]
