from calc.stats import mean


def test_empty():
    assert mean([]) == 0.0
