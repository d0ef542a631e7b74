"""CPUs per Ray task or actor, so that an actor pool and the reads feeding it always fit.

Ray Data gives each actor one CPU by default: a pool of 2 plus the read tasks cannot all run on
2 CPUs, and the job waits forever. Unless ``num_cpus`` is given, every actor and task asks for
``min(1, cluster CPUs / (largest pool + 1))``, which always fits.
"""

from __future__ import annotations

import math
from typing import Any

from ember.data.plan import ActorMap, Node


def largest_pool(node: Node) -> int:
    """The largest actor pool anywhere in the plan (0 when there is none)."""
    own = 0
    if isinstance(node, ActorMap):
        own = node.size if isinstance(node.size, int) else node.size[1]
    return max([own, 0] + [largest_pool(child) for child in node.children()])


def cpu_share(ray: Any, pool_size: int) -> float:
    """CPUs per task or actor so that a pool of ``pool_size`` and one reader always fit."""
    cpus = float(ray.cluster_resources().get("CPU", 1.0))
    return min(1.0, math.floor(cpus / (pool_size + 1) * 100) / 100) or 0.01
