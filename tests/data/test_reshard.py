"""ember.data batches resumed mid-epoch on another number of ranks (BatchIterable.rest_of_epoch): in one
process, every (old, new) world size, the old ranks' batches and the new ranks' batches together cover the
epoch's rows exactly once (padding aside), every new rank gets the same number of batches, and a rest can
itself be re-split. The multi-process version, through the Trainer and real checkpoints, is
tests/distributed/test_reshard_resume.py."""

from __future__ import annotations

import collections
import itertools

import pytest

import ember.data
from ember.errors import CheckpointError

ROWS, BATCH = 23, 3


def _dataset():
    return ember.data.range(ROWS).random_shuffle(seed=5)


def _ids(batches) -> list[int]:
    return [i for b in batches for i in b["id"].tolist()]


def _first_batches(iterable, n: int) -> list[int]:
    return _ids(itertools.islice(iter(iterable), n))


def _epoch_rows(drop_last: bool, world: int) -> list[int]:
    """What an uninterrupted epoch on `world` ranks trains: every rank's equal shard."""
    batches = _dataset().iter_batches(batch_size=BATCH, drop_last=drop_last)
    return [i for rank in range(world) for i in _ids(batches.for_rank(world, rank))]


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("old,new", [(o, n) for o in (1, 2, 3) for n in (1, 2, 3, 4) if o != n])
def test_old_and_new_ranks_together_train_the_epoch_once(old, new, drop_last):
    batches = _dataset().iter_batches(batch_size=BATCH, drop_last=drop_last)
    done = 2
    shards = [batches.for_rank(old, rank) for rank in range(old)]
    before = [i for shard in shards for i in _first_batches(shard, done)]
    layout = shards[0].epoch_layout(old)
    rests = [batches.rest_of_epoch(layout, done, new, rank) for rank in range(new)]
    after = [_ids(rest) for rest in rests]
    assert len({len(rest) for rest in rests}) == 1  # the same number of batches on every new rank
    assert [len(a) for a in after] == [len(after[0])] * new
    expected = collections.Counter(_epoch_rows(drop_last, old))
    seen = collections.Counter(before + [i for a in after for i in a])
    padding = seen - expected
    assert not expected - seen  # none skipped
    assert sum(padding.values()) < new  # at most new - 1 rows twice (as DistributedSampler pads)
    rest_order = [i for a in after for i in a]
    assert list(padding.elements()) == [] or set(padding) <= set(rest_order[: sum(padding.values())])


def test_a_rest_resumed_again_on_another_world_size_still_covers_the_epoch_once():
    batches = _dataset().iter_batches(batch_size=BATCH)
    before = [i for rank in range(2) for i in _first_batches(batches.for_rank(2, rank), 1)]
    first = batches.for_rank(2, 0).epoch_layout(2)
    middle = [batches.rest_of_epoch(first, 1, 1, 0)]  # 2 -> 1: 22 - 6 = 16 rows left
    trained = _first_batches(middle[0], 2)
    layout = dict(middle[0].layout, base_batch_idx=0)
    last = [batches.rest_of_epoch(layout, 2, 3, rank) for rank in range(3)]  # 1 -> 3: 16 - 6 = 10 rows left
    seen = collections.Counter(before + trained + [i for rest in last for i in _ids(rest)])
    expected = collections.Counter(_epoch_rows(False, 2))
    assert (
        not expected - seen and sum((seen - expected).values()) == 2
    )  # 10 rows on 3 ranks of 4: two padding rows


def test_the_rest_reads_the_same_epoch_order_as_the_run_it_continues():
    batches = _dataset().iter_batches(batch_size=BATCH)
    batches.set_epoch(3)  # random_shuffle's order depends on (seed, epoch)
    shard = batches.for_rank(1, 0)
    shard.set_epoch(3)
    layout = shard.epoch_layout(1)
    whole = _ids(batches)
    assert _ids(batches.rest_of_epoch(layout, 2, 1, 0)) == whole[2 * BATCH :]


def test_a_local_shuffle_buffer_or_another_dataset_is_refused_in_one_line():
    shuffled = _dataset().iter_batches(batch_size=BATCH, local_shuffle_buffer_size=8, local_shuffle_seed=1)
    assert shuffled.for_rank(2, 0).epoch_layout(2) is None
    layout = _dataset().iter_batches(batch_size=BATCH).for_rank(2, 0).epoch_layout(2)
    with pytest.raises(CheckpointError, match="local shuffle buffer"):
        shuffled.rest_of_epoch(layout, 1, 1, 0)
    with pytest.raises(CheckpointError, match="had 23 rows in batches of 3 and this run has 24"):
        ember.data.range(ROWS + 1).iter_batches(batch_size=BATCH).rest_of_epoch(layout, 1, 1, 0)
