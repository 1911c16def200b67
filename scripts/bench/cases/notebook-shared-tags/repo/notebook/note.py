"""Notes with a title, a body and a set of lowercase tags."""


class Note:
    def __init__(self, title, body="", tags=[]):
        self.title = title
        self.body = body
        self.tags = tags

    def tag(self, name):
        """Add a tag (trimmed, lowercased); adding it twice keeps one copy."""
        name = name.strip().lower()
        if name and name not in self.tags:
            self.tags.append(name)
        return self

    def untag(self, name):
        name = name.strip().lower()
        if name in self.tags:
            self.tags.remove(name)
        return self

    def __repr__(self):
        return f"Note({self.title!r}, tags={self.tags!r})"
