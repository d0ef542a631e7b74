"""Iteration: shuffles by seed and epoch, equal streaming splits, and exact resume for every operator."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ember.data


def ids(batches) -> list[list[int]]:
    return [b["id"].tolist() for b in batches]


def test_random_shuffle_reproducible_by_seed_and_new_each_epoch_with_a_reseeding_config():
    def epochs(seed):
        config = ember.data.RandomSeedConfig(seed=seed)  # an integer seed is one order throughout
        it = ember.data.range(50).random_shuffle(seed=config).iter_batches(batch_size=50)
        return [ids(it)[0] for _ in range(3)]

    first, again = epochs(7), epochs(7)
    assert first == again
    assert first[0] != first[1] != first[2]
    assert all(sorted(e) == list(range(50)) for e in first)
    assert epochs(8)[0] != first[0]


def test_local_shuffle_reproducible_by_seed_and_new_each_epoch():
    def epochs(seed):
        it = ember.data.range(40).iter_batches(
            batch_size=8, local_shuffle_buffer_size=16, local_shuffle_seed=seed
        )
        return [sum(ids(it), []) for _ in range(2)]

    first = epochs(3)
    assert first == epochs(3)
    assert first[0] != first[1]
    assert sorted(first[0]) == list(range(40))


def test_streaming_split_equal_counts_and_disjoint():
    shards = ember.data.range(101).streaming_split(2, equal=True)
    rows = [sum(ids(s.iter_batches(batch_size=10)), []) for s in shards]
    assert [len(r) for r in rows] == [50, 50]
    assert not set(rows[0]) & set(rows[1])
    filtered = ember.data.range(101).filter(lambda r: r["id"] % 3 != 0).streaming_split(3, equal=True)
    assert len({s.materialize().count() for s in filtered}) == 1


def test_streaming_split_reads_only_its_fragments(tmp_path):
    for i in range(4):
        pq.write_table(pa.table({"id": np.arange(i * 10, i * 10 + 10)}), tmp_path / f"{i}.parquet")
    second = ember.data.read_parquet(tmp_path).streaming_split(2, equal=True)[1]
    assert sum(ids(second.iter_batches()), []) == list(range(20, 40))
    assert "2 tasks" in second.stats()


class AddOne:
    def __call__(self, batch):
        return {"id": batch["id"] + 1}


def operator_datasets(tmp_path) -> dict[str, callable]:
    """One Dataset per operator, each built fresh (as a resumed process would)."""
    pq.write_table(pa.table({"id": np.arange(60)}), tmp_path / "p.parquet", row_group_size=13)
    base = lambda: ember.data.range(60, override_num_blocks=4)  # noqa: E731
    return {
        "read_parquet": lambda: ember.data.read_parquet(tmp_path),
        "map": lambda: base().map(lambda r: {"id": r["id"] * 2}),
        "map_batches": lambda: base().map_batches(lambda b: {"id": b["id"] + 5}, batch_size=7),
        "map_batches_class": lambda: base().map_batches(AddOne, concurrency=2, batch_size=9),
        "filter": lambda: base().filter(lambda r: r["id"] % 4 != 1),
        "flat_map": lambda: base().flat_map(lambda r: [r, {"id": -r["id"]}]),
        "add_column": lambda: base().add_column("x", lambda df: df["id"] * 0).drop_columns(["x"]),
        "select_rename": lambda: (
            base().rename_columns({"id": "v"}).select_columns(["v"]).rename_columns({"v": "id"})
        ),
        "limit": lambda: base().limit(41),
        "union": lambda: base().union(ember.data.range(9)),
        "random_shuffle": lambda: base().random_shuffle(seed=11),
        "randomize_block_order": lambda: base().randomize_block_order(seed=5),
        "repartition": lambda: base().repartition(3),
        "sort": lambda: base().sort("id", descending=True),
        "streaming_split": lambda: base().streaming_split(2, equal=True)[1],
    }


OPERATORS = [
    "read_parquet",
    "map",
    "map_batches",
    "map_batches_class",
    "filter",
    "flat_map",
    "add_column",
    "select_rename",
    "limit",
    "union",
    "random_shuffle",
    "randomize_block_order",
    "repartition",
    "sort",
    "streaming_split",
]


@pytest.mark.parametrize("operator", OPERATORS)
def test_save_restore_is_exact_for_every_operator(operator, tmp_path):
    """Stop after k batches, restore into a fresh Dataset and iterator: the rest is identical."""
    make = operator_datasets(tmp_path)[operator]
    options = dict(batch_size=5, local_shuffle_buffer_size=12, local_shuffle_seed=1, prefetch_batches=2)
    reference_iterable = make().iter_batches(**options)
    reference = [ids(reference_iterable) for _ in range(2)]  # two epochs
    stream = [(epoch, batch) for epoch, batches in enumerate(reference) for batch in batches]
    per_epoch = len(reference[0])
    assert reference[0] != reference[1]  # the local shuffle differs across epochs
    for cut in (1, per_epoch - 1, per_epoch, per_epoch + 2):
        first = make().iter_batches(**options)
        seen = []
        for epoch in range(2):
            for batch in first:
                seen.append((epoch, batch["id"].tolist()))
                if len(seen) == cut:
                    break
            if len(seen) == cut:
                break
        state = first.state_dict()
        resumed = make().iter_batches(**options)
        resumed.load_state_dict(state)
        rest = []
        epoch = state["epoch"]
        while epoch < 2:
            rest += [(epoch, b) for b in ids(resumed)]
            epoch += 1
        assert seen + rest == stream, f"cut after {cut} batches"


def test_resume_counts_delivered_batches_not_prefetched_ones():
    it = ember.data.range(100).iter_batches(batch_size=10, prefetch_batches=5)
    batches = iter(it)
    next(batches)
    next(batches)
    assert it.state_dict()["batches"] == 2


def test_state_dict_is_plain_data_and_len_known():
    it = ember.data.range(10).iter_torch_batches(batch_size=4, drop_last=True)
    assert len(it) == 2
    assert all(isinstance(v, (int, type(None))) for v in it.state_dict().values())
    with pytest.raises(TypeError):
        len(ember.data.range(10).filter(lambda r: True).iter_batches())


def test_drop_last_dtypes_and_collate():
    import torch

    it = ember.data.range(10).iter_torch_batches(batch_size=4, drop_last=True, dtypes=torch.float32)
    assert [b["id"].dtype for b in it] == [torch.float32, torch.float32]
    summed = ember.data.range(4).iter_torch_batches(
        batch_size=4, collate_fn=lambda b: torch.as_tensor(b["id"].sum())
    )
    assert [int(x) for x in summed] == [6]
