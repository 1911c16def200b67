from notebook.note import Note


def test_tag_is_normalised():
    n = Note("a", tags=["x"])
    n.tag("  Y ")
    assert n.tags == ["x", "y"]


def test_tag_twice_keeps_one():
    n = Note("a", tags=[])
    n.tag("home").tag("HOME")
    assert n.tags == ["home"]


def test_untag():
    n = Note("a", tags=["x", "y"])
    n.untag("X")
    assert n.tags == ["y"]
