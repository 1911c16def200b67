from semverish.version import compare, is_update, latest


def test_double_digit_minor():
    assert compare("1.10.0", "1.9.0") == 1
    assert compare("1.9.0", "1.10.0") == -1


def test_double_digit_major():
    assert compare("10.0", "2.0") == 1


def test_latest_numeric():
    assert latest(["1.2.3", "1.9.0", "1.10.0"]) == "1.10.0"


def test_not_an_update():
    assert not is_update("1.10.0", "1.9.0")
