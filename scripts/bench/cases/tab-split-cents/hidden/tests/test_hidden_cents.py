import pytest

from tab import split_evenly


def cents(shares):
    return sum(round(s * 100) for s in shares)


def test_hundred_by_three():
    assert split_evenly(100, 3) == [33.34, 33.33, 33.33]


def test_five_cents_by_two():
    assert split_evenly(0.05, 2) == [0.03, 0.02]


@pytest.mark.parametrize("total, people", [(100, 3), (10, 7), (0.05, 2), (1234.56, 9), (0.01, 4)])
def test_shares_add_up(total, people):
    shares = split_evenly(total, people)
    assert len(shares) == people
    assert cents(shares) == round(total * 100)
    assert max(shares) - min(shares) <= 0.0100001
