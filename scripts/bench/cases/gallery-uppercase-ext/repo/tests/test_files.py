from gallery.files import find_images, is_image


def test_is_image():
    assert is_image("holiday/beach.png")
    assert not is_image("notes.txt")
    assert not is_image("README")


def test_find_images(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one.jpg").write_bytes(b"x")
    (tmp_path / "two.gif").write_bytes(b"x")
    (tmp_path / "skip.txt").write_text("x")
    found = [p.name for p in find_images(tmp_path)]
    assert found == ["one.jpg", "two.gif"]
