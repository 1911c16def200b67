import pytest

from retrying import retry


def test_success_first_time():
    assert retry(lambda: 42, attempts=3) == 42


def test_unlisted_exception_propagates():
    def boom():
        raise KeyError("x")

    with pytest.raises(KeyError):
        retry(boom, attempts=3, exceptions=(ConnectionError,))


def test_attempts_must_be_positive():
    with pytest.raises(ValueError):
        retry(lambda: 1, attempts=0)
