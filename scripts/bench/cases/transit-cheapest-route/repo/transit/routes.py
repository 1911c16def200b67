"""Cheapest routes between stops (Dijkstra)."""
import heapq


def shortest_path(graph, start, goal):
    """graph: {stop: {next_stop: minutes}}. Returns (minutes, [stops]).

    When goal cannot be reached: (inf, []).
    """
    queue = [(start, 0, [start])]
    seen = set()
    while queue:
        stop, cost, path = heapq.heappop(queue)
        if stop == goal:
            return cost, path
        if stop in seen:
            continue
        seen.add(stop)
        for nxt, minutes in graph.get(stop, {}).items():
            if nxt not in seen:
                heapq.heappush(queue, (nxt, cost + minutes, path + [nxt]))
    return float("inf"), []
