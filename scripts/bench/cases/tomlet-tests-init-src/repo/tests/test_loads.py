from . import toml_impl


def test_pairs():
    assert toml_impl.loads('a = 1\nb = "two"') == {"a": 1, "b": "two"}


def test_blank_lines():
    assert toml_impl.loads("\na = 1\n\n") == {"a": 1}
