"""Evaluate tokens with the usual precedence (shunting-yard)."""
from .lexer import tokenize

PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}


def _apply(op, b, a):
    return {"+": a + b, "-": a - b, "*": a * b, "/": a / b if b else float("nan")}[op]


def evaluate(src):
    values, ops = [], []

    def reduce_once():
        op = ops.pop()
        values.append(_apply(op, values.pop(), values.pop()))

    expect_value = True
    for kind, tok in tokenize(src):
        if kind == "NUM":
            if not expect_value:
                raise SyntaxError("two numbers in a row")
            values.append(tok)
            expect_value = False
        elif tok == "(":
            ops.append(tok)
        elif tok == ")":
            while ops and ops[-1] != "(":
                reduce_once()
            if not ops:
                raise SyntaxError("unbalanced ')'")
            ops.pop()
        else:
            while ops and ops[-1] != "(" and PRECEDENCE[ops[-1]] >= PRECEDENCE[tok]:
                reduce_once()
            ops.append(tok)
            expect_value = True
    while ops:
        if ops[-1] == "(":
            raise SyntaxError("unbalanced '('")
        reduce_once()
    if len(values) != 1:
        raise SyntaxError("incomplete expression")
    return values[0]
