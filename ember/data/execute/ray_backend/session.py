"""Joining Ray: the running session, ``RAY_ADDRESS``, or a new local one; Ray Data's settings ember needs."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ember.errors import ConfigError


def connected_ray() -> Any:
    """The ``ray`` module, connected (Ray Data's process-wide settings untouched: see
    ``ordered_datasets``)."""
    from ember.deadlines import connect_ray

    ray = connect_ray(what="execution='ray'")  # Ray's rule for which cluster, with a deadline
    try:
        import ray.data
    except ImportError:
        raise ConfigError("execution='ray' needs Ray Data: pip install 'ray[data]'") from None
    return ray


@contextlib.contextmanager
def ordered_datasets(ray: Any) -> Iterator[None]:
    """Ray datasets made inside keep block order (``preserve_order``), as ember's executor does.

    A Ray dataset copies the process-wide ``DataContext`` when it is made and runs with that copy, so
    setting it only while ember builds its datasets orders theirs and leaves the user's own Ray Data
    pipelines with the setting the user chose.
    """
    options = ray.data.DataContext.get_current().execution_options
    before, options.preserve_order = options.preserve_order, True
    try:
        yield
    finally:
        options.preserve_order = before


def epoch_seed(seed: int, epoch: int) -> int:
    """A seed for Ray's shuffles drawn from (seed, epoch): reproducible, new each epoch, as locally.

    Example:
        >>> epoch_seed(1, 0) == epoch_seed(1, 0) != epoch_seed(1, 1)
        True
    """
    import numpy as np

    return int(np.random.default_rng([int(seed) % 2**63, int(epoch)]).integers(0, 2**31 - 1))
