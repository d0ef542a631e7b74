"""Grouped aggregations on Ray: Count/Min/Max run as Ray Data's own ``groupby(keys).aggregate``
(``ray_backend/native_aggregate.py``) and give the local executor's rows exactly -- the same values,
the same key order, the same column types -- and the values Ray Data itself gives for the same calls.
Other aggregations keep ember's per-group code (compared in test_ray_backend.py)."""

from __future__ import annotations

import math
import os

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # read when Ray is first imported
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import pyarrow as pa  # noqa: E402
import pytest  # noqa: E402

import ember.data  # noqa: E402
from ember.data.aggregate import Count, Max, Min, Sum  # noqa: E402
from ember.errors import DataError  # noqa: E402

ray = pytest.importorskip("ray")


def table() -> pa.Table:
    """int32 and string keys (one null key), int32 values with nulls, floats with a NaN, a null-only group."""
    n = 90
    return pa.table({
        "k": pa.array([(i * 7) % 5 for i in range(n)], pa.int32()),
        "s": pa.array([None if i == 4 else "abc"[i % 3] for i in range(n)]),
        "x": pa.array([None if i % 4 == 0 else (i * 37) % 101 - 50 for i in range(n)], pa.int32()),
        "f": pa.array([math.nan if i == 13 else i * 0.1 for i in range(n)], pa.float64()),
        "z": pa.array([None if i % 5 == 2 else i for i in range(n)], pa.int64()),
    })


def dataset() -> ember.data.Dataset:
    return ember.data.from_arrow(table()).repartition(5)  # 5 blocks: partials merged across blocks


AGGS = (Count(), Count("x", ignore_nulls=True, alias_name="valid_x"), Count("x", alias_name="all_x"),
        Min("x"), Max("x"), Min("x", ignore_nulls=False, alias_name="strict_min"), Min("f"), Max("f"),
        Max("s"), Max("z", alias_name="z_or_none"))


def same(a, b) -> bool:
    """Rows equal value for value, NaN equal to NaN."""
    def norm(rows):
        return [{k: "NaN" if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()} for r in rows]
    return norm(a) == norm(b)


def ray_plan(ds: ember.data.Dataset) -> str:
    """The names of the Ray Data operators ``ds`` translates to, last first."""
    names, todo = [], [ds.to_ray()._logical_plan.dag]
    while todo:
        op = todo.pop()
        names.append(op.name)
        todo.extend(op.input_dependencies)
    return " <- ".join(names)


def test_count_min_max_run_as_rays_groupby_aggregate_and_equal_the_local_rows(ray_execution):
    for keys in ("k", ["s", "k"]):
        grouped = dataset().groupby(keys).aggregate(*AGGS)
        local = grouped.to_arrow()
        on_ray = ray_execution(grouped.to_arrow)
        assert same(on_ray.to_pylist(), local.to_pylist()) and local.num_rows >= 5
        assert on_ray.schema == local.schema  # int32 min/max and keys come out int64, as locally
    plan = ray_execution(lambda: ray_plan(dataset().groupby("k").count()))
    assert "Aggregate <- " in plan and "MapBatches(Aggregate)" not in plan, plan  # Ray's op, not ember's groups


def test_other_aggregations_keep_embers_group_code(ray_execution):
    mixed = dataset().groupby("k").aggregate(Count(), Sum("x"))
    assert "MapBatches(Aggregate)" in ray_execution(lambda: ray_plan(mixed))  # udfs.AggregateGroup
    assert same(ray_execution(mixed.take_all), mixed.take_all())


def test_the_same_calls_on_ray_data_give_the_same_groups(ray_execution):
    from ray.data import aggregate as ray_aggregate

    ours = ray_execution(dataset().groupby("k").aggregate(Count(), Min("x"), Max("f")).take_all)
    theirs = (ray.data.from_arrow(table()).repartition(5).groupby("k")
              .aggregate(ray_aggregate.Count(), ray_aggregate.Min("x"), ray_aggregate.Max("f")).take_all())
    assert same(ours, sorted(theirs, key=lambda r: r["k"]))


def test_a_missing_column_is_embers_one_line_error_on_ray(ray_execution):
    with pytest.raises(DataError, match="no such column"):
        ray_execution(dataset().groupby("k").aggregate(Max("nope")).take_all)
    with pytest.raises(DataError, match="no column 'nope'"):
        ray_execution(dataset().groupby("nope").count().take_all)
