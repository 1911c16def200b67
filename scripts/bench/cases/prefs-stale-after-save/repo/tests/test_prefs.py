import json

from prefs.loader import load
from prefs.store import get_value, save


def write(tmp_path, data):
    p = tmp_path / "settings.json"
    p.write_text(json.dumps(data), encoding="utf-8")
    return p


def test_load(tmp_path):
    assert load(write(tmp_path, {"theme": "light"})) == {"theme": "light"}


def test_load_returns_a_copy(tmp_path):
    p = write(tmp_path, {"theme": "light", "tabs": [1]})
    load(p)["tabs"].append(2)
    assert load(p) == {"theme": "light", "tabs": [1]}


def test_get_default(tmp_path):
    assert get_value(write(tmp_path, {}), "lang", "en") == "en"


def test_save_writes_json(tmp_path):
    p = tmp_path / "new.json"
    save(p, {"b": 1, "a": 2})
    assert json.loads(p.read_text()) == {"a": 2, "b": 1}
    assert not (tmp_path / "new.json.tmp").exists()
