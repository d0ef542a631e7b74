"""The rest of an epoch, dealt to another number of consumers: resume mid-epoch on a new world size.

A Trainer on W ranks gives rank r the equal shard ``streaming_split(W, equal=True)[r]``: a contiguous
range of the epoch's rows (the dataset's order for that epoch, random_shuffle included: it depends on
(seed, epoch), never on W). After every rank delivered k batches of B rows, rank r has consumed the
first k*B rows of its range, so the rows still to train are the rest of each range. A new world of
W' ranks shares them out: the rest ranges, one after another, cut into W' contiguous pieces of
``ceil(M / W')`` rows (M rows left). When M does not divide by W', the last pieces are filled up with
the first rows of the rest, as DistributedSampler pads an epoch, so every rank trains the same number of
batches (DDP's collectives need it). Every remaining row is trained, none skipped; only those at most
W' - 1 padding rows twice.

Limits: the position must be a prefix of each shard, so a ``local_shuffle_buffer_size`` (which draws
rows from ahead) cannot be re-split, nor can a dataset whose row count is unknown without running it
(filter, CSV/text without metadata); both are refused in one line. Rows the old run would have dropped
(``equal=True``'s remainder, ``drop_last``) stay dropped.

Example:
    >>> rest = remaining_ranges({"rows": 10, "world_size": 2, "batch_size": 2, "drop_last": False},
    ...     batches_done=1)
    >>> rest
    [(2, 3), (7, 3)]
    >>> [piece(rest, rank, 4) for rank in range(4)]
    [[(2, 2)], [(4, 1), (7, 1)], [(8, 2)], [(2, 2)]]
"""

from __future__ import annotations

import math
from typing import Any

Ranges = list[tuple[int, int]]


def shard_rows(rows: int, rank: int, world_size: int) -> tuple[int, int]:
    """(first row, row count) of rank's equal shard (``streaming_split(world_size, equal=True)``)."""
    per = rows // world_size
    return rank * per, per


def remaining_ranges(layout: dict[str, Any], batches_done: int) -> Ranges:
    """The epoch's rows not yet trained, as (start, count) ranges in the order the old ranks held them.

    ``layout`` is what ``epoch_layout`` wrote: the dataset's rows and the old split (an equal shard per
    rank), or, for an epoch that was itself resumed on another world size, its explicit ``ranges``.

    Example:
        >>> remaining_ranges({"rows": 9, "world_size": 1, "batch_size": 4, "drop_last": True}, batches_done=1)
        [(4, 4)]
    """
    world, size = layout["world_size"], layout["batch_size"]
    done = batches_done * size
    if "ranges" in layout:
        total = sum(count for _, count in layout["ranges"])
        per = math.ceil(total / world) if total else 0
        pieces = [
            take(layout["ranges"], rank * per, max(0, min(per, total - rank * per))) for rank in range(world)
        ]
    else:
        pieces = []
        for rank in range(world):
            start, count = shard_rows(layout["rows"], rank, world)
            if layout["drop_last"]:
                count -= count % size
            pieces.append([(start, count)])
    rest: Ranges = []
    for ranges in pieces:  # each old rank consumed the first `done` rows of its piece (padding excluded)
        rest.extend(take(ranges, done, sum(c for _, c in ranges) - done))
    return _merged(rest)


def piece(rest: Ranges, rank: int, world_size: int) -> Ranges:
    """Rank's share of ``rest``: ``ceil(M / world_size)`` rows, the last share padded from the start."""
    total = sum(count for _, count in rest)
    if total == 0:
        return []
    per = math.ceil(total / world_size)
    own = max(0, min(per, total - rank * per))
    return _merged(take(rest, rank * per, own) + take(rest, 0, per - own))


def take(ranges: Ranges, skip: int, count: int) -> Ranges:
    """Positions [skip, skip + count) of the rows ``ranges`` list, as ranges.

    Example:
        >>> take([(0, 3), (10, 3)], skip=2, count=3)
        [(2, 1), (10, 2)]
    """
    out: Ranges = []
    for start, length in ranges:
        if count <= 0:
            break
        if skip >= length:
            skip -= length
            continue
        n = min(count, length - skip)
        out.append((start + skip, n))
        skip, count = 0, count - n
    return out


def _merged(ranges: Ranges) -> Ranges:
    """Adjacent ranges joined, empty ones dropped (fewer, longer slices to read)."""
    out: Ranges = []
    for start, count in ranges:
        if count <= 0:
            continue
        if out and out[-1][0] + out[-1][1] == start:
            out[-1] = (out[-1][0], out[-1][1] + count)
        else:
            out.append((start, count))
    return out
