import pytest

from buildgraph import CycleError, build_order, plan_stages


def test_chain():
    deps = {"app": ["lib"], "lib": ["base"], "base": []}
    assert build_order(deps) == ["base", "lib", "app"]


def test_independent_targets():
    assert build_order({"y": [], "x": []}) == ["x", "y"]


def test_cycle():
    with pytest.raises(CycleError):
        build_order({"a": ["b"], "b": ["a"]})


def test_stages_chain():
    deps = {"app": ["lib"], "lib": ["base"], "base": []}
    assert plan_stages(deps) == [["base"], ["lib"], ["app"]]
