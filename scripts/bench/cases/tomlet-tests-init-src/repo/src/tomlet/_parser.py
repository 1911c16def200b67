def _value(text):
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1]
    if text.isdigit():
        return int(text)
    return text


def loads(text):
    """Parse key = value lines into a dict."""
    out = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        key, value = line.split("=", 1)
        out[key.strip()] = _value(value)
    return out
