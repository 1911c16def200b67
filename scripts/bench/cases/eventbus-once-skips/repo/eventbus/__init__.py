from .bus import EventBus

__all__ = ["EventBus"]
