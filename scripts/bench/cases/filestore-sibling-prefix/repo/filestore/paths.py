"""Resolve user-supplied paths inside the storage folder."""
import os


class UnsafePath(ValueError):
    """The requested path would leave the storage folder."""


def safe_join(root, *parts):
    """Join parts onto root, refusing anything that resolves outside root."""
    root = os.path.abspath(root)
    candidate = os.path.abspath(os.path.join(root, *parts))
    if not candidate.startswith(root):
        raise UnsafePath(os.path.join(*parts) if parts else root)
    return candidate


def read_file(root, relative):
    with open(safe_join(root, relative), "rb") as f:
        return f.read()
