import pytest

from textstats import average_word_length, reading_time_minutes, word_count


def test_word_count():
    assert word_count("It's a small world.") == 4
    assert word_count("") == 0


def test_average_word_length():
    assert average_word_length("ab abcd") == 3.0


def test_reading_time():
    assert reading_time_minutes("word " * 400) == pytest.approx(2.0)
