"""Order build targets so that prerequisites come first."""


class CycleError(Exception):
    """The targets depend on each other in a loop; the message shows the loop."""


def build_order(deps):
    """deps: {target: [prerequisites]}. Every target once, prerequisites first.

    Targets are visited in sorted order so the result is stable between runs.
    """
    order = []
    visited = set()

    def visit(node, chain):
        if node in visited:
            raise CycleError(" -> ".join(chain + [node]))
        visited.add(node)
        for dep in sorted(deps.get(node, [])):
            visit(dep, chain + [node])
        order.append(node)

    for node in sorted(deps):
        if node not in visited:
            visit(node, [])
    return order
