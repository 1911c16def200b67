"""Read an ISBN from a photo of the barcode (optional: pip install bookshelf-catalogue[scan])."""

from pyzbar.pyzbar import decode


def isbn_from_image(image):
    codes = [c.data.decode("ascii") for c in decode(image) if c.type == "EAN13"]
    return codes[0] if codes else None
