from geom.shapes import perimeter


def test_perimeter():
    assert perimeter(2, 3) == 10
    assert perimeter(1, 1) == 4
