import unittest

from stats import mean, spread


class MeanTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([1, 2, 3]), 2)


class SpreadTest(unittest.TestCase):
    def test_spread(self):
        self.assertEqual(spread([4, 1, 7]), 6)

    def test_spread_empty(self):
        self.assertEqual(spread([]), 0)


if __name__ == "__main__":
    unittest.main()
