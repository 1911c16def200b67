import unittest

from invoicing.money import apply_discount, format_cents


class MoneyTest(unittest.TestCase):
    def test_format(self):
        self.assertEqual(format_cents(1995), "19.95")
        self.assertEqual(format_cents(-5), "-0.05")

    def test_discount_whole_cents(self):
        self.assertEqual(apply_discount(2000, 10), 1800)

    def test_discount_rounds_half_up(self):
        # 15% off 19.95 is 16.9575: the customer pays 16.96.
        self.assertEqual(apply_discount(1995, 15), 1696)


if __name__ == "__main__":
    unittest.main()
