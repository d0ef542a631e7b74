"""Ray Data 2.60's newer aggregations: CountDistinct, AsList, ValueCounter, ZeroPercentage,
MissingValuePercentage, ApproximateQuantile/TopK (exact in ember), AggregateFnV2 subclasses and
zero_factory on Min/Max/AbsMax -- compared with real ray.data on the same rows where Ray runs them."""

from __future__ import annotations

import collections
import math
import pickle

import numpy as np
import pyarrow.compute as pc
import pytest

import ember.data
from ember.data.aggregate import (
    AbsMax,
    AggregateFnV2,
    ApproximateQuantile,
    ApproximateTopK,
    AsList,
    CountDistinct,
    Max,
    Min,
    MissingValuePercentage,
    Sum,
    ValueCounter,
    VectorizedAggregateFnV2,
    ZeroPercentage,
)
from ember.errors import ConfigError, DataError

ITEMS = [
    {"g": "a", "x": 1.0, "y": 1},
    {"g": "a", "x": None, "y": None},
    {"g": "b", "x": 0.0, "y": 2},
    {"g": "b", "x": -5.0, "y": 3},
    {"g": "c", "x": None, "y": None},
    {"g": "a", "x": 1.0, "y": 4},
    {"g": "b", "x": 0.0, "y": None},
    {"g": "a", "x": float("nan"), "y": 5},
]


class _ScaledSum:
    """A user's AggregateFnV2 subclass, built the same way for ember and for Ray."""

    @staticmethod
    def make(base: type, ignore_nulls: bool):
        class ScaledSum(base):
            def __init__(self, on):
                super().__init__(
                    f"scaled_sum({on})", zero_factory=lambda: 0, on=on, ignore_nulls=ignore_nulls
                )

            def aggregate_block(self, block):
                return pc.sum(block[self.get_target_column()]).as_py()

            def combine(self, current, new):
                return current + new

            def finalize(self, accumulator):
                return accumulator * 10

        return ScaledSum


def _profile(module, ignore_nulls_sum: bool = True):
    """The same aggregations from ember's or Ray's aggregate module."""
    base = module.AggregateFnV2
    return [
        module.CountDistinct("x"),
        module.CountDistinct("x", ignore_nulls=False, alias_name="cd_nulls"),
        module.AsList("x"),
        module.AsList("x", ignore_nulls=True, alias_name="list_no_nulls"),
        module.ValueCounter("g"),
        module.ZeroPercentage("x"),
        module.ZeroPercentage("x", ignore_nulls=False, alias_name="zero_nulls"),
        module.MissingValuePercentage("x"),
        _ScaledSum.make(base, ignore_nulls_sum)("y"),  # y: a NaN's effect on a sum depends on Ray's blocks
    ]


def _normal(value):
    """One comparable form: lists as sorted multisets (Ray's order depends on its tasks); a null scalar
    and NaN as one marker (ember's take_all gives a float column's nulls as NaN, Ray as None)."""
    if hasattr(value, "to_pylist"):  # Ray gives an empty AsList as an empty ChunkedArray
        value = value.to_pylist()
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "null"
    if isinstance(value, dict) and set(value) == {"values", "counts"}:
        return sorted(zip(map(repr, value["values"]), value["counts"], strict=True))
    if isinstance(value, list):
        return sorted(map(repr, value))
    return value


def _normal_row(row: dict) -> dict:
    return {k: _normal(v) for k, v in row.items()}


ray = pytest.importorskip("ray")


def test_whole_dataset_aggregations_match_ray(local_ray):
    import ray.data.aggregate as ray_aggregate

    import ember.data.aggregate as ember_aggregate

    ours = ember.data.from_items(ITEMS).repartition(3).aggregate(*_profile(ember_aggregate))
    theirs = ray.data.from_items(ITEMS).aggregate(*_profile(ray_aggregate))
    assert _normal_row(ours) == _normal_row(theirs)
    assert ours["count_distinct(x)"] == 4 and ours["missing_pct(x)"] == 37.5  # 2 nulls and a NaN of 8


def test_grouped_aggregations_match_ray(local_ray):
    import ray.data.aggregate as ray_aggregate

    import ember.data.aggregate as ember_aggregate

    ours = ember.data.from_items(ITEMS).groupby("g").aggregate(*_profile(ember_aggregate, False)).take_all()
    theirs = ray.data.from_items(ITEMS).groupby("g").aggregate(*_profile(ray_aggregate, False)).take_all()
    assert [_normal_row(r) for r in ours] == sorted((_normal_row(r) for r in theirs), key=lambda r: r["g"])
    by_group = {r["g"]: r for r in ours}
    assert by_group["c"]["count_distinct(x)"] == 0 and _normal(by_group["c"]["zero_pct(x)"]) == "null"


