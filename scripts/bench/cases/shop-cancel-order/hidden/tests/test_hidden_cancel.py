import pytest

from shop import OrderBook, OutOfStock, Warehouse


@pytest.fixture
def book():
    w = Warehouse()
    w.receive("mug", 10)
    w.receive("tee", 1)
    return OrderBook(w)


def test_cancel_gives_back_reservation(book):
    book.place("o1", {"mug": 3})
    book.cancel("o1")
    assert book.warehouse.on_hand["mug"] == 10
    assert book.warehouse.available("mug") == 10
    assert book.orders["o1"].status == "cancelled"


def test_cancel_twice_is_an_error(book):
    book.place("o1", {"mug": 3})
    book.cancel("o1")
    with pytest.raises(ValueError):
        book.cancel("o1")
    assert book.warehouse.on_hand["mug"] == 10
    assert book.warehouse.available("mug") == 10


def test_failed_order_holds_nothing(book):
    with pytest.raises(OutOfStock):
        book.place("o2", {"mug": 4, "tee": 5})
    assert book.warehouse.available("mug") == 10
    assert book.warehouse.available("tee") == 1
    book.place("o3", {"mug": 10, "tee": 1})


def test_cancelled_order_cannot_ship(book):
    book.place("o1", {"mug": 2})
    book.cancel("o1")
    with pytest.raises(ValueError):
        book.ship("o1")
