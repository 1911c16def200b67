from importlib.metadata import version

import bookshelf


def test_version_matches_metadata():
    assert version("bookshelf-catalogue") == bookshelf.__version__
