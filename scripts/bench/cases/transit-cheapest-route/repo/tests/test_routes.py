import math

from transit.routes import shortest_path


def test_line():
    graph = {"A": {"B": 2}, "B": {"C": 3}}
    assert shortest_path(graph, "A", "C") == (5, ["A", "B", "C"])


def test_same_stop():
    assert shortest_path({}, "A", "A") == (0, ["A"])


def test_unreachable():
    cost, path = shortest_path({"A": {"B": 1}}, "A", "Z")
    assert math.isinf(cost) and path == []
