from .retry import RetryError, retry

__all__ = ["RetryError", "retry"]
