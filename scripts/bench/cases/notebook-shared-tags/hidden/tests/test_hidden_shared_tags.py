from notebook.note import Note


def test_notes_do_not_share_tags():
    a = Note("Groceries")
    b = Note("Standup")
    a.tag("work")
    assert a.tags == ["work"]
    assert b.tags == []


def test_new_note_starts_without_tags():
    Note("first").tag("x")
    assert Note("second").tags == []
