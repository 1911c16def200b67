"""Merge busy intervals into blocks."""


def merge(intervals):
    """Merge overlapping or touching (start, end) intervals into sorted blocks."""
    merged = []
    for start, end in intervals:
        if start > end:
            raise ValueError(f"interval ({start}, {end}) ends before it starts")
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [tuple(block) for block in merged]


def total_covered(intervals):
    return sum(end - start for start, end in merge(intervals))


def free_slots(intervals, day_start, day_end):
    """Gaps between busy blocks within [day_start, day_end]."""
    free, cursor = [], day_start
    for start, end in merge(intervals):
        if start > cursor:
            free.append((cursor, min(start, day_end)))
        cursor = max(cursor, end)
    if cursor < day_end:
        free.append((cursor, day_end))
    return free
