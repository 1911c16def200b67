"""Turn an arithmetic expression into tokens."""
import re

TOKEN_RE = re.compile(r"\s*(?:(\d+)|(.))")
OPERATORS = "+-*/()"


def tokenize(src):
    """Return a list of ("NUM", value) and ("OP", char) tokens."""
    tokens = []
    for number, other in TOKEN_RE.findall(src):
        if number:
            tokens.append(("NUM", int(number)))
        elif other.strip():
            if other not in OPERATORS:
                raise SyntaxError(f"unexpected character {other!r}")
            tokens.append(("OP", other))
    return tokens
