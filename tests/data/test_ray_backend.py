"""execution="ray" runs every typed operator on Ray Data and gives the local executor's results.

Each test builds one plan and runs it twice, locally and on a (one-node, loopback) Ray session:
equal rows in equal order where the order is defined (maps, sort, zip, repartition, splits,
groupby aggregations, which come out in key order), equal multisets where it is not (shuffles,
join, map_groups). The 2-node cluster tests are in test_ray_backend_cluster.py.
"""

from __future__ import annotations

import math
import os

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # read when Ray is first imported
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import pytest  # noqa: E402

import ember.data  # noqa: E402
from ember.data.aggregate import AggregateFn, Count, Max, Mean, Min, Std, Sum  # noqa: E402
from ember.errors import DataError  # noqa: E402
from tests.data import _ray_udfs as udfs  # noqa: E402

ray = pytest.importorskip("ray")


@pytest.fixture
def on_ray(ray_execution):
    """``on_ray(fn)``: fn() run with execution="ray", its result made comparable."""
    return lambda fn: comparable(ray_execution(fn))


def comparable(value):
    """NaN (a null float) made equal to itself, so rows compare with ``==``."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def items(n: int = 60) -> ember.data.Dataset:
    """Rows with ties in ``k``, floats in ``v``, some null ``w``; 4 blocks."""
    rows = [
        {"id": i, "k": (i * 7) % 5, "v": i * 0.25 + 0.1, "w": None if i % 6 == 0 else i % 4} for i in range(n)
    ]
    return ember.data.from_items(rows, override_num_blocks=4)


def as_multiset(rows):
    return sorted(rows, key=repr)


def test_maps_filters_and_map_batches_give_the_same_rows_in_the_same_order(on_ray):
    ds = items().map(udfs.double).filter(udfs.keep_odd).map_batches(udfs.add_square).flat_map(udfs.twice)
    local = comparable(ds.take_all())
    assert on_ray(ds.take_all) == local and len(local) == 60


@pytest.mark.slow
def test_sort_is_the_local_stable_sort_exactly(on_ray):
    ties = items().sort("k")  # 12 rows per key: stable means input order among them
    assert on_ray(ties.take_all) == comparable(ties.take_all())
    both = items().sort(["k", "v"], descending=[True, False])
    assert on_ray(both.take_all) == comparable(both.take_all())


def test_random_shuffle_gives_the_same_rows_reproducibly_and_new_each_epoch(on_ray):
    ds = items().random_shuffle(seed=ember.data.RandomSeedConfig(seed=3))
    local = comparable(ds.take_all())
    first, again = on_ray(ds.take_all), on_ray(ds.take_all)
    assert as_multiset(first) == as_multiset(local) and first == again  # same (seed, epoch): same order
    epoch1 = on_ray(lambda: [i for b in ds.iter_internal_blocks(epoch=1) for i in b.column("id").to_pylist()])
    assert sorted(epoch1) == list(range(60)) and epoch1 != [r["id"] for r in first]
    assert [r["id"] for r in first] != list(range(60))
    fixed = items().random_shuffle(seed=3)  # an integer seed: one order in every epoch, as in Ray
    in_epoch = on_ray(
        lambda: [
            [i for b in fixed.iter_internal_blocks(epoch=e) for i in b.column("id").to_pylist()]
            for e in (0, 1)
        ]
    )
    assert in_epoch[0] == in_epoch[1] != list(range(60))


def test_randomize_block_order_and_repartition(on_ray):
    blocks = items().randomize_block_order(seed=1)
    assert as_multiset(on_ray(blocks.take_all)) == as_multiset(comparable(blocks.take_all()))
    parts = items().repartition(3)
    assert on_ray(parts.take_all) == comparable(parts.take_all())
    assert on_ray(lambda: [b.num_rows for b in parts.iter_internal_blocks()]) == [20, 20, 20]
    shuffled = items().repartition(2, shuffle=True)
    assert as_multiset(on_ray(shuffled.take_all)) == as_multiset(comparable(items().take_all()))


@pytest.mark.slow
def test_groupby_aggregations_equal_the_local_ones_in_key_order(on_ray):
    total = AggregateFn(
        init=lambda k: 0,
        merge=lambda a, b: a + b,
        name="total",
        accumulate_row=lambda acc, row: acc + row["id"],
    )
    ds = items().groupby("k").aggregate(Count(), Sum("id"), Min("v"), Max("w"), Mean("v"), Std("v"), total)
    assert on_ray(ds.take_all) == comparable(ds.take_all())
    two_keys = items().map(udfs.double).groupby(["k", "parity"]).count()
    assert on_ray(two_keys.take_all) == comparable(two_keys.take_all())


def test_whole_dataset_aggregates_equal_the_local_ones(on_ray):
    ds = items()
    assert on_ray(lambda: ds.aggregate(Count(), Sum("id"), Mean("v"))) == comparable(
        ds.aggregate(Count(), Sum("id"), Mean("v"))
    )
    assert on_ray(lambda: ds.sum("id")) == 1770
    empty = ds.filter(lambda r: False)
    assert on_ray(lambda: empty.aggregate(Count(), Sum("id"))) == comparable(
        empty.aggregate(Count(), Sum("id"))
    )


@pytest.mark.slow
def test_map_groups_and_join_give_the_local_rows(on_ray):
    groups = items().groupby("k").map_groups(udfs.group_total)
    assert as_multiset(on_ray(groups.take_all)) == as_multiset(comparable(groups.take_all()))
    left = items(20).select_columns(["id", "k"])
    right = ember.data.from_items([{"id": i, "r": i * 10} for i in range(10, 30)], override_num_blocks=3)
    for how in ("inner", "left_outer", "full_outer"):
        joined = left.join(right, how, num_partitions=2)
        assert as_multiset(on_ray(joined.take_all)) == as_multiset(comparable(joined.take_all()))


@pytest.mark.slow
def test_a_mid_epoch_resume_of_map_groups_on_ray_is_refused_not_replayed_differently(ray_execution):
    from ember.errors import CheckpointError

    groups = items().groupby("k").map_groups(udfs.group_total)

    def resume(state):
        again = groups.iter_batches(batch_size=1)
        again.load_state_dict(state)
        return [b["k"].tolist() for b in again]

    def first_batch_then_state():
        batches = groups.iter_batches(batch_size=1)
        next(iter(batches))
        return batches.state_dict()

    mid_epoch = ray_execution(first_batch_then_state)
    assert mid_epoch["batches"] == 1
    # Ray's shuffle decides each group's row order, so a replay could repeat or skip rows: refused
    with pytest.raises(
        CheckpointError, match=r"^cannot resume epoch 0 after batch 1: map_groups on Ray hands"
    ):
        ray_execution(lambda: resume(mid_epoch))
    epoch_end = {**mid_epoch, "epoch": 1, "batches": 0}  # what state_dict() gives after a whole epoch
    assert sorted(ray_execution(lambda: resume(epoch_end))) == [[k] for k in range(5)]
    assert resume(mid_epoch) == [[k] for k in range(1, 5)]  # locally the stream is the same every time


def test_zip_union_limit_and_splits_keep_the_local_order(on_ray):
    zipped = items(20).zip(ember.data.range(20, override_num_blocks=3))
    assert on_ray(zipped.take_all) == comparable(zipped.take_all())
    both = items(10).union(items(5)).limit(12)
    assert on_ray(both.take_all) == comparable(both.take_all())
    shards = items(25).map(udfs.double).streaming_split(3, equal=True)
    assert [on_ray(lambda s=s: list(s.iter_rows())) for s in shards] == [
        comparable(list(s.iter_rows())) for s in shards
    ]
    assert [len(on_ray(lambda s=s: list(s.iter_rows()))) for s in shards] == [8, 8, 8]
    assert on_ray(lambda: [p.take_all() for p in items().split(2)]) == comparable(
        [p.take_all() for p in items().split(2)]
    )


def test_write_parquet_from_ray_writes_the_local_files(on_ray, tmp_path):
    ds = items().map(udfs.double)
    local = ds.write_parquet(str(tmp_path / "local"))
    remote = on_ray(lambda: ds.write_parquet(str(tmp_path / "ray")))
    assert comparable(pq.read_table(tmp_path / "ray").to_pandas().to_dict("records")) == comparable(
        pq.read_table(tmp_path / "local").to_pandas().to_dict("records")
    )
    assert [os.path.basename(f) for f in remote] == [os.path.basename(f) for f in local]


def test_iterator_state_resumes_exactly_on_ray(on_ray):
    ds = items().random_shuffle(seed=5).map(udfs.double)
    full = on_ray(lambda: [b["id"].tolist() for b in ds.iter_batches(batch_size=7)])

    def first_three_then_resume():
        it = ds.iter_batches(batch_size=7)
        seen = []
        for batch in it:
            seen.append(batch["id"].tolist())
            if len(seen) == 3:
                break
        state = it.state_dict()
        again = ds.iter_batches(batch_size=7)
        again.load_state_dict(state)
        return seen + [b["id"].tolist() for b in again]

    assert on_ray(first_three_then_resume) == full


def test_seeded_random_sample_picks_the_local_rows_on_ray(on_ray):
    ds = items().random_sample(0.5, seed=11)
    local = comparable(ds.take_all())
    assert on_ray(ds.take_all) == local and 0 < len(local) < 60


def test_the_rest_of_an_epoch_resumed_on_another_world_size(on_ray):
    # BatchIterable.rest_of_epoch reads its rows through a RowRanges operator (one Ray task), 2 -> 3 ranks.
    # (No shuffle here: Ray's random_shuffle draws another order than the local executor's.)
    batches = ember.data.range(23).iter_batches(batch_size=3)
    layout = batches.for_rank(2, 0).epoch_layout(2)

    def rests():
        return [
            [i for b in batches.rest_of_epoch(layout, 1, 3, rank) for i in b["id"].tolist()]
            for rank in range(3)
        ]

    local = rests()
    assert on_ray(rests) == local and [len(r) for r in local] == [
        6,
        6,
        6,
    ]  # 22 - 2 x 3 = 16 rows: 6 a rank, 2 padded


def test_repartition_modes_and_sort_boundaries_on_ray(on_ray):
    """Ray's own operators for the three repartition modes and sort's boundaries: the local rows, the
    local block sizes where they are defined, keys never split across blocks."""
    streamed = items().repartition(target_num_rows_per_block=25)
    assert on_ray(streamed.take_all) == comparable(streamed.take_all())
    assert on_ray(lambda: [b.num_rows for b in streamed.iter_internal_blocks()]) == [25, 25, 10]
    cut = items().sort("k", boundaries=[1, 3])
    assert on_ray(cut.take_all) == comparable(cut.take_all())
    assert on_ray(lambda: [b.num_rows for b in cut.iter_internal_blocks()]) == [12, 24, 24]
    hashed = items().repartition(3, keys=["k"], sort=True)
    blocks = on_ray(lambda: [b.column("k").to_pylist() for b in hashed.iter_internal_blocks() if b.num_rows])
    assert all(keys == sorted(keys) for keys in blocks)
    assert sorted(k for keys in blocks for k in keys) == sorted(r["k"] for r in items().take_all())
    assert len([set(keys) for keys in blocks]) == len(
        {frozenset(keys) for keys in blocks}
    )  # a key in one block
    assert sum(len(set(keys)) for keys in blocks) == 5


def test_file_shuffle_orders_files_per_epoch_on_ray(on_ray, tmp_path):
    for i in range(6):
        pq.write_table(pa.table({"file": [i, i]}), tmp_path / f"f{i}.parquet")
    ds = ember.data.read_parquet(str(tmp_path), shuffle=ember.data.FileShuffleConfig(seed=5))

    def order(epoch):
        return [b.column("file")[0].as_py() for b in ds.iter_internal_blocks(epoch=epoch)]

    assert on_ray(lambda: order(0)) == order(0) and on_ray(lambda: order(1)) == order(1)
    assert order(0) != order(1)


def test_a_grouped_count_shuffles_only_the_keys_on_ray(on_ray):
    wide = items().map(udfs.double).groupby("k").aggregate(Count(), Mean("v"))
    assert on_ray(wide.take_all) == comparable(wide.take_all())
    with pytest.raises(DataError, match="no such column"):  # Ray's task error is also the DataError it wraps
        on_ray(items().groupby("k").aggregate(Mean("nope")).take_all)


def test_ray_datas_process_wide_settings_stay_the_users(on_ray):
    """ember's translated datasets keep block order (their own copy of Ray's DataContext); the user's
    own Ray Data pipelines in the same process keep the process-wide setting the user chose."""
    options = ray.data.DataContext.get_current().execution_options
    before, options.preserve_order = options.preserve_order, False
    try:
        ds = ember.data.range(40, override_num_blocks=4).map_batches(udfs.add_square)
        assert on_ray(ds.take_all) == comparable(ds.take_all())
        translated = ds.to_ray()
        assert translated.context.execution_options.preserve_order is True
        assert ray.data.DataContext.get_current().execution_options.preserve_order is False
        assert ray.data.range(3).context.execution_options.preserve_order is False
    finally:
        options.preserve_order = before
