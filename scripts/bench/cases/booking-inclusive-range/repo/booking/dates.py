"""Date arithmetic for bookings and the availability calendar."""
from datetime import timedelta


def nights(check_in, check_out):
    """Nights stayed between check-in and check-out."""
    if check_out <= check_in:
        raise ValueError("check-out must be after check-in")
    return (check_out - check_in).days


def days_between(start, end):
    """All days from start to end, both included."""
    if end < start:
        raise ValueError("end is before start")
    return [start + timedelta(days=i) for i in range((end - start).days)]
