import pytest

from tab import split_by_weight, split_evenly


def test_even_split():
    assert split_evenly(90, 3) == [30.0, 30.0, 30.0]


def test_single_person_pays_all():
    assert split_evenly(12.34, 1) == [12.34]


def test_nobody_to_pay():
    with pytest.raises(ValueError):
        split_evenly(10, 0)


def test_by_weight():
    assert split_by_weight(30, [1, 2]) == [10.0, 20.0]
