import pytest

from timeslots.intervals import free_slots, merge, total_covered


def test_merge_sorted():
    assert merge([(1, 3), (2, 6), (8, 10)]) == [(1, 6), (8, 10)]


def test_touching_merge():
    assert merge([(1, 3), (3, 5)]) == [(1, 5)]


def test_total():
    assert total_covered([(0, 30), (60, 90)]) == 60


def test_free_slots():
    assert free_slots([(9, 10), (12, 13)], 8, 17) == [(8, 9), (10, 12), (13, 17)]


def test_reversed_interval():
    with pytest.raises(ValueError):
        merge([(5, 1)])
