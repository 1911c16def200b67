from stats import mean


def test_empty_mean_is_zero():
    assert mean([]) == 0.0


def test_mean_unchanged():
    assert mean([2, 4]) == 3
