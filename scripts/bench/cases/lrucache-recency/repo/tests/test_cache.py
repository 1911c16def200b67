import pytest

from lrucache import LRUCache


def test_evicts_oldest_insert():
    c = LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    c.put("c", 3)
    assert "a" not in c
    assert len(c) == 2


def test_put_refreshes_recency():
    c = LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    c.put("a", 10)
    c.put("c", 3)
    assert "b" not in c
    assert c.get("a") == 10


def test_counters():
    c = LRUCache(1)
    c.put("a", 1)
    c.get("a")
    c.get("zz")
    assert (c.hits, c.misses) == (1, 1)


def test_capacity_positive():
    with pytest.raises(ValueError):
        LRUCache(0)
