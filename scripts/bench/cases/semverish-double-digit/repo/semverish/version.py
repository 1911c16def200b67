"""Compare release versions such as 'v1.4.2'."""


def parse(version):
    return version.strip().lstrip("vV").split(".")


def compare(a, b):
    """-1 if a is older than b, 0 if equal, 1 if newer."""
    pa, pb = parse(a), parse(b)
    return (pa > pb) - (pa < pb)


def latest(versions):
    return max(versions, key=parse)


def is_update(installed, candidate):
    return compare(candidate, installed) > 0
