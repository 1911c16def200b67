"""A tiny synchronous publish/subscribe bus."""
from collections import defaultdict


class EventBus:
    def __init__(self):
        self._handlers = defaultdict(list)

    def on(self, event, handler):
        """Call handler(*args) on every emit of event, in registration order."""
        self._handlers[event].append(handler)
        return handler

    def off(self, event, handler):
        self._handlers[event].remove(handler)

    def once(self, event, handler):
        """Call handler on the next emit of event only."""

        def wrapper(*args, **kwargs):
            self.off(event, wrapper)
            return handler(*args, **kwargs)

        return self.on(event, wrapper)

    def emit(self, event, *args, **kwargs):
        """Call the handlers of event; returns their results in order."""
        results = []
        for handler in self._handlers.get(event, []):
            results.append(handler(*args, **kwargs))
        return results

    def listeners(self, event):
        return len(self._handlers.get(event, []))
