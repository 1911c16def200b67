from timeslots.intervals import free_slots, merge, total_covered


def test_merge_unsorted():
    assert merge([(5, 7), (1, 3), (2, 6)]) == [(1, 7)]


def test_total_unsorted():
    assert total_covered([(5, 7), (1, 3), (2, 6)]) == 6


def test_free_slots_unsorted():
    assert free_slots([(12, 13), (9, 10)], 8, 17) == [(8, 9), (10, 12), (13, 17)]
