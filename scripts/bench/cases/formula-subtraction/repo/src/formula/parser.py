"""Recursive-descent evaluator for spreadsheet cell formulas.

Grammar:
    expr   := term (("+" | "-") term)*
    term   := factor (("*" | "/") factor)*
    factor := NUMBER | "(" expr ")" | "-" factor
"""
import re

TOKEN_RE = re.compile(r"\d+|[-+*/()]|\S")


class Parser:
    def __init__(self, text):
        self.tokens = TOKEN_RE.findall(text)
        self.pos = 0

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def next(self):
        tok = self.peek()
        if tok is None:
            raise SyntaxError("unexpected end of formula")
        self.pos += 1
        return tok

    def parse(self):
        value = self.expr()
        if self.peek() is not None:
            raise SyntaxError(f"unexpected {self.peek()!r}")
        return value

    def expr(self):
        left = self.term()
        if self.peek() in ("+", "-"):
            op = self.next()
            right = self.expr()
            return left + right if op == "+" else left - right
        return left

    def term(self):
        left = self.factor()
        while self.peek() in ("*", "/"):
            op = self.next()
            right = self.factor()
            left = left * right if op == "*" else left / right
        return left

    def factor(self):
        tok = self.next()
        if tok == "(":
            value = self.expr()
            if self.next() != ")":
                raise SyntaxError("expected ')'")
            return value
        if tok == "-":
            return -self.factor()
        if tok.isdigit():
            return int(tok)
        raise SyntaxError(f"unexpected {tok!r}")


def evaluate(text):
    return Parser(text.lstrip("=")).parse()
