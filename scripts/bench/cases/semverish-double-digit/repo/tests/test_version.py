from semverish.version import compare, is_update, latest


def test_compare_simple():
    assert compare("1.2.3", "1.2.4") == -1
    assert compare("2.0.0", "1.9.9") == 1


def test_leading_v():
    assert compare("v1.0.0", "1.0.0") == 0


def test_latest():
    assert latest(["0.1.0", "0.3.0", "0.2.0"]) == "0.3.0"


def test_is_update():
    assert is_update("1.0.0", "1.0.1")
    assert not is_update("1.0.1", "1.0.1")
