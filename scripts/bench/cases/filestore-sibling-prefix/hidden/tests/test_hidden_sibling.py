import os

import pytest

from filestore.paths import UnsafePath, read_file, safe_join


def test_sibling_with_same_prefix_refused(tmp_path):
    root = tmp_path / "files"
    secret = tmp_path / "files-private"
    root.mkdir()
    secret.mkdir()
    (secret / "keys.txt").write_text("secret")
    with pytest.raises(UnsafePath):
        safe_join(root, "../files-private/keys.txt")
    with pytest.raises(UnsafePath):
        read_file(root, "../files-private/keys.txt")


def test_root_itself_is_allowed(tmp_path):
    assert safe_join(tmp_path, ".") == str(tmp_path)


def test_inside_still_works(tmp_path):
    root = tmp_path / "files"
    assert safe_join(root, "files-private/x") == os.path.join(str(root), "files-private", "x")
