"""``RandomSeedConfig`` (Ray Data 2.60): the ``seed=`` of ``random_shuffle``, ``randomize_block_order``
and ``random_sample`` as a seed plus whether each execution draws anew.

Ray's "execution index" is ember's epoch (as for ``FileShuffleConfig``): every pass of an iterator
is one epoch, one-shot calls (``take_all``, ``materialize``) run epoch 0, and an epoch's randomness
is a pure function of (seed, epoch), which is what makes a resumed epoch replay exactly. So:

- ``random_shuffle`` / ``randomize_block_order`` with ``RandomSeedConfig(seed)`` (Ray's default,
  ``reseed_after_execution=True``) draw from (seed, epoch): a new order each epoch. An integer seed,
  as in Ray, is ``reseed_after_execution=False``: one order, the same in every epoch.
- ``random_sample`` draws from (seed, block contents): the same sample every epoch, which is
  ``reseed_after_execution=False`` (Ray's integer seed too); ``True`` is refused in one line.

``seed=None`` draws a new order on every execution, as Ray's does (``ember/data/execution_seed.py``:
a batch iterable keeps its draw in its state, so it resumes exactly); ``use_timestamp_as_default``
(Ray's legacy way of pinning that seed at plan time) changes nothing.

Example:
    >>> config = ember.data.RandomSeedConfig(seed=3)
    >>> ds = ember.data.range(6).random_shuffle(seed=config)
    >>> ds.take_all() == ember.data.range(6).random_shuffle(seed=3).take_all()
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ember.data import arguments
from ember.data.ray_errors import DataValueError
from ember.errors import ConfigError


@dataclass
class RandomSeedConfig:
    """A seed and whether each execution (ember: each epoch) draws anew (Ray's class, same fields).

    Example:
        >>> ember.data.RandomSeedConfig(seed=42, reseed_after_execution=False)
        RandomSeedConfig(seed=42, reseed_after_execution=False, use_timestamp_as_default=False)
        >>> ember.data.RandomSeedConfig(seed="42")
        Traceback (most recent call last):
        ...
        ember.data.ray_errors.DataValueError: Seed must be an integer or None.
    """

    seed: int | None = None
    reseed_after_execution: bool = True
    use_timestamp_as_default: bool = False

    def __post_init__(self) -> None:
        if self.seed is not None and not arguments._is_integer(self.seed):
            raise DataValueError("Seed must be an integer or None.")


def order_seed(where: str, seed: Any) -> tuple[int | None, bool]:
    """``(seed, reseed)`` of a shuffle: ``reseed`` says the order is drawn from (seed, epoch), new each
    epoch, rather than from the seed alone. Ray's rule: an integer is one order for every execution,
    a config says for itself, and None (no seed) draws anew each time.

    Example:
        >>> order_seed("Dataset.random_shuffle", 5), order_seed("Dataset.random_shuffle", RandomSeedConfig(5))
        ((5, False), (5, True))
    """
    config = _as_config(where, seed)
    if config is None:
        return arguments.seed(where, seed), seed is None
    return config.seed, config.seed is None or config.reseed_after_execution


def fixed_seed(where: str, seed: Any) -> Any:
    """The seed of an operator that draws the same every epoch: a non-reseeding config's seed; any
    other value is returned as it is, for the operator's own check.

    Example:
        >>> fixed_seed("Dataset.random_sample", RandomSeedConfig(seed=5, reseed_after_execution=False))
        5
    """
    config = _as_config(where, seed)
    if config is None:
        return seed
    if config.seed is not None and config.reseed_after_execution:
        raise ConfigError(
            f"{where}(seed=RandomSeedConfig(seed={config.seed}, reseed_after_execution=True)): ember's "
            "sample is keyed by (seed, block contents), the same in every epoch; pass the integer seed "
            "(or reseed_after_execution=False), or random_shuffle(seed=...) for a per-epoch order"
        )
    return config.seed


def _as_config(where: str, seed: Any) -> RandomSeedConfig | None:
    """``seed`` as ember's config when it is one (Ray's own class too), else None."""
    if isinstance(seed, RandomSeedConfig):
        return seed
    if type(seed).__name__ == "RandomSeedConfig":  # ray.data.RandomSeedConfig: same fields
        return RandomSeedConfig(
            seed.seed, bool(seed.reseed_after_execution), bool(seed.use_timestamp_as_default)
        )
    return None
