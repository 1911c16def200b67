import pytest

from appconfig.env import get_bool


@pytest.mark.parametrize("raw", ["false", "False", "0", "no", "off", " OFF "])
def test_false_values(raw):
    assert get_bool("X", default=True, environ={"X": raw}) is False


@pytest.mark.parametrize("raw", ["true", "TRUE", "1", "yes", "on", " Yes "])
def test_true_values(raw):
    assert get_bool("X", environ={"X": raw}) is True
