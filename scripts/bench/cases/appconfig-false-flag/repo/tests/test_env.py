from appconfig.env import get_bool, get_int, get_str


def test_missing_bool_uses_default():
    assert get_bool("X", default=True, environ={}) is True
    assert get_bool("X", environ={}) is False


def test_true_values():
    assert get_bool("X", environ={"X": "1"}) is True


def test_int_and_str():
    env = {"PORT": " 8080 ", "NAME": "svc"}
    assert get_int("PORT", environ=env) == 8080
    assert get_int("MISSING", default=7, environ=env) == 7
    assert get_str("NAME", environ=env) == "svc"
