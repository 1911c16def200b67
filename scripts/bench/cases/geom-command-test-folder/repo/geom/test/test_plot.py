from geom.plot import draw


def test_draw():
    draw(1, 2)
