"""Load KEY = value settings from .env files."""


def parse_line(line):
    """Return (key, value) for one KEY = value line."""
    key, value = line.split("=")
    return key.strip(), value.strip()


def load(text):
    """Parse every setting in text, skipping blank lines and # comments."""
    settings = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, value = parse_line(line)
        settings[key] = value
    return settings
