"""Cache a pure function's results in memory."""
import functools


def memoize(fn):
    """Remember fn's result for each distinct call."""
    cache = {}

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        key = args
        if key not in cache:
            cache[key] = fn(*args, **kwargs)
        return cache[key]

    wrapper.cache = cache
    wrapper.cache_clear = cache.clear
    return wrapper
