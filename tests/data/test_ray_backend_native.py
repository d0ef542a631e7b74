"""Where ember on Ray runs Ray Data's own operators, and where it keeps its own code (and why).

- Grouped Count/Min/Max run as Ray Data's ``groupby(keys).aggregate`` (``ray_backend/native_aggregate.py``)
  and give the local executor's rows exactly -- the same values, the same key order, the same column
  types -- and the values Ray Data itself gives for the same calls. Other aggregations keep ember's
  per-group code (compared in test_ray_backend.py).
- Joins keep ember's join in a Ray task (``ray_backend/ember_task.py``): Ray 2.60's ``Dataset.join``
  needs the ``polars`` package; where polars is installed its rows are compared with ember's here.
"""

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
    return pa.table(
        {
            "k": pa.array([(i * 7) % 5 for i in range(n)], pa.int32()),
            "s": pa.array([None if i == 4 else "abc"[i % 3] for i in range(n)]),
            "x": pa.array([None if i % 4 == 0 else (i * 37) % 101 - 50 for i in range(n)], pa.int32()),
            "f": pa.array([math.nan if i == 13 else i * 0.1 for i in range(n)], pa.float64()),
            "z": pa.array([None if i % 5 == 2 else i for i in range(n)], pa.int64()),
        }
    )


def dataset() -> ember.data.Dataset:
    return ember.data.from_arrow(table()).repartition(5)  # 5 blocks: partials merged across blocks


AGGS = (
    Count(),
    Count("x", ignore_nulls=True, alias_name="valid_x"),
    Count("x", alias_name="all_x"),
    Min("x"),
    Max("x"),
    Min("x", ignore_nulls=False, alias_name="strict_min"),
    Min("f"),
    Max("f"),
    Max("s"),
    Max("z", alias_name="z_or_none"),
)


def same(a, b) -> bool:
    """Rows equal value for value, NaN equal to NaN."""

    def norm(rows):
        return [
            {k: "NaN" if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()} for r in rows
        ]

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
    assert "Aggregate <- " in plan and "MapBatches(Aggregate)" not in plan, (
        plan
    )  # Ray's op, not ember's groups


def test_other_aggregations_keep_embers_group_code(ray_execution):
    mixed = dataset().groupby("k").aggregate(Count(), Sum("x"))  # results: test_ray_backend.py (slow)
    assert "MapBatches(Aggregate)" in ray_execution(lambda: ray_plan(mixed))  # udfs.AggregateGroup


def test_the_same_calls_on_ray_data_give_the_same_groups(ray_execution):
    from ray.data import aggregate as ray_aggregate

    ours = ray_execution(dataset().groupby("k").aggregate(Count(), Min("x"), Max("f")).take_all)
    theirs = (
        ray.data.from_arrow(table())
        .repartition(5)
        .groupby("k")
        .aggregate(ray_aggregate.Count(), ray_aggregate.Min("x"), ray_aggregate.Max("f"))
        .take_all()
    )
    assert same(ours, sorted(theirs, key=lambda r: r["k"]))


def test_whole_dataset_aggregations_on_ray_equal_the_local_ones(ray_execution):
    from ember.data.aggregate import Std, Unique

    whole = (
        Count(),
        Min("x"),
        Max("f"),
        Max("s"),
        Sum("z"),
        Std("f"),
        Unique("s"),
    )  # ember's code in one Ray task
    assert same([ray_execution(lambda: dataset().aggregate(*whole))], [dataset().aggregate(*whole)])


def test_a_missing_column_is_embers_one_line_error_on_ray(ray_execution):
    with pytest.raises(DataError, match="no such column"):
        ray_execution(dataset().groupby("k").aggregate(Max("nope")).take_all)
    with pytest.raises(DataError, match="no column 'nope'"):
        ray_execution(dataset().groupby("nope").count().take_all)


def _join_inputs():
    left = pa.table(
        {
            "id": pa.array([1, 2, 2, 3, None, 7]),
            "v": ["a", "b", "c", "d", "e", "f"],
            "x": [1.5, 2.5, None, 4.0, 5.0, 6.0],
        }
    )
    right = pa.table(
        {
            "rid": pa.array([2, 3, 3, 4, None]),
            "v": ["B", "C", "C2", "D", "N"],
            "y": pa.array([20, 30, 31, 40, 50], pa.int16()),
        }
    )
    return left, right


def _rows(table: pa.Table):
    return sorted(table.to_pylist(), key=repr)


def _joined(how: str) -> ember.data.Dataset:
    left, right = _join_inputs()
    return ember.data.from_arrow(left).join(
        ember.data.from_arrow(right),
        how,
        2,
        on=("id",),
        right_on=("rid",),
        left_suffix="_l",
        right_suffix="_r",
    )


def test_a_join_on_ray_is_embers_join_in_a_ray_task(ray_execution):
    joined = _joined("right_outer")  # (inner, left_outer, full_outer: test_ray_backend.py)
    local, on_ray = joined.to_arrow(), ray_execution(joined.to_arrow)
    assert _rows(on_ray) == _rows(local) and on_ray.schema == local.schema and local.num_rows == 6
    assert "MapBatches" not in ray_execution(lambda: ray_plan(joined))  # one task's output, not Ray's Join


def test_rays_own_join_gives_embers_rows_or_cannot_run_without_polars(local_ray):
    """With polars, Ray's join gives ember's rows and column names (strings as large_string);
    without it Ray's join cannot run at all, which is one reason ember keeps its own join."""
    left, right = _join_inputs()

    def rays(how: str):
        return ray.data.from_arrow(left).join(
            ray.data.from_arrow(right),
            how,
            2,
            on=("id",),
            right_on=("rid",),
            left_suffix="_l",
            right_suffix="_r",
        )

    try:
        import polars  # noqa: F401
    except ImportError:
        with pytest.raises(Exception, match="polars"):
            rays("inner").materialize()
        return
    for how in ("inner", "left_outer", "right_outer", "full_outer"):
        theirs, ours = pa.concat_tables(ray.get(rays(how).to_arrow_refs())), _joined(how).to_arrow()
        assert (
            _rows(theirs) == _rows(ours) and theirs.schema.names == ours.schema.names and ours.num_rows >= 3
        )


def test_mix_runs_as_rays_mix_with_the_local_rows(ray_execution):
    """Dataset.mix on Ray is Ray Data's own mix: the same rows as locally (drawn by Ray's block layout, so
    compared as multisets). STOP_ON_SHORTEST is not compared: where Ray stops depends on when its inputs
    report that they are finished (docs/data.md)."""
    a = ember.data.range(8, override_num_blocks=4)
    b = ember.data.range(4, override_num_blocks=2).map(lambda r: {"id": r["id"] + 100})

    def rows(ds):
        return sorted(r["id"] for r in ds.take_all())

    local = rows(a.mix(b, weights=[2, 1]))
    assert (
        ray_execution(lambda: rows(a.mix(b, weights=[2, 1])))
        == local
        == list(range(8)) + [100, 101, 102, 103]
    )
