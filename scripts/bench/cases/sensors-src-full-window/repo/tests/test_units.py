from sensors import celsius_to_fahrenheit


def test_freezing():
    assert celsius_to_fahrenheit(0) == 32
