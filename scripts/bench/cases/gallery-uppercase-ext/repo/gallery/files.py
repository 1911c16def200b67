"""Find the image files to import into the gallery."""
from pathlib import Path

IMAGE_EXTENSIONS = {".jpg", ".jpeg", ".png", ".gif", ".webp"}


def is_image(path):
    return Path(path).suffix in IMAGE_EXTENSIONS


def find_images(root):
    """Image files under root, recursively, sorted by path."""
    return sorted(p for p in Path(root).rglob("*") if p.is_file() and is_image(p))
