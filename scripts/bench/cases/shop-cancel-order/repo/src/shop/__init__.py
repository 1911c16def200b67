from .orders import Order, OrderBook
from .warehouse import OutOfStock, Warehouse

__all__ = ["Order", "OrderBook", "OutOfStock", "Warehouse"]
