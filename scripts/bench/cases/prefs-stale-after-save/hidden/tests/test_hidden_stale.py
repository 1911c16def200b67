import json

from prefs.loader import load
from prefs.store import get_value, save, set_value


def test_set_value_is_seen(tmp_path):
    p = tmp_path / "settings.json"
    p.write_text(json.dumps({"theme": "light"}), encoding="utf-8")
    assert get_value(p, "theme") == "light"
    set_value(p, "theme", "dark")
    assert get_value(p, "theme") == "dark"
    assert get_value(str(p), "theme") == "dark"


def test_save_is_seen(tmp_path):
    p = tmp_path / "settings.json"
    save(p, {"lang": "en"})
    assert load(p) == {"lang": "en"}
    save(p, {"lang": "de", "tz": "Europe/Berlin"})
    assert load(p) == {"lang": "de", "tz": "Europe/Berlin"}


def test_repeated_changes(tmp_path):
    p = tmp_path / "settings.json"
    save(p, {"n": 0})
    for i in range(1, 5):
        set_value(p, "n", get_value(p, "n") + 1)
    assert get_value(p, "n") == 4
