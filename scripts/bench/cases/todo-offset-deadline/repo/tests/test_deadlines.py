from datetime import datetime, timedelta

from todo.deadlines import is_overdue, parse_due, time_left


def test_parse_naive():
    assert parse_due("2024-05-01T17:00:00") == datetime(2024, 5, 1, 17)


def test_overdue_naive():
    now = datetime(2024, 5, 2)
    assert is_overdue(datetime(2024, 5, 1), now=now)
    assert not is_overdue(datetime(2024, 5, 3), now=now)


def test_time_left_naive():
    now = datetime(2024, 5, 1, 12)
    assert time_left(datetime(2024, 5, 1, 14), now=now) == timedelta(hours=2)
    assert time_left(datetime(2024, 5, 1, 10), now=now) == timedelta(0)
