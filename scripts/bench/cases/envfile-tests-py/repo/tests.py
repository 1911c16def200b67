from envfile import load, parse_line


def test_parse_line():
    assert parse_line("DEBUG = 1") == ("DEBUG", "1")


def test_load_skips_comments():
    assert load("# c\nA = 1\n\nB = two\n") == {"A": "1", "B": "two"}
