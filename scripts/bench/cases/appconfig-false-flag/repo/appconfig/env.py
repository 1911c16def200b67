"""Typed access to environment variables, with defaults."""
import os


def _env(environ):
    return os.environ if environ is None else environ


def get_str(name, default=None, environ=None):
    return _env(environ).get(name, default)


def get_int(name, default=0, environ=None):
    value = _env(environ).get(name)
    if value is None or value.strip() == "":
        return default
    return int(value)


def get_bool(name, default=False, environ=None):
    value = _env(environ).get(name)
    if value is None:
        return default
    return bool(value)
