"""The aggregation protocol every aggregation follows, and the helpers the executors call.

An aggregation is an accumulator: ``init()``, ``accumulate_block(acc, table)``, ``merge(a, b)``,
``finalize(acc)``, and an output column ``name``. A whole-dataset aggregation streams block by
block; a grouped one runs on whole groups after the groupby has partitioned them.

Example:
    >>> import pyarrow as pa
    >>> from ember.data.aggregate import Count, Sum
    >>> aggregate_table(pa.table({"x": [1, 2, None]}), (Count(), Sum("x")))
    {'count()': 3, 'sum(x)': 3}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from ember.errors import ConfigError


class AggregateFn:
    """A custom aggregation (Ray's ``AggregateFn``): ``init(key)``, ``accumulate_row(acc, row)`` or
    ``accumulate_block(acc, table)``, ``merge(a, b)``, ``finalize(acc)``, output column ``name``.

    Example:
        >>> import ember.data
        >>> total = AggregateFn(init=lambda k: 0, merge=lambda a, b: a + b, name="total",
        ...                     accumulate_row=lambda acc, row: acc + row["id"])
        >>> ember.data.range(5).aggregate(total)
        {'total': 10}
    """

    def __init__(self, init: Callable[[Any], Any], merge: Callable[[Any, Any], Any], name: str,
                 accumulate_row: Callable | None = None, accumulate_block: Callable | None = None,
                 finalize: Callable[[Any], Any] | None = None) -> None:
        if (accumulate_row is None) == (accumulate_block is None):
            raise ConfigError("AggregateFn needs exactly one of accumulate_row= or accumulate_block=")
        self._init, self._merge, self.name = init, merge, name
        self._row, self._block, self._finalize = accumulate_row, accumulate_block, finalize
        self.key: Any = None

    def init(self) -> Any:
        return self._init(self.key)

    def accumulate_block(self, acc: Any, table: pa.Table) -> Any:
        if self._block is not None:
            return self._block(acc, table)
        for row in table.to_pylist():
            acc = self._row(acc, row)
        return acc

    def merge(self, a: Any, b: Any) -> Any:
        return self._merge(a, b)

    def finalize(self, acc: Any) -> Any:
        return self._finalize(acc) if self._finalize is not None else acc

    def columns_read(self) -> tuple[str, ...] | None:
        """The input columns this aggregation reads, or None when unknown (a user's function may read
        any column). Known columns let a groupby drop the rest before it partitions the rows."""
        return None

    def validate(self, columns: list[str]) -> None:
        """Checks the columns it needs exist (custom aggregations check nothing)."""


def hashable(value: Any) -> Any:
    """``value`` usable as a dict key (lists become tuples, structs sorted item tuples, recursively).

    Example:
        >>> hashable([1, [2]]), hashable({"b": 1, "a": [2]})
        ((1, (2,)), (('a', (2,)), ('b', 1)))
    """
    if isinstance(value, list):
        return tuple(hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, hashable(v)) for k, v in value.items()))
    return value


def check_aggs(aggs: tuple[Any, ...], where: str) -> tuple[AggregateFn, ...]:
    """At least one aggregation, each an AggregateFn, with distinct output names."""
    if not aggs:
        raise ConfigError(f"{where}() needs at least one aggregation, e.g. {where}(Count(), Sum('x'))")
    for agg in aggs:
        if not isinstance(agg, AggregateFn):
            raise ConfigError(f"{where}({agg!r}): not an aggregation; use ember.data.aggregate Count/Sum/... "
                              "or AggregateFn")
    names = [a.name for a in aggs]
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}: two aggregations named {sorted(n for n in names if names.count(n) > 1)[0]!r}; "
                          "give one an alias_name")
    return tuple(aggs)


def aggregate_table(table: pa.Table, aggs: tuple[AggregateFn, ...], key: Any = None) -> dict[str, Any]:
    """Every aggregation over one whole table (one group)."""
    out = {}
    for agg in aggs:
        agg.key = key
        out[agg.name] = agg.finalize(agg.accumulate_block(agg.init(), table))
    return out
