import unittest

from invoicing.text import initials, truncate


class TextTest(unittest.TestCase):
    def test_truncate_long_name(self):
        self.assertEqual(truncate("Espresso machine", 8), "Espress…")

    def test_truncate_name_that_fits_exactly(self):
        self.assertEqual(truncate("Coffee", 6), "Coffee")

    def test_initials(self):
        self.assertEqual(initials("ada  lovelace"), "AL")


if __name__ == "__main__":
    unittest.main()
