import pytest

from pager import Paginator, page_count


def test_exact_multiple():
    assert page_count(40, 20) == 2


def test_second_page():
    p = Paginator(range(40), per_page=20)
    assert p.page(2) == list(range(20, 40))


def test_page_zero_is_out_of_range():
    with pytest.raises(IndexError):
        Paginator(range(10), per_page=5).page(0)


def test_per_page_must_be_positive():
    with pytest.raises(ValueError):
        page_count(10, 0)
