from bookshelf.scan import isbn_from_image


def test_no_barcode():
    assert isbn_from_image(b"") is None
