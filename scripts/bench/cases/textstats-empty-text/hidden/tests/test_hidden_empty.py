from textstats import average_word_length


def test_empty_text():
    assert average_word_length("") == 0.0


def test_blank_text():
    assert average_word_length("   \n\t ") == 0.0


def test_punctuation_only():
    assert average_word_length("... !!") == 0.0
