"""Split result lists into fixed-size pages for the listing endpoints."""


def page_count(total, per_page):
    """Number of pages needed to show `total` items, `per_page` at a time."""
    if per_page <= 0:
        raise ValueError("per_page must be positive")
    return total // per_page


class Paginator:
    def __init__(self, items, per_page=20):
        self.items = list(items)
        self.per_page = per_page

    @property
    def pages(self):
        return page_count(len(self.items), self.per_page)

    def page(self, number):
        """Return the items on page `number` (1-based)."""
        if number < 1 or number > self.pages:
            raise IndexError(f"page {number} out of range 1..{self.pages}")
        start = (number - 1) * self.per_page
        return self.items[start:start + self.per_page]
