import pytest

from sensors import moving_average


def test_too_few_readings():
    assert moving_average([1, 2], 3) == []


def test_bad_window():
    with pytest.raises(ValueError):
        moving_average([1, 2, 3], 0)
