"""Dataset.mix and MixStoppingCondition: Ray Data 2.60's weighted interleaving, block by block."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ember.data
from ember.data import MixStoppingCondition
from ember.errors import DataError

LONGEST, SHORTEST = MixStoppingCondition.STOP_ON_LONGEST_DROP, MixStoppingCondition.STOP_ON_SHORTEST


def _blocks(sizes, start):
    """Arrow tables of the given row counts holding consecutive ints from ``start`` (one block each)."""
    out = []
    for n in sizes:
        out.append(pa.table({"x": list(range(start, start + n))}))
        start += n
    return out


def _xs(ds):
    return [row["x"] for row in ds.take_all()]


def test_rays_documented_example():
    # ray.data.Dataset.mix's docstring: two 4-row datasets in 2 blocks each, equal weights.
    a = ember.data.from_items([{"x": x} for x in (1, 2, 3, 4)]).repartition(2)
    b = ember.data.from_items([{"x": x} for x in (5, 6, 7, 8)]).repartition(2)
    batches = [batch["x"].tolist() for batch in a.mix(b, weights=[0.5, 0.5]).iter_batches(batch_size=4)]
    assert batches == [[1, 2, 5, 6], [3, 4, 7, 8]]


LAYOUTS = [
    ([3, 1, 4], [2, 2, 2, 2, 2], [1, 3]),
    ([5, 5], [1, 1, 1], [2, 1]),
    ([2, 2], [2, 2], None),
    ([1, 2, 3], [4], [1, 1]),
    ([4, 4, 4], [1] * 6, [0.9, 0.1]),
]


@pytest.mark.parametrize(("sizes_a", "sizes_b", "weights"), LAYOUTS)
def test_longest_drop_matches_ray(local_ray, sizes_a, sizes_b, weights):
    ray = local_ray
    a, b = _blocks(sizes_a, 0), _blocks(sizes_b, 100)
    theirs = [r["x"] for r in ray.data.from_arrow(a).mix(ray.data.from_arrow(b), weights=weights).take_all()]
    assert _xs(ember.data.from_arrow(a).mix(ember.data.from_arrow(b), weights=weights)) == theirs


def test_three_inputs_follow_the_weights_from_parquet_files(tmp_path):
    # One row group per file: each file is one block of 10 rows; weights 3:1:1 over 50/50/50 rows.
    for name, start in (("a", 0), ("b", 1000), ("c", 2000)):
        folder = tmp_path / name
        folder.mkdir()
        for f in range(5):
            pq.write_table(
                pa.table({"x": list(range(start + 10 * f, start + 10 * f + 10))}), folder / f"{f}.parquet"
            )
    a, b, c = (ember.data.read_parquet(str(tmp_path / n)) for n in "abc")
    mixed = _xs(a.mix(b, c, weights=[3, 1, 1], stopping_condition=SHORTEST))
    source = [x // 1000 for x in mixed]
    # 'a' runs out first (its 50 rows are 3/5 of the output): the mix ends there, b and c truncated.
    assert source.count(0) == 50 and source.count(1) == source.count(2) == 20
    assert [x for x in mixed if x < 1000] == list(range(50))  # each input keeps its own order
    assert sorted(_xs(a.mix(b, c, weights=[3, 1, 1]))) == sorted(_xs(a.union(b, c)))  # longest: every row


def test_stop_on_shortest_ends_with_the_first_exhausted_input():
    a, b = ember.data.from_arrow(_blocks([2, 2], 0)), ember.data.from_arrow(_blocks([2, 2, 2, 2], 100))
    assert _xs(a.mix(b, stopping_condition=SHORTEST)) == [0, 1, 100, 101, 2, 3]
    assert _xs(a.mix(b)) == [0, 1, 100, 101, 2, 3, 102, 103, 104, 105, 106, 107]
    empty = ember.data.from_arrow(_blocks([2], 0)).filter(lambda r: False)
    assert _xs(empty.mix(b, stopping_condition=SHORTEST)) == []
    assert _xs(empty.mix(b)) == list(range(100, 108))


def test_a_mixed_stream_resumes_exactly(tmp_path):
    pq.write_table(pa.table({"x": list(range(40))}), tmp_path / "a.parquet", row_group_size=5)
    shuffled = ember.data.read_parquet(str(tmp_path / "a.parquet")).random_shuffle(
        seed=ember.data.RandomSeedConfig(seed=7)
    )
    other = ember.data.from_arrow(_blocks([3] * 10, 100)).map(lambda r: {"x": r["x"] * 2})
    mixed = shuffled.mix(other, weights=[2, 1])

    def epochs(iterable, n):
        return [[batch["x"].tolist() for batch in iterable] for _ in range(n)]

    whole = epochs(mixed.iter_batches(batch_size=4), 2)
    assert whole[0] != whole[1]  # the shuffle below the mix draws a new order each epoch
    interrupted = mixed.iter_batches(batch_size=4)
    stream = iter(interrupted)
    seen = [next(stream)["x"].tolist() for _ in range(5)]
    state = interrupted.state_dict()
    resumed = mixed.iter_batches(batch_size=4)
    resumed.load_state_dict(state)
    rest = epochs(resumed, 2)
    assert seen + rest[0] == whole[0] and rest[1] == whole[1]


def test_weights_and_stopping_condition_are_checked_as_ray_checks_them():
    a, b = ember.data.range(2), ember.data.range(2)
    with pytest.raises(ValueError, match="2 datasets but 3 weights"):
        a.mix(b, weights=[1, 1, 1])
    with pytest.raises(ValueError, match="positive"):
        a.mix(b, weights=[1, 0])
    with pytest.raises(ValueError, match="MixStoppingCondition"):
        a.mix(b, stopping_condition="stop_on_shortest")
    with pytest.raises(ember.errors.ConfigError, match="keyword"):
        a.mix([0.5, 0.5])


def test_inputs_with_different_columns_are_refused_in_one_line():
    a, b = ember.data.range(2), ember.data.from_items([{"y": 1}])
    with pytest.raises(DataError, match=r"^mix: dataset 1 has columns \['y'\] but the first has \['id'\]"):
        a.mix(b).take_all()


def test_enum_matches_rays(local_ray):
    ray = local_ray
    assert {c.name: c.value for c in MixStoppingCondition} == {
        c.name: c.value for c in ray.data.MixStoppingCondition
    }


def test_resuming_on_another_number_of_ranks_is_refused_in_one_line():
    # A STOP_ON_SHORTEST mix's row count is known only by running it (where it stops depends on the
    # blocks), so its epoch cannot be re-dealt to a new world size.
    mixed = ember.data.from_arrow(_blocks([2, 2], 0)).mix(
        ember.data.from_arrow(_blocks([3], 100)), stopping_condition=SHORTEST
    )
    batches = mixed.iter_batches(batch_size=2)
    assert batches.for_rank(2, 0).epoch_layout(2) is None
    layout = {
        "kind": "ember.data",
        "world_size": 2,
        "rows": 7,
        "batch_size": 2,
        "drop_last": False,
        "epoch": 0,
    }
    with pytest.raises(ember.errors.CheckpointError, match="cannot be re-split over another number of ranks"):
        batches.rest_of_epoch(layout, 1, 3, 0)
    # on the same world size a rank's shard is its equal part of the mixed stream [0, 1, 100, 101, 102]
    assert [b["x"].tolist() for b in batches.for_rank(2, 1)] == [[100, 101]]


def _never_called(row):
    raise AssertionError("count() ran the plan")


def test_count_of_a_longest_drop_mix_comes_from_the_inputs_row_counts_without_running_it():
    a = ember.data.from_arrow(_blocks([2, 2], 0)).map(_never_called)  # one row out per row in: count known
    b = ember.data.from_arrow(_blocks([3], 4))
    mixed = a.mix(b, weights=[1, 2])
    assert mixed.count() == 7
    assert mixed.limit(5).count() == 5


def test_count_of_a_mix_matches_ray(local_ray):
    a, b = _blocks([2, 2, 1], 0), _blocks([3], 5)
    # STOP_ON_LONGEST_DROP only: where STOP_ON_SHORTEST stops in Ray depends on when its upstream
    # reports completion (ember.data.mix's docstring)
    ours = ember.data.from_arrow(a).mix(ember.data.from_arrow(b))
    assert ours.count() == local_ray.data.from_arrow(a).mix(local_ray.data.from_arrow(b)).count() == 8
