import copy

from confmerge import DEFAULTS, load


def test_tenants_do_not_leak():
    a = load({"db": {"host": "db-a", "pool": {"max": 50}}})
    b = load({})
    assert a["db"]["host"] == "db-a"
    assert b["db"]["host"] == "localhost"
    assert b["db"]["pool"] == {"min": 1, "max": 10}


def test_defaults_unchanged():
    before = copy.deepcopy(DEFAULTS)
    load({"db": {"port": 1}, "cache": {"ttl": 1}})
    assert DEFAULTS == before


def test_changing_a_result_changes_nothing_else():
    a = load({})
    a["db"]["pool"]["max"] = 99
    assert load({})["db"]["pool"]["max"] == 10

