import unittest

from invoicing.stats import average, largest, total


class StatsTest(unittest.TestCase):
    def test_total(self):
        self.assertEqual(total([100, 250]), 350)

    def test_average(self):
        self.assertEqual(average([100, 200, 300]), 200.0)

    def test_average_of_no_invoices_is_zero(self):
        self.assertEqual(average([]), 0.0)

    def test_largest(self):
        self.assertEqual(largest([3, 9, 4]), 9)
        self.assertIsNone(largest([]))


if __name__ == "__main__":
    unittest.main()
