from datetime import date

from booking.dates import days_between


def test_range_includes_last_day():
    assert days_between(date(2024, 3, 1), date(2024, 3, 3)) == [
        date(2024, 3, 1), date(2024, 3, 2), date(2024, 3, 3)]


def test_single_day():
    assert days_between(date(2024, 2, 29), date(2024, 2, 29)) == [date(2024, 2, 29)]


def test_across_month_end():
    days = days_between(date(2024, 1, 30), date(2024, 2, 2))
    assert len(days) == 4
    assert days[-1] == date(2024, 2, 2)
