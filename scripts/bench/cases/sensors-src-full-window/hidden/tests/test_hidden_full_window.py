from sensors import moving_average


def test_exactly_one_full_window():
    assert moving_average([1, 2, 3, 4, 5, 6], 6) == [3.5]


def test_one_point_per_full_window():
    assert moving_average(list(range(10)), 6) == [2.5, 3.5, 4.5, 5.5, 6.5]


def test_window_of_one_is_the_readings():
    assert moving_average([4, 8, 15], 1) == [4, 8, 15]
