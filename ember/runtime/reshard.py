"""Resuming mid-epoch on a different number of ranks: the epoch's remaining samples, dealt to the new ranks.

A DataLoader sharded with torch's `DistributedSampler` (the one ember adds, or the user's own) gives
rank r of W the positions r, r+W, r+2W, ... of one global order of the dataset (the shuffle is drawn
from `seed + epoch`, not from the world size). After every rank trained k batches of B samples, the
first W*k*B positions of that order are done, on every rank at once. So the rest of the epoch is a
suffix of the global order, whatever W was, and any new world W' can share it out: rank r' of W' takes
positions r', r'+W', ... of the suffix. One process (W=1, no DistributedSampler) is the same with the
order its Random/SequentialSampler drew, replayed from the RNG state at the epoch's start.

The guarantee: every sample of the remaining suffix is trained exactly once across the new ranks.
Its limit is DistributedSampler's own: every rank needs the same number of batches, so when the suffix
does not divide by W', the first `W' - (len % W')` samples of the suffix are dealt a second time (as
torch pads an epoch); with `DistributedSampler(drop_last=True)` the tail the original run dropped
stays dropped. ember.data batches (`iter_torch_batches`) are re-split by ember.data itself
(`BatchIterable.rest_of_epoch`, ember/data/reshard.py): each rank's equal shard is a contiguous range of
the epoch's rows, so the rest is the tail of every range, cut anew into one piece per new rank. Other
stateful iterables are not re-split: a mid-epoch resume on another world size is refused in one line.

Example:
    >>> remaining_positions(total=10, world_size=2, batch_size=2, batches_done=2)
    8
    >>> deal([5, 6, 7], world_size=2, rank=1)
    [6, 5]
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch.utils.data import DataLoader, DistributedSampler, IterableDataset, RandomSampler, SequentialSampler

from ember.errors import CheckpointError
from ember.runtime.seed import capture_rng_state, restore_rng_state


def data_layout(loader: Any, world_size: int) -> dict[str, Any]:
    """What a checkpoint needs to know to re-split this epoch's rest over another number of ranks."""
    layout: dict[str, Any] = {"world_size": world_size}
    epoch_layout = getattr(loader, "epoch_layout", None)
    if not isinstance(loader, DataLoader) and callable(epoch_layout):  # ember.data batches say it themselves
        return epoch_layout(world_size) or layout
    if (
        not isinstance(loader, DataLoader)
        or isinstance(loader.dataset, IterableDataset)
        or loader.batch_size is None
    ):
        return layout
    sampler = loader.sampler
    if isinstance(sampler, DistributedSampler):
        layout.update(
            kind="distributed",
            shuffle=sampler.shuffle,
            seed=sampler.seed,
            drop_last=sampler.drop_last,
            epoch=sampler.epoch,
        )
    elif (
        world_size == 1
        and isinstance(sampler, (RandomSampler, SequentialSampler))
        and (getattr(sampler, "generator", None) is None)
    ):
        layout.update(kind="random" if isinstance(sampler, RandomSampler) else "sequential")
    else:
        return layout
    layout.update(batch_size=loader.batch_size, num_samples=len(loader.dataset))  # type: ignore[arg-type]
    return layout


def remaining_positions(total: int, world_size: int, batch_size: int, batches_done: int) -> int:
    """Positions of the epoch's global order already trained: a prefix of W x k x B (at most `total`)."""
    per_rank = math.ceil(total / world_size)
    return min(world_size * min(batches_done * batch_size, per_rank), total)


def deal(suffix: list[int], world_size: int, rank: int) -> list[int]:
    """Rank `rank`'s share of `suffix`: every world_size-th sample, the suffix padded from its start so every
    rank gets the same count (DistributedSampler's rule)."""
    if not suffix:
        return []
    padded = suffix + (suffix * math.ceil(world_size / len(suffix)))[: (-len(suffix)) % world_size]
    return padded[rank::world_size]


