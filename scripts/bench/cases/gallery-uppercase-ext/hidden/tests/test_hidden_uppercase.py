from gallery.files import find_images, is_image


def test_uppercase_extensions():
    assert is_image("IMG_0042.JPG")
    assert is_image("Scan.PNG")
    assert is_image("clip.Gif")


def test_find_uppercase(tmp_path):
    (tmp_path / "IMG_0001.JPG").write_bytes(b"x")
    (tmp_path / "IMG_0002.jpeg").write_bytes(b"x")
    assert [p.name for p in find_images(tmp_path)] == ["IMG_0001.JPG", "IMG_0002.jpeg"]
