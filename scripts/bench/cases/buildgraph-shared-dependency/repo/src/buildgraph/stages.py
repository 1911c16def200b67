"""Group targets into stages that can be built in parallel."""
from .toposort import build_order


def plan_stages(deps):
    """List of stages; every target's prerequisites are in earlier stages."""
    level = {}
    for target in build_order(deps):
        level[target] = 1 + max((level[d] for d in deps.get(target, [])), default=-1)
    stages = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for target, n in level.items():
        stages[n].append(target)
    return [sorted(s) for s in stages]