def global_order(layout: dict[str, Any], dataset: Any, epoch_start_rng: dict[str, Any] | None) -> list[int]:
    """The old run's order of the whole epoch before it was split among ranks (unpadded, truncated to what
    a drop_last sampler kept)."""
    kind, n = layout["kind"], layout["num_samples"]
    if kind == "explicit":  # written during an epoch that was itself resumed on another world size
        return list(layout["order"])
    if kind == "distributed":
        sampler: DistributedSampler[Any] = DistributedSampler(
            dataset, num_replicas=1, rank=0, shuffle=layout["shuffle"], seed=layout["seed"]
        )
        sampler.set_epoch(layout["epoch"])
        order = list(sampler)  # one replica: the global order, unpadded
        return order[: (n // layout["world_size"]) * layout["world_size"]] if layout["drop_last"] else order
    if kind == "sequential":
        return list(range(n))
    if epoch_start_rng is None:
        raise CheckpointError(
            "the checkpoint has no RNG state of its epoch's start, so the shuffled order its "
            "one process drew cannot be replayed; resume with the same number of processes"
        )
    now = capture_rng_state()
    try:
        restore_rng_state(epoch_start_rng)
        # The same draws as the run's own DataLoader iterator: its base seed, then the sampler's seed.
        indices = range(n)
        # a range is a map-style dataset (a length and indexing), though not a Dataset subclass
        loader: DataLoader[int] = DataLoader(indices, sampler=RandomSampler(indices), batch_size=None)  # type: ignore[arg-type]
        return [int(i) for i in loader]
    finally:
        restore_rng_state(now)


def resharded_rest(
    loader: Any,
    layout: dict[str, Any] | None,
    batches_done: int,
    world_size: int,
    rank: int,
    epoch_start_rng: dict[str, Any] | None,
) -> DataLoader | None:
    """A DataLoader over this rank's share of the epoch's remaining samples, or None when the world size is
    unchanged (the usual fast-forward applies). Refuses, in one line, what cannot be re-split exactly."""
    explicit = layout is not None and (layout.get("kind") == "explicit" or "ranges" in layout)
    if layout is None or not batches_done or (layout.get("world_size") == world_size and not explicit):
        return None
    old, batches_done = layout.get("world_size"), batches_done - int(layout.get("base_batch_idx", 0))
    if layout.get("kind") == "ember.data" and callable(getattr(loader, "rest_of_epoch", None)):
        return loader.rest_of_epoch(layout, batches_done, world_size, rank)
    if (
        "kind" not in layout
        or not isinstance(loader, DataLoader)
        or isinstance(loader.dataset, IterableDataset)
    ):
        raise CheckpointError(
            f"the checkpoint was written mid-epoch by {old} processes and this run has {world_size}; ember "
            "re-splits the rest of an epoch only for a DataLoader over a map-style dataset "
            "(DistributedSampler, or a Random/SequentialSampler in one process) and for ember.data batches "
            f"without a local shuffle buffer and with a known row count; resume with {old} processes, or "
            "from an epoch-end checkpoint"
        )
    samples = len(loader.dataset)  # type: ignore[arg-type]  # map-style (checked above): it has a length
    if samples != layout["num_samples"]:
        raise CheckpointError(
            f"the checkpoint's epoch had {layout['num_samples']} samples and this dataset has "
            f"{samples}; resume with the same data"
        )
    order = global_order(layout, loader.dataset, epoch_start_rng)
    done = remaining_positions(len(order), layout["world_size"], layout["batch_size"], batches_done)
    suffix = order[done:]
    mine = deal(suffix, world_size, rank)
    rest = DataLoader(
        loader.dataset,
        batch_size=loader.batch_size,
        sampler=mine,
        num_workers=loader.num_workers,
        collate_fn=loader.collate_fn,
        pin_memory=loader.pin_memory,
        drop_last=loader.drop_last,
        worker_init_fn=loader.worker_init_fn,
        generator=torch.Generator().manual_seed(0),
        persistent_workers=False,
    )
    rest.layout = {
        "world_size": world_size,
        "kind": "explicit",
        "order": suffix,
        "batch_size": loader.batch_size,
        "num_samples": layout["num_samples"],
    }
    return rest


def resumed_batch_index(current_epoch_length: int | None, rest: DataLoader) -> int:
    """Where the resumed epoch stands in the new run's epoch: as many batches left as `rest` holds.

    `rest.layout` then records that batch index as its base: a checkpoint written later in this epoch
    describes the rest explicitly (its order), so resuming from it again, on any world size, stays exact.
    """
    base = 0 if current_epoch_length is None else max(0, current_epoch_length - len(rest))
    rest.layout["base_batch_idx"] = base  # type: ignore[attr-defined]
    return base
