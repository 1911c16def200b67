from transit.routes import shortest_path


def test_cheapest_not_alphabetical():
    graph = {
        "Airport": {"Bridge": 10, "Zoo": 1},
        "Bridge": {"Docks": 1},
        "Zoo": {"Docks": 1},
    }
    assert shortest_path(graph, "Airport", "Docks") == (2, ["Airport", "Zoo", "Docks"])


def test_longer_path_with_fewer_minutes():
    graph = {
        "A": {"Y": 1, "D": 9},
        "Y": {"X": 1},
        "X": {"W": 1},
        "W": {"D": 1},
    }
    assert shortest_path(graph, "A", "D") == (4, ["A", "Y", "X", "W", "D"])
