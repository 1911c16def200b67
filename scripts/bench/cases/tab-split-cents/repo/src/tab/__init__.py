from .split import split_by_weight, split_evenly

__all__ = ["split_by_weight", "split_evenly"]
