"""Units on the shelf and units promised to open orders."""


class OutOfStock(Exception):
    pass


class Warehouse:
    def __init__(self):
        self.on_hand = {}
        self.reserved = {}

    def receive(self, sku, qty):
        """A delivery arrived: qty more units on the shelf."""
        if qty <= 0:
            raise ValueError("qty must be positive")
        self.on_hand[sku] = self.on_hand.get(sku, 0) + qty

    def available(self, sku):
        """Units that can still be promised to a new order."""
        return self.on_hand.get(sku, 0) - self.reserved.get(sku, 0)

    def reserve(self, sku, qty):
        if qty > self.available(sku):
            raise OutOfStock(f"{sku}: {qty} wanted, {self.available(sku)} available")
        self.reserved[sku] = self.reserved.get(sku, 0) + qty

    def ship(self, sku, qty):
        """Reserved units leave the building: off the shelf and out of the reservation."""
        self.reserved[sku] -= qty
        self.on_hand[sku] -= qty
