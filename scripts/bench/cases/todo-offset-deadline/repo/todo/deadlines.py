"""Due dates: parsing, overdue checks and time left."""
from datetime import datetime, timedelta


def parse_due(text):
    """Parse an ISO 8601 due date, e.g. '2024-05-01T17:00:00+02:00'.

    Dates without an offset come from the old web form and are in UTC.
    """
    return datetime.fromisoformat(text)


def is_overdue(due, now=None):
    now = now or datetime.now()
    return due < now


def time_left(due, now=None):
    now = now or datetime.now()
    return max(due - now, timedelta(0))
