"""Ray's repartition modes (num_blocks, keys, target_num_rows_per_block), sort(boundaries=) and
schema/columns(fetch_if_missing=), against Ray Data on the same input; in memory and out of core."""

from __future__ import annotations

import os
import warnings

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import pyarrow as pa  # noqa: E402
import pytest  # noqa: E402

import ember.data  # noqa: E402
from ember.errors import ConfigError  # noqa: E402
from tests.data.test_all_to_all import SMALL, _dataset, _table, both, budget  # noqa: E402, F401 - a fixture


@pytest.fixture
def ray_data(local_ray):
    context = local_ray.data.DataContext.get_current()
    saved = context.execution_options.preserve_order, context.shuffle_strategy
    context.execution_options.preserve_order = True
    yield local_ray.data
    context.execution_options.preserve_order, context.shuffle_strategy = saved


def ray_blocks(ds):
    import ray

    return [ray.get(ref) for ref in ds.materialize().get_internal_block_refs()]


def our_blocks(ds):
    return list(ds.iter_internal_blocks())


def sizes(blocks):
    return [block.num_rows for block in blocks]


SORTS = [
    ("range", 10, "id", False, [3, 7]),
    ("range", 10, "id", False, [-5, 3, 3.5, 4]),
    ("range", 10, "id", False, [100]),
    ("items", 9, "k", True, [1]),
    ("items", 9, "k", False, [0.5, 1]),
]


@pytest.mark.parametrize("source, n, key, descending, boundaries", SORTS)
def test_sort_boundaries_cut_rays_blocks(ray_data, source, n, key, descending, boundaries):
    def make(rd):
        ds = rd.range(n) if source == "range" else rd.from_items([{"k": i % 3, "v": i} for i in range(n)])
        return ds.sort(key, descending=descending, boundaries=boundaries)

    ours, theirs = our_blocks(make(ember.data)), ray_blocks(make(ray_data))
    assert sizes(ours) == sizes(theirs)
    assert [b.to_pylist() for b in ours] == [pa.table(b).to_pylist() for b in theirs]


def test_sort_boundaries_refuse_what_ray_refuses(ray_data):
    for rd in (ember.data, ray_data):
        with pytest.raises(ValueError, match="type of items in boundaries must be int or float"):
            rd.from_items([{"s": "b"}]).sort("s", boundaries=["a"]).take_all()
    with pytest.raises(ConfigError, match="ascending order"):
        ember.data.range(3).sort("id", boundaries=[2, 1])


@pytest.mark.parametrize("strict", [False, True])
def test_target_rows_per_block_gives_rays_blocks(ray_data, strict):
    def make(rd):
        return rd.range(25, override_num_blocks=3).repartition(target_num_rows_per_block=4, strict=strict)

    ours, theirs = our_blocks(make(ember.data)), ray_blocks(make(ray_data))
    assert sizes(ours) == sizes(theirs) == [4] * 6 + [1]
    assert [b.to_pylist() for b in ours] == [pa.table(b).to_pylist() for b in theirs]


@pytest.mark.parametrize("sort", [False, True])
def test_keyed_repartition_keeps_equal_keys_together_as_ray_does(ray_data, sort):
    from ray.data.context import ShuffleStrategy

    ray_data.DataContext.get_current().shuffle_strategy = ShuffleStrategy.HASH_SHUFFLE
    rows = [{"k": i % 5, "s": f"x{i % 2}", "v": i} for i in range(40)]
    for keys in (["k"], ["k", "s"]):
        ours = our_blocks(
            ember.data.from_items(rows, override_num_blocks=4).repartition(3, keys=keys, sort=sort)
        )
        theirs = [
            pa.table(b)
            for b in ray_blocks(
                ray_data.from_items(rows, override_num_blocks=4).repartition(3, keys=keys, sort=sort)
            )
        ]
        for blocks in (ours, theirs):
            assert len(blocks) == 3
            groups = [{tuple(r[k] for k in keys) for r in b.to_pylist()} for b in blocks]
            assert sum(len(g) for g in groups) == len(set().union(*groups))  # a key lies in one block
            assert sorted(r["v"] for b in blocks for r in b.to_pylist()) == list(range(40))
            if sort:
                assert all(
                    b.to_pylist() == b.sort_by([(k, "ascending") for k in keys]).to_pylist() for b in blocks
                )
        assert (
            all([r["v"] for r in b.to_pylist()] == sorted(r["v"] for r in b.to_pylist()) for b in ours)
            or sort
        )


