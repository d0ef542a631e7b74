"""CPUs per Ray task or actor, so that an actor pool and the tasks feeding it always fit.

Ray Data gives each actor one CPU by default: a pool of 2 plus the read tasks cannot all run on
2 CPUs, and the job waits forever. The shares are computed per node, not for the cluster: on two
1-CPU nodes a pool of 2 actors of 2/3 CPU lands one per node and leaves 1/3 CPU on each, where no
2/3-CPU read task fits (a deadlock the cluster tests hit). So, unless ``num_cpus`` is given, every
actor and task asks for ``min(1, smallest node's CPUs / (largest pool + 1))``; when a pool's
``num_cpus`` is given, tasks ask for at most what a node keeps free with the pool spread evenly.
"""

from __future__ import annotations

import math
from typing import Any

from ember.data.plan import ActorMap, Node


def pools(node: Node) -> list[tuple[int, float | None]]:
    """(largest size, num_cpus asked) of every actor pool in the plan."""
    own = []
    if isinstance(node, ActorMap):
        own = [(node.size if isinstance(node.size, int) else node.size[1], node.num_cpus)]
    return own + [p for child in node.children() for p in pools(child)]


def node_cpus(ray: Any) -> list[float]:
    """CPUs of each alive node that has any."""
    found = [float(n["Resources"].get("CPU", 0)) for n in ray.nodes() if n["Alive"]]
    return [c for c in found if c > 0] or [1.0]


def _floor(x: float) -> float:
    return math.floor(x * 100) / 100 or 0.01


def cpu_shares(ray: Any, node: Node) -> tuple[float, float]:
    """(CPUs per task, default CPUs per actor) for the plan ``node`` on this cluster."""
    cpus = node_cpus(ray)
    found = pools(node)
    largest = max([size for size, _ in found] + [0])
    actor = _floor(min(1.0, min(cpus) / (largest + 1)))
    task = actor
    for size, asked in found:
        per_node = (asked if asked is not None else actor) * (size // len(cpus))
        task = min(task, _floor(max(0.01, min(cpus) - per_node)))
    return task, actor
