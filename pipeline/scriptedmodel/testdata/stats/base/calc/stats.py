"""Small statistics helpers."""


def mean(xs):
    total = 0
    for x in xs:
        total += x
    return total / len(xs)


def spread(xs):
    lo = min(xs)
    hi = max(xs)
    width = hi - lo
    return width


def median(xs):
    s = sorted(xs)
    n = len(s)
    mid = n // 2
    if n % 2:
        return s[mid]
    return s[mid]
