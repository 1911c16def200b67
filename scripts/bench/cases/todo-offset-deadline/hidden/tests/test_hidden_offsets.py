from datetime import datetime, timedelta, timezone

from todo.deadlines import is_overdue, parse_due, time_left


def test_offset_due_date_against_current_time():
    assert is_overdue(parse_due("2000-01-01T00:00:00+02:00"))
    assert not is_overdue(parse_due("2999-01-01T00:00:00-05:00"))
    assert time_left(parse_due("2000-01-01T00:00:00+05:00")) == timedelta(0)
    assert time_left(parse_due("2999-01-01T00:00:00+00:00")) > timedelta(days=300 * 365)


def test_naive_due_date_against_current_time():
    assert is_overdue(parse_due("2000-01-01T00:00:00"))
    assert not is_overdue(parse_due("2999-01-01T00:00:00"))


def test_offsets_are_compared_as_instants():
    due = parse_due("2024-05-01T17:00:00+02:00")  # 15:00 UTC
    assert is_overdue(due, now=datetime(2024, 5, 1, 16, tzinfo=timezone.utc))
    assert not is_overdue(due, now=datetime(2024, 5, 1, 14, tzinfo=timezone.utc))


def test_naive_now_is_utc():
    due = parse_due("2024-05-01T17:00:00+02:00")  # 15:00 UTC
    assert time_left(due, now=datetime(2024, 5, 1, 14)) == timedelta(hours=1)
