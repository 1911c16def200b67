"""Import contacts from CSV exported by mail programs."""


def parse_contacts(text):
    """Rows of the CSV text as dicts keyed by the header's column names."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = [h.strip() for h in lines[0].split(",")]
    rows = []
    for line in lines[1:]:
        values = [v.strip() for v in line.split(",")]
        rows.append(dict(zip(header, values)))
    return rows


def load_contacts(path):
    with open(path, newline="", encoding="utf-8-sig") as f:
        return parse_contacts(f.read())
