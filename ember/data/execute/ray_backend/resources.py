"""CPUs per Ray task or actor, so that an actor pool and the tasks feeding it always fit.

Ray Data gives each actor one CPU by default: a pool of 2 plus the read tasks cannot all run on
2 CPUs, and the job waits forever. The shares are computed per node, not for the cluster: on two
1-CPU nodes a pool of 2 actors of 2/3 CPU lands one per node and leaves 1/3 CPU on each, where no
2/3-CPU read task fits (a deadlock the cluster tests hit). So, unless ``num_cpus`` is given, every
actor asks for ``min(1, smallest node's CPUs / (largest pool + 1))``; a task asks for what a node
keeps free with each pool spread evenly (some node always has at most that many of its actors), at
most 1 CPU: Ray Data's own tasks ask for 1, so where 1 fits ember's tasks are Ray Data's. (They once
asked for no more than an actor: on two 2-CPU nodes with a pool of 2, read tasks of 2/3 CPU ran
twice as many at once as Ray Data's, each in a worker process of its own to start.)

Example:
    >>> class TwoNodes:  # what ``ray.nodes()`` reports of two alive 2-CPU nodes
    ...     @staticmethod
    ...     def nodes():
    ...         return [{"Alive": True, "Resources": {"CPU": 2.0}}] * 2
    >>> class Identity:
    ...     def __call__(self, batch):
    ...         return batch
    >>> pooled = ember.data.range(4).map_batches(Identity, concurrency=2, num_cpus=0.5)
    >>> cpu_shares(TwoNodes, pooled._node)  # an actor per node leaves 1.5 CPUs: a task asks for 1
    (1.0, 0.66)
    >>> cpu_shares(TwoNodes, ember.data.range(4).map_batches(Identity, concurrency=2)._node)
    (1.0, 0.66)
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
    task = 1.0
    for size, asked in found:
        per_node = (asked if asked is not None else actor) * (size // len(cpus))
        task = min(task, _floor(max(0.01, min(cpus) - per_node)))
    return task, actor
