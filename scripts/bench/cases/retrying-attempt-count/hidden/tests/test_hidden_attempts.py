import pytest

from retrying import RetryError, retry


def flaky(failures):
    calls = []

    def fn():
        calls.append(1)
        if len(calls) <= failures:
            raise ConnectionError("boom")
        return "ok"

    return fn, calls


def test_third_attempt_succeeds():
    fn, calls = flaky(2)
    assert retry(fn, attempts=3) == "ok"
    assert len(calls) == 3


def test_single_attempt_calls_once():
    fn, calls = flaky(0)
    assert retry(fn, attempts=1) == "ok"
    assert len(calls) == 1


def test_gives_up_after_all_attempts():
    fn, calls = flaky(10)
    pauses = []
    with pytest.raises(RetryError) as info:
        retry(fn, attempts=4, delay=1.0, sleep=pauses.append)
    assert len(calls) == 4
    assert pauses == [1.0, 2.0, 3.0]
    assert isinstance(info.value.__cause__, ConnectionError)
