"""Change settings and write them back atomically."""
import json
import os

from .loader import load


def save(path, settings):
    path = str(path)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(settings, f, indent=2, sort_keys=True)
    os.replace(tmp, path)


def get_value(path, key, default=None):
    return load(path).get(key, default)


def set_value(path, key, value):
    settings = load(path)
    settings[key] = value
    save(path, settings)
    return settings
