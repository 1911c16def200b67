import os

import pytest

from filestore.paths import UnsafePath, read_file, safe_join


def test_inside(tmp_path):
    assert safe_join(tmp_path, "a", "b.txt") == os.path.join(str(tmp_path), "a", "b.txt")


def test_parent_refused(tmp_path):
    with pytest.raises(UnsafePath):
        safe_join(tmp_path, "../../etc/passwd")


def test_absolute_refused(tmp_path):
    with pytest.raises(UnsafePath):
        safe_join(tmp_path, "/etc/passwd")


def test_dot_segments_inside(tmp_path):
    assert safe_join(tmp_path, "a/../b") == os.path.join(str(tmp_path), "b")


def test_read(tmp_path):
    (tmp_path / "x.txt").write_bytes(b"hi")
    assert read_file(tmp_path, "x.txt") == b"hi"
