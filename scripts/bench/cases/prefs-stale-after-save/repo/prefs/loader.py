"""Read settings files, keeping parsed files in memory (we read them per request)."""
import copy
import functools
import json


@functools.lru_cache(maxsize=64)
def _read(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def load(path):
    """The settings stored at path, as a fresh dict the caller may change."""
    return copy.deepcopy(_read(str(path)))
