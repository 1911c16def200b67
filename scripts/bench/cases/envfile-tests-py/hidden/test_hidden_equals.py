from envfile import load, parse_line


def test_value_keeps_every_equals_sign():
    assert parse_line("SECRET = YWJj==") == ("SECRET", "YWJj==")


def test_load_url():
    assert load("DATABASE_URL = postgres://db?sslmode=require\n") == {"DATABASE_URL": "postgres://db?sslmode=require"}
