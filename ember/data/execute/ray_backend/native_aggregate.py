"""A grouped ``Aggregate`` as Ray Data's own ``groupby(keys).aggregate(...)`` where that is exact.

Ray 2.60 aggregates a group in two phases: each block's rows are pre-aggregated per group (Arrow's
``group_by``), the partials are hash-shuffled and merged. Its result equals ember's local one (one
pass over each whole group) only where merging partials in any order gives the same bits:

==========  ==================================================================================
ember       on Ray (``ray.data.aggregate``), exact?
==========  ==================================================================================
Count       ``Count(on, ignore_nulls)``: an integer count of rows / (non-null) values: exact
Min, Max    ``Min``/``Max(on, ignore_nulls)``: a null with ``ignore_nulls=False`` or an all-null
            group gives None on both; ``zero_factory`` only answers an input without rows, which
            no group is: exact
Sum, Mean   not translated: float partial sums merged in shuffle-arrival order differ from the
            local sum in the last bits (and from run to run)
Std         not translated: Ray merges (count, mean, M2) partials with Chan's formula
AbsMax      not translated: Ray has no vectorized AbsMax (its Python path is slower than ember's)
Quantile    not translated: Ray interpolates with its own formula (``pc.quantile`` locally)
Unique      not translated: Ray returns the values in set order (first-seen order locally)
==========  ==================================================================================

One grouping differs: NaN float keys. Ray (Arrow's hash ``group_by``, as Ray Data) puts every NaN
key in one group; ember's local groupby compares keys with ``==`` and gives each NaN row a group of
its own. Null keys form one group on both.

Every other aggregation (and any custom ``AggregateFn``) keeps ember's own code per whole group
(``groupby(keys).map_groups``). Ray's groups come out in hash order with Arrow's column types
(``min`` of an int32 column stays int32). The translation asks Ray for one hash partition: the
blocks are pre-aggregated in parallel, one reducer merges their partials (at most one row per group
and block) into one block, and the same task sorts it by key and rebuilds it from Python rows as
the local executor builds its output (ints int64, floats double). Ray's ``sort`` would add three
stages (sample, map, reduce) for what is one row per group; the cost is that one worker holds
every group's partials, which is the aggregation's output size times at most the block count.

Example:
    >>> from ember.data.aggregate import Count, Max, Sum
    >>> [type(a).__name__ for a in ray_aggregations((Count(), Max("x", alias_name="top")), keys=("k",))]
    ['CheckedCount', 'CheckedMax']
    >>> ray_aggregations((Count(), Sum("x"))) is None
    True
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ember.data.aggregate import builtin


def ray_aggregations(aggs: tuple[Any, ...], keys: tuple[str, ...] = ()) -> list[Any] | None:
    """Ray's equal of every aggregation in ``aggs`` (checking its column and the group ``keys`` with
    ember's errors, ``ray_aggregations.py``), or None when one has no exact equal on Ray."""
    translated = [_ray_equal(agg, keys) for agg in aggs]
    return None if any(agg is None for agg in translated) else translated


def _ray_equal(agg: Any, keys: tuple[str, ...]) -> Any:
    """Ray's aggregation giving ``agg``'s grouped result exactly, or None (the module's table).
    Exact types only: a user's subclass of Count may count differently."""
    if type(agg) not in (builtin.Count, builtin.Min, builtin.Max):
        return None
    from ember.data.execute.ray_backend import ray_aggregations as checked

    kinds: dict[type, type[checked._Checked]] = {
        builtin.Count: checked.CheckedCount,
        builtin.Min: checked.CheckedMin,
        builtin.Max: checked.CheckedMax,
    }
    kind = kinds[type(agg)]
    return kind(agg, keys, on=agg.on, ignore_nulls=agg.ignore_nulls, alias_name=agg.name)


class SortedLocalRows:
    """``block -> block`` sorted by the group ``keys`` as the local executor sorts groups (ascending,
    nulls last) and rebuilt from its Python rows as the local executor builds a grouped
    aggregation's output (``pa.Table.from_pylist``): the same order and column types.

    Example:
        >>> out = SortedLocalRows(("k",))(pa.table({"k": pa.array([2, None, 1], pa.int32())}))
        >>> out.column("k").to_pylist(), out.schema.field("k").type
        ([1, 2, None], DataType(int64))
    """

    def __init__(self, keys: tuple[str, ...]) -> None:
        self.keys = keys
        self.__name__ = "SortGroups"  # Ray names the operator after it

    def __call__(self, block: pa.Table) -> pa.Table:
        if not block.num_rows:
            return block
        return pa.Table.from_pylist(block.sort_by([(k, "ascending") for k in self.keys]).to_pylist())
