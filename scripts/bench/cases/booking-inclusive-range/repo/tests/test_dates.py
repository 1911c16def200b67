from datetime import date

import pytest

from booking.dates import days_between, nights


def test_nights():
    assert nights(date(2024, 3, 1), date(2024, 3, 4)) == 3


def test_nights_needs_a_later_check_out():
    with pytest.raises(ValueError):
        nights(date(2024, 3, 4), date(2024, 3, 4))


def test_days_between_rejects_reversed_range():
    with pytest.raises(ValueError):
        days_between(date(2024, 3, 4), date(2024, 3, 1))
