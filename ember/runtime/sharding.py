"""Data sharding for ranks: each rank gets its part, and every rank the same number of batches.

Used by the DDP/FSDP strategies (`process_dataloader`) and by TorchTrainer's `prepare_data_loader`.
ember.data sits beside runtime (same layer), so it is not imported here: an ember.data Dataset or
batch iterable is recognised by its public seam, `shard_for_rank` (`RankShardable` below).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any, Protocol

import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, IterableDataset, RandomSampler

from ember.errors import ConfigError


class RankShardable(Protocol):
    """The seam between runtime sharding and ember.data (which runtime does not import): an object
    with ``shard_for_rank`` gives rank ``rank`` its equal part of ``world_size`` (every rank the same
    number of batches), or None when it cannot be sharded. Seeds it draws (a local shuffle's, a plan's)
    go through ``same_on_every_rank``, which returns rank 0's seed on every rank, so a resumed rank
    shuffles as it started. ember.data's ``Dataset`` and ``BatchIterable`` implement it.
    """

    def shard_for_rank(
        self, world_size: int, rank: int, *, same_on_every_rank: Callable[[Any], Any]
    ) -> Any: ...


def shard_for_rank(
    data: Any, world_size: int, rank: int, *, shuffle: bool | None = None, seed: int | None = None
) -> Any:
    """This rank's part of `data`, every rank getting the same number of batches.

    - a DataLoader over a map-style dataset gets a DistributedSampler (the last samples repeat to fill, as
      torch does, so counts are equal) that shuffles when `shuffle` is True, or, when it is None, when the
      loader did (a RandomSampler); its seed is `seed`, else the one seed_everything set, else 0;
    - an ember.data Dataset or batch iterable gives its rank's shard through `shard_for_rank` (the Dataset of
      `streaming_split(world_size, equal=True)[rank]`);
    - anything else is returned as is, with a warning when it cannot be checked.

    Example:
        >>> loader = DataLoader(list(range(10)), batch_size=2)
        >>> [b.tolist() for b in shard_for_rank(loader, 2, 1)]
        [[1, 3], [5, 7], [9]]
    """
    if world_size == 1:
        return data
    if isinstance(data, DataLoader):
        return _with_distributed_sampler(data, world_size, rank, shuffle, seed)
    shard = _shard_ember_batches(data, world_size, rank)
    if shard is not None:
        return shard
    warnings.warn(
        f"ember cannot shard a {type(data).__name__} across {world_size} ranks; each rank iterates it as "
        "given, so make sure every rank gets the same number of batches (or pass a DataLoader / ember "
        "Dataset)",
        stacklevel=3,
    )
    return data


def _with_distributed_sampler(
    loader: DataLoader, world_size: int, rank: int, shuffle: bool | None, seed: int | None
) -> DataLoader:
    if isinstance(loader.dataset, IterableDataset) or isinstance(loader.sampler, DistributedSampler):
        return loader  # an IterableDataset shards itself; a DistributedSampler is already there
    if loader.batch_sampler is not None and type(loader.batch_sampler).__name__ != "BatchSampler":
        raise ConfigError(
            f"the DataLoader uses a custom batch_sampler ({type(loader.batch_sampler).__name__}); ember "
            "cannot shard it across ranks: give it a DistributedSampler yourself"
        )
    if shuffle is None:
        shuffle = isinstance(loader.sampler, RandomSampler)
    if seed is None:
        seed = global_seed()
    sampler: DistributedSampler[Any] = DistributedSampler(
        loader.dataset, num_replicas=world_size, rank=rank, shuffle=shuffle, seed=seed
    )
    return DataLoader(
        loader.dataset,
        batch_size=loader.batch_size,
        sampler=sampler,
        num_workers=loader.num_workers,
        collate_fn=loader.collate_fn,
        pin_memory=loader.pin_memory,
        drop_last=loader.drop_last,
        timeout=loader.timeout,
        worker_init_fn=loader.worker_init_fn,
        multiprocessing_context=loader.multiprocessing_context,
        generator=loader.generator,
        prefetch_factor=loader.prefetch_factor if loader.num_workers else None,
        persistent_workers=loader.persistent_workers,
    )


def global_seed() -> int:
    """The seed seed_everything set (ember's, or Lightning's PL_GLOBAL_SEED), else 0: the sampler seed
    Lightning's Trainer gives the DistributedSampler it adds."""
    for name in ("EMBER_GLOBAL_SEED", "PL_GLOBAL_SEED"):
        if os.environ.get(name) is not None:
            return int(os.environ[name])
    return 0


def _shard_ember_batches(batches: Any, world_size: int, rank: int) -> Any:
    """An ember.data Dataset or BatchIterable (what iter_torch_batches returns) over this rank's equal
    shard, through their public seam ``shard_for_rank`` (see ``RankShardable``); None for anything else.

    ember.data is a sibling layer, not imported here: it is recognised by that one documented method.
    """
    shard_for = getattr(batches, "shard_for_rank", None)
    if not callable(shard_for):
        return None
    return shard_for(world_size, rank, same_on_every_rank=_same_on_every_rank)


def _same_on_every_rank(seed: int | None) -> int | None:
    """Rank 0's shuffle seed (local buffer, or the plan's seedless shuffles) for every rank (once, at set-up).

    A seed drawn at random differs per rank, but a checkpoint holds rank 0's iterator state, so a
    resumed rank 1 would shuffle with another seed than it started with. One seed for all ranks
    keeps resume exact; the shards differ, so the shuffles do too.
    """
    if seed is None or not dist.is_available() or not dist.is_initialized():
        return seed
    holder = [seed]
    dist.broadcast_object_list(holder, src=0)
    return int(holder[0])
