"""Orders reserve stock when placed and take it when shipped."""
from .warehouse import OutOfStock  # noqa: F401  (re-raised to callers)


class Order:
    def __init__(self, order_id, lines):
        self.id = order_id
        self.lines = dict(lines)
        self.status = "new"


class OrderBook:
    def __init__(self, warehouse):
        self.warehouse = warehouse
        self.orders = {}

    def place(self, order_id, lines):
        """Reserve every line; raises OutOfStock when a line cannot be served."""
        if order_id in self.orders:
            raise ValueError(f"order {order_id} exists")
        order = Order(order_id, lines)
        for sku, qty in order.lines.items():
            self.warehouse.reserve(sku, qty)
        order.status = "reserved"
        self.orders[order_id] = order
        return order

    def ship(self, order_id):
        order = self.orders[order_id]
        if order.status != "reserved":
            raise ValueError(f"order {order_id} is {order.status}")
        for sku, qty in order.lines.items():
            self.warehouse.ship(sku, qty)
        order.status = "shipped"

    def cancel(self, order_id):
        order = self.orders[order_id]
        if order.status == "shipped":
            raise ValueError(f"order {order_id} is already shipped")
        for sku, qty in order.lines.items():
            self.warehouse.receive(sku, qty)
        order.status = "cancelled"
