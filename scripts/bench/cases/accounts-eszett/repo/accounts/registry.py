"""Register users under case-insensitive, Unicode-normalised names."""
import unicodedata


class UsernameTaken(Exception):
    pass


def normalize(name):
    """The key a username is stored under: compatibility form, no case."""
    return unicodedata.normalize("NFKC", name).strip().lower()


class Registry:
    def __init__(self):
        self._users = {}

    def register(self, name):
        if not name.strip():
            raise ValueError("username is empty")
        key = normalize(name)
        if key in self._users:
            raise UsernameTaken(name)
        self._users[key] = name
        return key

    def lookup(self, name):
        """The name as first registered, or None."""
        return self._users.get(normalize(name))
