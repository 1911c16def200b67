"""Layered configuration: defaults, then per-tenant overrides."""

DEFAULTS = {
    "debug": False,
    "db": {"host": "localhost", "port": 5432, "pool": {"min": 1, "max": 10}},
    "cache": {"ttl": 300},
}


def merge(base, override):
    """Merge override into base; nested sections are merged key by key."""
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value
    return base


def load(overrides):
    """The configuration for one tenant."""
    return merge(dict(DEFAULTS), overrides)
