"""Aggregations for ``Dataset.aggregate`` and ``groupby(...).aggregate`` (Ray Data 2.60's names).

- ``base``: the accumulator protocol (``AggregateFn``) and the helpers the executors call.
- ``builtin``: Count, Sum, Min, Max, AbsMax, Mean, Std, Quantile, Unique.
- ``v2``: ``AggregateFnV2`` / ``VectorizedAggregateFnV2``, the bases users subclass, with Ray's null rules.
- ``profiling``: CountDistinct, AsList, ValueCounter, ZeroPercentage, MissingValuePercentage.
- ``approximate``: ApproximateQuantile, ApproximateTopK (computed exactly; no datasketches needed).

A whole-dataset aggregation streams block by block (constant memory, except those that keep values:
Quantile, Unique, AsList, CountDistinct, ApproximateQuantile); a grouped one runs on whole groups
after the groupby has partitioned them (to disk past the memory budget).

Example:
    >>> import ember.data
    >>> from ember.data.aggregate import Count, Mean
    >>> ember.data.range(10).aggregate(Count(), Mean("id"))
    {'count()': 10, 'mean(id)': 4.5}
"""

from ember.data.aggregate.approximate import ApproximateQuantile, ApproximateTopK
from ember.data.aggregate.base import AggregateFn, aggregate_table, check_aggs
from ember.data.aggregate.builtin import AbsMax, Count, Max, Mean, Min, Quantile, Std, Sum, Unique
from ember.data.aggregate.profiling import (
    AsList,
    CountDistinct,
    MissingValuePercentage,
    ValueCounter,
    ZeroPercentage,
)
from ember.data.aggregate.v2 import AggregateFnV2, VectorizedAggregateFnV2

__all__ = [
    "AbsMax",
    "AggregateFn",
    "AggregateFnV2",
    "ApproximateQuantile",
    "ApproximateTopK",
    "AsList",
    "Count",
    "CountDistinct",
    "Max",
    "Mean",
    "Min",
    "MissingValuePercentage",
    "Quantile",
    "Std",
    "Sum",
    "Unique",
    "ValueCounter",
    "VectorizedAggregateFnV2",
    "ZeroPercentage",
    "aggregate_table",
    "check_aggs",
]
