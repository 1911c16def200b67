"""The catalogue: books by ISBN."""

from .isbn import is_valid, normalize


class Catalogue:
    def __init__(self):
        self._books = {}

    def add(self, isbn, title):
        if not is_valid(isbn):
            raise ValueError("invalid ISBN: %r" % isbn)
        self._books[normalize(isbn)] = title

    def title(self, isbn):
        return self._books.get(normalize(isbn))

    def __len__(self):
        return len(self._books)
