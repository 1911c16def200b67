from pager import Paginator, page_count


def test_partial_last_page_is_counted():
    assert page_count(41, 20) == 3
    assert page_count(45, 20) == 3


def test_partial_last_page_is_reachable():
    p = Paginator(range(45), per_page=20)
    assert p.pages == 3
    assert p.page(3) == [40, 41, 42, 43, 44]


def test_exact_and_empty():
    assert page_count(40, 20) == 2
    assert page_count(0, 20) == 0
    assert page_count(1, 20) == 1
