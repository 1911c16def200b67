from contacts import load_contacts, parse_contacts

EXPORT = (
    "name,email,phone\n"
    '"Doe, Jane",jane@example.com,555-0101\n'
    "Ann Lee,ann@example.com,555-0102\n"
)


def test_quoted_comma():
    rows = parse_contacts(EXPORT)
    assert rows[0] == {"name": "Doe, Jane", "email": "jane@example.com", "phone": "555-0101"}
    assert rows[1]["name"] == "Ann Lee"


def test_doubled_quotes():
    text = 'name,email\n"The ""Boss""",boss@example.com\n'
    assert parse_contacts(text) == [{"name": 'The "Boss"', "email": "boss@example.com"}]


def test_load_file(tmp_path):
    p = tmp_path / "export.csv"
    p.write_text(EXPORT, encoding="utf-8")
    assert load_contacts(p)[0]["name"] == "Doe, Jane"
