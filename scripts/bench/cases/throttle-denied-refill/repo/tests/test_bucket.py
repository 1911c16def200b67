from throttle import TokenBucket


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_burst_up_to_capacity():
    clock = Clock()
    b = TokenBucket(3, 1, clock=clock)
    assert [b.allow() for _ in range(4)] == [True, True, True, False]


def test_refills_over_time():
    clock = Clock()
    b = TokenBucket(3, 1, clock=clock)
    for _ in range(3):
        b.allow()
    clock.now = 1.0
    assert b.allow()
    assert not b.allow()


def test_never_above_capacity():
    clock = Clock()
    b = TokenBucket(2, 10, clock=clock)
    clock.now = 100.0
    assert [b.allow() for _ in range(3)] == [True, True, False]
