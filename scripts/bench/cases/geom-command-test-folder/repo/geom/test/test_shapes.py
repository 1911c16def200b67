from geom.shapes import area, square_area


def test_area():
    assert area(2, 3) == 6


def test_square_area():
    assert square_area(4) == 16
