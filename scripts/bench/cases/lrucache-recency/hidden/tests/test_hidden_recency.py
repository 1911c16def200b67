from lrucache import LRUCache


def test_get_counts_as_use():
    c = LRUCache(2)
    c.put("profile", 1)
    c.put("banner", 2)
    assert c.get("profile") == 1
    c.put("footer", 3)
    assert "profile" in c
    assert "banner" not in c


def test_miss_does_not_change_order():
    c = LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    c.get("zzz")
    c.put("c", 3)
    assert "a" not in c
    assert "b" in c and "c" in c
