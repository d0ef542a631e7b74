"""Column-profiling aggregations (Ray Data 2.60): CountDistinct, AsList, ValueCounter,
ZeroPercentage, MissingValuePercentage.

All are ``AggregateFnV2`` subclasses, so they follow Ray's null rules (see ``aggregate.v2``) and
run the same way in ``Dataset.aggregate`` and ``groupby(...).aggregate``. Values keep the input
order (Ray's order depends on how its tasks finish; compare them as sets or counts).

Example:
    >>> import ember.data
    >>> ds = ember.data.from_items([{"x": 0}, {"x": 2}, {"x": None}, {"x": 2}])
    >>> ds.aggregate(CountDistinct("x"), ZeroPercentage("x"), MissingValuePercentage("x"))
    {'count_distinct(x)': 2, 'zero_pct(x)': 33.33333333333333, 'missing_pct(x)': 25.0}
"""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ember.data.aggregate.base import hashable
from ember.data.aggregate.v2 import AggregateFnV2


class _NaNKey:
    """The one dict/set key every float NaN maps to (NaN != NaN, so NaNs would never merge)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _NaNKey)

    def __hash__(self) -> int:
        return 0x7FF8


def value_key(value: Any) -> Any:
    """A hashable key for ``value``: lists become tuples, every NaN the same key.

    Example:
        >>> value_key([1, 2]), value_key(float("nan")) == value_key(float("nan"))
        ((1, 2), True)
    """
    if isinstance(value, float) and math.isnan(value):
        return _NaNKey()
    return hashable(value)


def _column(table: pa.Table, on: str, drop_nulls: bool) -> pa.ChunkedArray:
    values = table.column(on)
    return values.drop_null() if drop_nulls and values.null_count else values


class CountDistinct(AggregateFnV2):
    """Number of distinct values of ``on`` (SQL's ``COUNT(DISTINCT on)``); a null counts as one
    value when ``ignore_nulls=False``. Output ``count_distinct(on)``.

    Example:
        >>> import ember.data
        >>> ds = ember.data.from_items([{"g": "x", "c": "A"}, {"g": "x", "c": "B"}, {"g": "y", "c": "A"}])
        >>> ds.groupby("g").aggregate(CountDistinct("c")).take_all()
        [{'g': 'x', 'count_distinct(c)': 2}, {'g': 'y', 'count_distinct(c)': 1}]
    """

    def __init__(self, on: str, ignore_nulls: bool = True, alias_name: str | None = None) -> None:
        super().__init__(
            alias_name or f"count_distinct({on})", zero_factory=set, on=on, ignore_nulls=ignore_nulls
        )

    def aggregate_block(self, block: pa.Table) -> set[Any]:
        assert self._target_col_name is not None  # __init__ takes on: str
        values = _column(block, self._target_col_name, self._ignore_nulls)
        return {value_key(v) for v in pc.unique(values).to_pylist()}

    def combine(self, current_accumulator: set[Any], new: set[Any]) -> set[Any]:
        return current_accumulator | new

    def finalize(self, accumulator: set[Any]) -> int:
        return len(accumulator)


class AsList(AggregateFnV2):
    """Every value of ``on`` in one list (nulls included unless ``ignore_nulls=True``), in input
    order. Output ``list(on)``.

    Example:
        >>> import ember.data
        >>> ds = ember.data.from_items([{"k": 1, "v": "a"}, {"k": 2, "v": "b"}, {"k": 1, "v": None}])
        >>> ds.groupby("k").aggregate(AsList("v")).take_all()
        [{'k': 1, 'list(v)': ['a', None]}, {'k': 2, 'list(v)': ['b']}]
    """

    def __init__(self, on: str, alias_name: str | None = None, ignore_nulls: bool = False) -> None:
        super().__init__(alias_name or f"list({on})", zero_factory=list, on=on, ignore_nulls=ignore_nulls)

    def aggregate_block(self, block: pa.Table) -> list[Any]:
        assert self._target_col_name is not None  # __init__ takes on: str
        values: list[Any] = _column(block, self._target_col_name, self._ignore_nulls).to_pylist()
        return values

    def combine(self, current_accumulator: list[Any], new: list[Any]) -> list[Any]:
        return current_accumulator + new


class ValueCounter(AggregateFnV2):
    """How often each value of ``on`` occurs (pandas' ``value_counts``), null included, as
    ``{"values": [...], "counts": [...]}`` in first-seen order. Output ``value_counter(on)``.

    Example:
        >>> import ember.data
        >>> ds = ember.data.from_items([{"c": "A"}, {"c": "B"}, {"c": "A"}])
        >>> ds.aggregate(ValueCounter("c"))
        {'value_counter(c)': {'values': ['A', 'B'], 'counts': [2, 1]}}
    """

    def __init__(self, on: str, alias_name: str | None = None) -> None:
        super().__init__(
            alias_name or f"value_counter({on})",
            zero_factory=lambda: {"values": [], "counts": []},
            on=on,
            ignore_nulls=True,
        )

    def aggregate_block(self, block: pa.Table) -> dict[str, list[Any]] | None:
        counts = pc.value_counts(block.column(self._target_col_name))
        if len(counts) == 0:
            return None
        return {"values": counts.field("values").to_pylist(), "counts": counts.field("counts").to_pylist()}

    def combine(
        self, current_accumulator: dict[str, list[Any]], new: dict[str, list[Any]]
    ) -> dict[str, list[Any]]:
        values, counts = current_accumulator["values"], current_accumulator["counts"]
        index = {value_key(v): i for i, v in enumerate(values)}
        for value, count in zip(new["values"], new["counts"], strict=True):
            at = index.setdefault(value_key(value), len(values))
            if at == len(values):
                values.append(value)
                counts.append(count)
            else:
                counts[at] += count
        return current_accumulator


class ZeroPercentage(AggregateFnV2):
    """Percentage (0-100) of the values of ``on`` that are zero; nulls are left out of the count
    (``ignore_nulls=True``) or count as non-zero values (``False``); None when there is no value.
    Output ``zero_pct(on)``.

    Example:
        >>> import ember.data
        >>> ds = ember.data.from_items([{"v": 0}, {"v": None}, {"v": 0}, {"v": 3}])
        >>> ds.aggregate(ZeroPercentage("v"), ZeroPercentage("v", ignore_nulls=False,
        ...     alias_name="with_nulls"))
        {'zero_pct(v)': 66.66666666666666, 'with_nulls': 50.0}
    """

    def __init__(self, on: str, ignore_nulls: bool = True, alias_name: str | None = None) -> None:
        super().__init__(
            alias_name or f"zero_pct({on})", zero_factory=lambda: [0, 0], on=on, ignore_nulls=ignore_nulls
        )

    def aggregate_block(self, block: pa.Table) -> list[int]:
        values = block.column(self._target_col_name)
        count = len(values) - (values.null_count if self._ignore_nulls else 0)
        if count == 0:
            return [0, 0]
        zeros = pc.sum(pc.equal(values, 0)).as_py() or 0
        return [zeros, count]

    def combine(self, current_accumulator: list[int], new: list[int]) -> list[int]:
        return [current_accumulator[0] + new[0], current_accumulator[1] + new[1]]

    def finalize(self, accumulator: list[int]) -> float | None:
        return None if accumulator[1] == 0 else (accumulator[0] / accumulator[1]) * 100.0


class MissingValuePercentage(AggregateFnV2):
    """Percentage (0-100) of the values of ``on`` that are missing: null or NaN. None when there
    is no row. Output ``missing_pct(on)``.

    Example:
        >>> import ember.data
        >>> ds = ember.data.from_items([{"v": 1.0}, {"v": None}, {"v": float("nan")}, {"v": 2.0}])
        >>> ds.aggregate(MissingValuePercentage("v"))
        {'missing_pct(v)': 50.0}
    """

    def __init__(self, on: str, alias_name: str | None = None) -> None:
        super().__init__(
            alias_name or f"missing_pct({on})", zero_factory=lambda: [0, 0], on=on, ignore_nulls=False
        )

    def aggregate_block(self, block: pa.Table) -> list[int]:
        values = block.column(self._target_col_name)
        missing = pc.sum(pc.is_null(values, nan_is_null=True)).as_py() or 0
        return [missing, len(values)]

    def combine(self, current_accumulator: list[int], new: list[int]) -> list[int]:
        return [current_accumulator[0] + new[0], current_accumulator[1] + new[1]]

    def finalize(self, accumulator: list[int]) -> float | None:
        return None if accumulator[1] == 0 else (accumulator[0] / accumulator[1]) * 100.0
