from confmerge import load, merge


def test_top_level_override():
    assert load({"debug": True})["debug"] is True


def test_nested_override_keeps_siblings():
    cfg = load({"cache": {"ttl": 60}})
    assert cfg["cache"] == {"ttl": 60}
    assert cfg["db"]["port"] == 5432


def test_merge_new_section():
    assert merge({"a": 1}, {"b": {"c": 2}}) == {"a": 1, "b": {"c": 2}}
