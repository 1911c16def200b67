from contacts import load_contacts, parse_contacts


def test_simple_rows():
    text = "name,email\nAnn,ann@example.com\nBo,bo@example.com\n"
    assert parse_contacts(text) == [
        {"name": "Ann", "email": "ann@example.com"},
        {"name": "Bo", "email": "bo@example.com"},
    ]


def test_blank_lines_and_spaces():
    text = "name , email\n\n Ann , ann@example.com \n\n"
    assert parse_contacts(text) == [{"name": "Ann", "email": "ann@example.com"}]


def test_empty():
    assert parse_contacts("") == []


def test_load_with_bom(tmp_path):
    p = tmp_path / "c.csv"
    p.write_bytes("\ufeffname,email\nAnn,a@x\n".encode("utf-8"))
    assert load_contacts(p) == [{"name": "Ann", "email": "a@x"}]