def test_empty_input_matches_ray(local_ray):
    import ray.data.aggregate as ray_aggregate

    import ember.data.aggregate as ember_aggregate

    def aggs(module):
        return [
            module.Count(),
            module.CountDistinct("x"),
            module.CountDistinct("x", ignore_nulls=False, alias_name="cd"),
            module.ValueCounter("x"),
            module.ZeroPercentage("x"),
            module.MissingValuePercentage("x"),
            module.Min("x"),
            module.Min("x", ignore_nulls=False, alias_name="min_inf"),
            module.Min("x", ignore_nulls=False, zero_factory=lambda: 7, alias_name="min_7"),
            module.Max("x", ignore_nulls=False, zero_factory=lambda: 7, alias_name="max_7"),
            module.AbsMax("x", ignore_nulls=False),
            module.Sum("x", ignore_nulls=False),
            _ScaledSum.make(module.AggregateFnV2, True)("x"),
        ]

    ours = ember.data.from_items([{"x": 1}]).filter(lambda r: False).aggregate(*aggs(ember_aggregate))
    theirs = ray.data.from_items([{"x": 1}]).filter(lambda r: False).aggregate(*aggs(ray_aggregate))
    assert ours == theirs
    assert ours["min_inf"] == math.inf and ours["sum(x)"] == 0 and ours["count_distinct(x)"] is None


def test_v2_without_ignoring_nulls_gives_the_zero_on_empty_input():
    ScaledSum = _ScaledSum.make(AggregateFnV2, ignore_nulls=False)
    empty = ember.data.range(3).filter(lambda r: False)
    assert empty.aggregate(ScaledSum("id")) == {"scaled_sum(id)": 0}  # finalize(zero_factory())
    assert ember.data.range(4).aggregate(ScaledSum("id")) == {"scaled_sum(id)": 60}


def test_zero_factory_is_not_folded_into_a_result_with_values():
    ds = ember.data.from_items([{"x": 1}, {"x": 2}, {"x": -3}])
    result = ds.aggregate(
        Min("x", ignore_nulls=False, zero_factory=lambda: -100),
        Max("x", ignore_nulls=False, zero_factory=lambda: 100),
        AbsMax("x", ignore_nulls=False, zero_factory=lambda: 100),
    )
    assert result == {"min(x)": -3, "max(x)": 2, "abs_max(x)": 3}
    with_null = ember.data.from_items([{"x": 1}, {"x": None}])
    assert with_null.aggregate(Min("x", ignore_nulls=False, zero_factory=lambda: 0)) == {"min(x)": None}


def test_many_blocks_give_the_one_block_answer():
    rng = np.random.default_rng(3)
    items = [
        {"k": int(k), "v": None if m else int(v)}
        for k, v, m in zip(
            rng.integers(0, 4, 300), rng.integers(-3, 4, 300), rng.random(300) < 0.1, strict=True
        )
    ]
    aggs = [
        CountDistinct("v"),
        ValueCounter("v"),
        ZeroPercentage("v"),
        MissingValuePercentage("v"),
        AsList("v", ignore_nulls=True),
    ]
    one = ember.data.from_items(items).aggregate(*aggs)
    many = ember.data.from_items(items).repartition(7).aggregate(*aggs)
    assert _normal_row(one) == _normal_row(many)
    values = [i["v"] for i in items]
    assert one["count_distinct(v)"] == len({v for v in values if v is not None})
    assert dict(
        zip(one["value_counter(v)"]["values"], one["value_counter(v)"]["counts"], strict=True)
    ) == dict(collections.Counter(values))
    assert one["zero_pct(v)"] == pytest.approx(100 * values.count(0) / sum(v is not None for v in values))


def test_approximate_quantile_is_the_exact_quantile_by_the_sketchs_rule():
    rng = np.random.default_rng(0)
    values = rng.normal(size=500)
    quantiles = [0.0, 0.1, 0.25, 0.5, 0.9, 0.99, 1.0]
    ds = ember.data.from_items([{"v": float(v)} for v in values] + [{"v": None}]).repartition(4)
    got = ds.aggregate(ApproximateQuantile("v", quantiles=quantiles))["approx_quantile(v)"]
    ordered = np.sort(values.astype(np.float32))  # the sketch holds 32-bit floats
    # the smallest value with more than a q share of the values at or below it (q*n whole: the next one)
    assert got == [float(ordered[min(499, int(np.floor(q * 500)))]) for q in quantiles]
    assert got[1] == float(ordered[50])
    by_group = ember.data.from_items([{"k": i % 2, "v": float(i)} for i in range(10)]).groupby("k")
    assert by_group.aggregate(ApproximateQuantile("v", [0.5])).take_all() == [
        {"k": 0, "approx_quantile(v)": [4.0]},
        {"k": 1, "approx_quantile(v)": [5.0]},
    ]


