"""Joining Ray: the running session, ``RAY_ADDRESS``, or a new local one; Ray Data's settings ember needs."""

from __future__ import annotations

import os
from typing import Any

from ember.errors import ConfigError


def connected_ray() -> Any:
    """The ``ray`` module, connected; Ray Data keeps block order (``preserve_order``), as ember does."""
    try:
        import ray
        import ray.data
    except ImportError:
        raise ConfigError("execution='ray' needs Ray: pip install 'ray[data]'") from None
    if not ray.is_initialized():
        ray.init(address=os.environ.get("RAY_ADDRESS"))
    ray.data.DataContext.get_current().execution_options.preserve_order = True
    return ray


def epoch_seed(seed: int, epoch: int) -> int:
    """A seed for Ray's shuffles drawn from (seed, epoch): reproducible, new each epoch, as locally.

    Example:
        >>> epoch_seed(1, 0) == epoch_seed(1, 0) != epoch_seed(1, 1)
        True
    """
    import numpy as np

    return int(np.random.default_rng([int(seed) % 2**63, int(epoch)]).integers(0, 2**31 - 1))