def test_repartition_arguments_are_checked_as_ray_checks_them_and_ignored_ones_refused(ray_data):
    for rd in (ember.data, ray_data):
        for kwargs in (
            {},
            {"num_blocks": 2, "target_num_rows_per_block": 3},
            {"target_num_rows_per_block": 3, "shuffle": True},
        ):
            with pytest.raises(ValueError):
                rd.range(5).repartition(**kwargs)
    for kwargs, ignored in (
        ({"num_blocks": 2, "strict": True}, "strict"),
        ({"target_num_rows_per_block": 3, "keys": ["id"]}, "keys"),
        ({"target_num_rows_per_block": 3, "sort": True}, "sort"),
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ray_data.range(5).repartition(**kwargs)
        assert any(f"`{ignored}` is ignored" in str(w.message) for w in caught)  # Ray drops it with a warning
        with pytest.raises(ConfigError, match=ignored):
            ember.data.range(5).repartition(**kwargs)  # ember refuses it
    with pytest.raises(ConfigError, match="pass keys= too"):
        ember.data.range(5).repartition(2, sort=True)


def test_sort_boundaries_and_keyed_repartition_are_the_same_out_of_core(budget):  # noqa: F811 - the fixture
    table = _table(3000)
    bounds = both(
        budget,
        lambda: pa.Table.from_batches(
            [
                b
                for block in _dataset(table).sort("value", boundaries=[-0.5, 0, 0.5]).iter_internal_blocks()
                for b in block.to_batches()
            ],
            table.schema,
        ),
    )
    assert bounds.column("id").to_pylist() == table.sort_by("value").column("id").to_pylist()
    run, _ = budget
    spilled = run(
        lambda: [
            b.num_rows
            for b in _dataset(table).sort("value", boundaries=[-0.5, 0, 0.5]).iter_internal_blocks()
        ],
        SMALL,
    )
    assert len(spilled) == 4 and sum(spilled) == 3000
    keyed = both(
        budget,
        lambda: pa.concat_tables(
            _dataset(table).repartition(5, keys=["key"], sort=True).iter_internal_blocks()
        ),
    )
    assert keyed.sort_by("id").equals(table)
    streamed = run(
        lambda: [
            b.num_rows
            for b in _dataset(table).repartition(target_num_rows_per_block=700).iter_internal_blocks()
        ],
        SMALL,
    )
    assert streamed == [700] * 4 + [200]


def test_schema_and_columns_without_fetching_know_what_ray_knows(tmp_path, ray_data):
    ember.data.range(5).write_parquet(str(tmp_path / "pq"))
    (tmp_path / "a.csv").write_text("x\n1\n")
    cases = {
        "range": lambda rd: rd.range(3),
        "items": lambda rd: rd.from_items([{"a": 1}]),
        "arrow": lambda rd: rd.from_arrow(pa.table({"a": [1]})),
        "parquet": lambda rd: rd.read_parquet(str(tmp_path / "pq")),
        "csv": lambda rd: rd.read_csv(str(tmp_path / "a.csv")),
        "map": lambda rd: rd.range(3).map(lambda r: r),
        "sort": lambda rd: rd.range(3).sort("id"),
        "limit": lambda rd: rd.range(3).limit(1),
        "filter": lambda rd: rd.range(3).filter(lambda r: True),
        "materialized": lambda rd: rd.range(3).map(lambda r: r).materialize(),
    }
    for name, make in cases.items():
        ours, theirs = make(ember.data), make(ray_data)
        our_schema, their_schema = ours.schema(fetch_if_missing=False), theirs.schema(fetch_if_missing=False)
        assert (our_schema is None) == (their_schema is None), name
        assert ours.columns(fetch_if_missing=False) == theirs.columns(fetch_if_missing=False), name
        assert ours.columns() == theirs.columns(), name
    mapped = ember.data.range(3).map(lambda r: r)
    assert mapped.columns(fetch_if_missing=False) is None
    assert mapped.schema().names == ["id"] and mapped.columns(fetch_if_missing=False) == [
        "id"
    ]  # fetched once
