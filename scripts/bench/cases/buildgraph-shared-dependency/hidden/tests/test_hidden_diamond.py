import pytest

from buildgraph import CycleError, build_order, plan_stages

DIAMOND = {"app": ["api", "cli"], "api": ["core"], "cli": ["core"], "core": []}


def assert_valid(order, deps):
    assert sorted(order) == sorted(set(order))
    pos = {t: i for i, t in enumerate(order)}
    for target, prereqs in deps.items():
        for p in prereqs:
            assert pos[p] < pos[target], (p, target, order)


def test_diamond():
    order = build_order(DIAMOND)
    assert_valid(order, DIAMOND)
    assert len(order) == 4


def test_shared_library_between_roots():
    deps = {"x": ["lib"], "y": ["lib"], "lib": []}
    order = build_order(deps)
    assert_valid(order, deps)
    assert len(order) == 3


def test_prerequisite_not_listed_as_target():
    deps = {"b": ["a"], "c": ["a"]}
    order = build_order(deps)
    assert_valid(order, deps)
    assert sorted(order) == ["a", "b", "c"]


def test_cycle_still_detected_with_message():
    with pytest.raises(CycleError) as info:
        build_order({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]})
    assert "a -> b -> c -> a" in str(info.value)


def test_self_cycle():
    with pytest.raises(CycleError):
        build_order({"a": ["a"]})


def test_stages_diamond():
    assert plan_stages(DIAMOND) == [["core"], ["api", "cli"], ["app"]]
