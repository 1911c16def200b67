import pytest

from shop import OrderBook, OutOfStock, Warehouse


@pytest.fixture
def book():
    w = Warehouse()
    w.receive("mug", 10)
    w.receive("tee", 2)
    return OrderBook(w)


def test_place_reserves(book):
    book.place("o1", {"mug": 3})
    assert book.warehouse.available("mug") == 7
    assert book.warehouse.on_hand["mug"] == 10


def test_ship_takes_from_shelf(book):
    book.place("o1", {"mug": 3})
    book.ship("o1")
    assert book.warehouse.on_hand["mug"] == 7
    assert book.warehouse.available("mug") == 7


def test_out_of_stock(book):
    with pytest.raises(OutOfStock):
        book.place("o1", {"tee": 3})
    assert book.warehouse.available("tee") == 2


def test_cannot_cancel_shipped(book):
    book.place("o1", {"mug": 1})
    book.ship("o1")
    with pytest.raises(ValueError):
        book.cancel("o1")


def test_receive_positive(book):
    with pytest.raises(ValueError):
        book.warehouse.receive("mug", 0)
