"""Smoothing of a series of readings."""


def moving_average(readings, window):
    """The mean of each full window of consecutive readings, in order."""
    if window < 1:
        raise ValueError("window must be at least 1, got %d" % window)
    out = []
    for start in range(len(readings) - window):
        chunk = readings[start:start + window]
        out.append(sum(chunk) / window)
    return out
