from .stages import plan_stages
from .toposort import CycleError, build_order

__all__ = ["CycleError", "build_order", "plan_stages"]
