from bookshelf.isbn import is_valid, normalize


def test_plain_isbn13():
    assert is_valid("9783161484100")


def test_plain_isbn10():
    assert is_valid("0306406152")


def test_wrong_check_digit():
    assert not is_valid("9783161484101")


def test_normalize_strips_spaces():
    assert normalize(" 978 3161484100 ") == "9783161484100"
