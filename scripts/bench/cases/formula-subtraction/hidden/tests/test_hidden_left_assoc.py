import pytest

from formula import evaluate


@pytest.mark.parametrize("text, want", [
    ("100 - 20 - 30", 50),
    ("1 - 2 + 3", 2),
    ("10 - 4 - 3", 3),
    ("2 * 3 - 4 - 1", 1),
    ("(10 - 5) - (3 - 1)", 3),
    ("=5 - 1 - 1 - 1", 2),
])
def test_left_to_right(text, want):
    assert evaluate(text) == want
