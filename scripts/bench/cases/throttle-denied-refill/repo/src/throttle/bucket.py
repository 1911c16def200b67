"""Token-bucket rate limiting per API key."""
import time


class TokenBucket:
    """Holds up to `capacity` tokens, refilled at `refill_per_second`."""

    def __init__(self, capacity, refill_per_second, clock=time.monotonic):
        self.capacity = capacity
        self.rate = refill_per_second
        self.clock = clock
        self.tokens = float(capacity)
        self.updated = clock()

    def _refill(self):
        now = self.clock()
        elapsed = now - self.updated
        self.tokens = min(self.capacity, self.tokens + elapsed * self.rate)

    def allow(self, cost=1):
        """Take `cost` tokens if there are enough; True when allowed."""
        self._refill()
        if self.tokens >= cost:
            self.tokens -= cost
            self.updated = self.clock()
            return True
        return False
