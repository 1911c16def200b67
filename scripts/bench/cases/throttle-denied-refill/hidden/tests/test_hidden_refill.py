from throttle import TokenBucket


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_refused_requests_do_not_earn_tokens():
    clock = Clock()
    b = TokenBucket(capacity=1, refill_per_second=1, clock=clock)
    assert b.allow()
    clock.now = 0.5
    assert not b.allow()
    clock.now = 0.6
    assert not b.allow()
    clock.now = 0.9
    assert not b.allow()
    clock.now = 1.0
    assert b.allow()


def test_rate_holds_under_hammering():
    clock = Clock()
    b = TokenBucket(capacity=1, refill_per_second=2, clock=clock)
    allowed = 0
    for step in range(1, 1001):  # 10 seconds in 10 ms steps
        clock.now = step / 100
        allowed += b.allow()
    assert allowed <= 21