def test_approximate_top_k_is_the_exact_top_k():
    words = list("abracadabra") + [None, None]
    ds = ember.data.from_items([{"w": w} for w in words]).repartition(3)
    got = ds.aggregate(ApproximateTopK("w", k=3))["approx_topk(w)"]
    expected = collections.Counter(w for w in words if w is not None).most_common(3)
    assert got == [{"w": w, "count": n} for w, n in expected]
    lists = ember.data.from_items([{"l": [1, 2]}, {"l": [2, None]}, {"l": [2]}])
    assert lists.aggregate(ApproximateTopK("l", k=1, encode_lists=True)) == {
        "approx_topk(l)": [{"l": 2, "count": 3}]
    }
    assert lists.aggregate(ApproximateTopK("l", k=1)) == {"approx_topk(l)": [{"l": [1, 2], "count": 1}]}


def test_vectorized_subclass_runs_whole_and_grouped():
    class Total(VectorizedAggregateFnV2):
        def __init__(self, on):
            super().__init__(f"total({on})", zero_factory=lambda: 0, on=on, ignore_nulls=True)

        def aggregate_block(self, block):
            return pc.sum(block[self.get_target_column()]).as_py()

        def _combine_column(self, column):
            return pc.sum(column).as_py()

    ds = ember.data.from_items([{"k": i % 3, "v": i} for i in range(12)]).repartition(4)
    assert ds.aggregate(Total("v")) == {"total(v)": 66}
    assert ds.groupby("k").aggregate(Total("v")).take_all() == [
        {"k": k, "total(v)": sum(i for i in range(12) if i % 3 == k)} for k in range(3)
    ]


def test_aggregations_pickle_and_still_work():
    aggs = [
        CountDistinct("x"),
        ApproximateTopK("x", k=2),
        ApproximateQuantile("x", [0.5]),
        Sum("x"),
        Min("x", ignore_nulls=False),
    ]
    copies = [pickle.loads(pickle.dumps(a)) for a in aggs]
    ds = ember.data.from_items([{"x": 3}, {"x": 1}, {"x": 3}])
    assert ds.aggregate(*copies) == ds.aggregate(*aggs)


def test_bad_arguments_are_refused_in_one_line():
    class Nameless(AggregateFnV2):
        def __init__(self):
            super().__init__("", zero_factory=int, on=None, ignore_nulls=True)

    with pytest.raises(ConfigError, match="name"):
        Nameless()
    with pytest.raises(ConfigError, match="quantiles"):
        ApproximateQuantile("x", quantiles=[1.5])
    with pytest.raises(ConfigError, match="k="):
        ApproximateTopK("x", k=0)
    with pytest.raises(DataError, match="no such column"):
        ember.data.range(3).aggregate(CountDistinct("nope"))


def test_the_ray_backend_gives_the_local_answers(local_ray):
    import ember.data.aggregate as ember_aggregate

    context = ember.data.DataContext.get_current()

    def both():
        ds = ember.data.from_items(ITEMS)
        return ds.aggregate(*_profile(ember_aggregate)), ds.groupby("g").aggregate(
            *_profile(ember_aggregate)
        ).take_all()

    local = both()
    before = context.execution
    context.execution = "ray"
    try:
        on_ray = both()
    finally:
        context.execution = before
    assert _normal_row(on_ray[0]) == _normal_row(local[0])
    assert [_normal_row(r) for r in on_ray[1]] == [_normal_row(r) for r in local[1]]


def test_unique_of_lists_and_structs_and_encode_lists():
    from ember.data.aggregate import Unique

    ds = ember.data.from_items(
        [{"l": [1, 2], "s": {"a": 1}}, {"l": [2, 3], "s": {"a": 1}}, {"l": [1, 2], "s": None}]
    )
    result = ds.repartition(2).aggregate(
        Unique("l"), Unique("s"), Unique("l", encode_lists=True, alias_name="items")
    )
    assert result == {"unique(l)": [[1, 2], [2, 3]], "unique(s)": [{"a": 1}, None], "items": [1, 2, 3]}
    with pytest.raises(ConfigError, match="encode_lists"):
        Unique("l", encode_lists="HASH")
