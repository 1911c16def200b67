"""Call a flaky function again, with a growing pause between tries."""
import time


class RetryError(Exception):
    """Raised when every attempt failed; the last failure is the cause."""


def retry(fn, attempts=3, delay=0.0, sleep=time.sleep, exceptions=(Exception,)):
    """Call fn until it succeeds, at most `attempts` times in total.

    Between tries it sleeps delay, 2*delay, 3*delay, ... seconds.
    Exceptions not listed in `exceptions` propagate at once.
    """
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    last = None
    for attempt in range(1, attempts):
        try:
            return fn()
        except exceptions as exc:
            last = exc
            if attempt < attempts:
                sleep(delay * attempt)
    raise RetryError(f"gave up after {attempts} attempts") from last
