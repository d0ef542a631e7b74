"""DataIterator (Ray Data 2.60's): what Dataset.iterator(), Dataset.streaming_split() and
ember.train.get_dataset_shard() return, and its exact resume through the batch iterables it gives."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest
import torch

import ember.data
import ember.train
from ember.errors import ConfigError
from ember.train.context import TrainContext, set_context


def ids(batches) -> list[int]:
    return [i for b in batches for i in b["id"].tolist()]


def test_streaming_split_returns_data_iterators_over_disjoint_equal_ranges():
    shards = ember.data.range(11).streaming_split(3, equal=True)
    assert all(type(s) is ember.data.DataIterator for s in shards)
    rows = [ids(s.iter_batches(batch_size=2)) for s in shards]
    assert rows == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]  # contiguous, equal, the remainder dropped


def test_streaming_split_without_equal_keeps_every_row():
    shards = ember.data.range(11).streaming_split(3)
    assert sorted(sum((ids(s.iter_batches()) for s in shards), [])) == list(range(11))


def test_streaming_split_refuses_locality_hints_of_the_wrong_length_and_a_bad_n():
    with pytest.raises(ConfigError, match="one node id per iterator"):
        ember.data.range(4).streaming_split(2, locality_hints=["node-a"])
    assert len(ember.data.range(4).streaming_split(2, locality_hints=["a", "b"])) == 2
    with pytest.raises(ConfigError, match="n >= 1"):
        ember.data.range(4).streaming_split(0)


def test_iterator_methods_give_what_the_dataset_gives():
    ds = ember.data.from_items([{"id": i, "x": float(i) / 2} for i in range(7)])
    it = ds.iterator()
    assert ids(it.iter_batches(batch_size=3)) == list(range(7))
    assert list(it.iter_rows()) == ds.take_all()
    assert list(it.iter_rows()) == ds.take_all()  # re-iterable, like Ray's
    batch = next(iter(it.iter_torch_batches(batch_size=7, device=None, dtypes=torch.float32)))
    assert torch.equal(batch["x"], torch.arange(7, dtype=torch.float32) / 2)
    assert it.materialize().take_all() == ds.take_all()
    assert it.schema().names == ["id", "x"]
    features, label = next(iter(it.to_torch(label_column="id", batch_size=7)))
    assert label.tolist() == [[i] for i in range(7)] and features.shape == (7, 1)  # Ray unsqueezes the label
    assert it.get_context() is ds.context  # Ray: the dataset's context


def test_iterator_stats_describe_the_shard_it_ran():
    it = ember.data.range(20, override_num_blocks=4).streaming_split(2, equal=True)[1]
    assert "not executed" in it.stats()
    assert ids(it.iter_batches()) == list(range(10, 20))
    assert "StreamingSplit" in it.stats() and "not executed" not in it.stats()


def test_iterator_refuses_dataloader_arguments_in_one_line():
    with pytest.raises(ConfigError, match="local_shuffle_buffer_size"):
        ember.data.range(3).iterator().iter_batches(shuffle=True)
    with pytest.raises(ConfigError, match="batchsize"):
        ember.data.range(3).iterator().iter_torch_batches(batchsize=2)


def test_a_shard_iterator_resumes_exactly_from_its_state():
    def shard():
        return (
            ember.data.range(40, override_num_blocks=3)
            .random_shuffle(seed=4)
            .streaming_split(2, equal=True)[1]
        )

    options = dict(batch_size=3, local_shuffle_buffer_size=6, local_shuffle_seed=2)
    whole = [ids([b]) for b in shard().iter_batches(**options)]
    first = shard().iter_batches(**options)
    taken = []
    for batch in first:
        taken.append(batch["id"].tolist())
        if len(taken) == 2:
            break
    resumed = shard().iter_batches(**options)
    resumed.load_state_dict(first.state_dict())
    assert taken + [b["id"].tolist() for b in resumed] == whole


def test_dataset_iterator_is_rays_backwards_compatible_alias():
    assert ember.data.DatasetIterator is ember.data.DataIterator


def test_data_iterator_has_rays_methods_and_arguments():
    ray_iterator = pytest.importorskip(
        "ray.data.iterator"
    )  # reads the installed Ray's source, starts nothing
    for name in (
        "iter_batches",
        "iter_rows",
        "iter_torch_batches",
        "to_torch",
        "materialize",
        "schema",
        "stats",
        "get_context",
    ):
        ray_params = set(inspect.signature(getattr(ray_iterator.DataIterator, name)).parameters)
        ours = set(inspect.signature(getattr(ember.data.DataIterator, name)).parameters)
        missing = (
            ray_params
            - ours
            - {
                "label_column_dtype",
                "feature_column_dtypes",
                "unsqueeze_label_tensor",
                "unsqueeze_feature_tensors",
            }
        )  # to_torch's, refused (deprecated in Ray)
        assert not missing, f"DataIterator.{name} lacks {missing}"


def _context(world_size: int, rank: int, datasets: dict) -> TrainContext:
    return TrainContext(
        world_rank=rank,
        world_size=world_size,
        local_rank=rank,
        local_world_size=world_size,
        node_rank=0,
        run_dir=Path("."),
        device=torch.device("cpu"),
        datasets=datasets,
    )


@pytest.mark.parametrize("world_size", [1, 2])
def test_get_dataset_shard_returns_this_ranks_data_iterator(world_size):
    rows = []
    try:
        for rank in range(world_size):
            set_context(_context(world_size, rank, {"train": ember.data.range(9)}))
            shard = ember.train.get_dataset_shard("train")
            assert isinstance(shard, ember.data.DataIterator)
            assert ember.train.get_dataset_shard("train") is shard  # one iterator per worker and name
            rows.append(ids(shard.iter_torch_batches(batch_size=4, device=None)))
    finally:
        set_context(None)
    per_rank = 9 // world_size
    assert rows == [list(range(r * per_rank, (r + 1) * per_rank)) for r in range(world_size)]


def test_sharding_for_ddp_ranks_still_splits_an_iterator_from_a_data_iterator():
    from ember.runtime.sharding import shard_for_rank

    batches = ember.data.range(10).iterator().iter_batches(batch_size=2)
    parts = [ids(shard_for_rank(batches, 2, rank)) for rank in range(2)]
    assert parts == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    assert np.array_equal(ids(shard_for_rank(ember.data.range(4), 2, 1).iter_batches()), [2, 3])
