"""``AggregateFnV2``: the aggregation base users subclass (Ray Data 2.60's protocol and null rules).

A subclass implements ``aggregate_block(block) -> accumulator`` (``block`` is a ``pyarrow.Table``),
``combine(current, new) -> accumulator`` and optionally ``finalize(accumulator) -> result``; the
constructor takes ``name``, ``zero_factory``, ``on`` and ``ignore_nulls``. Nulls follow Ray's rules
(a null is ``None`` or NaN):

- ``ignore_nulls=True``: the accumulator starts empty (null); a null from ``aggregate_block`` is
  skipped; the result is null only when no block gave a value.
- ``ignore_nulls=False``: the accumulator starts at ``zero_factory()``; a null from
  ``aggregate_block`` makes the result null.
- ``finalize`` is not called on a null accumulator (the result is null). Empty blocks are skipped,
  so an empty dataset gives null (``ignore_nulls=True``) or ``finalize(zero_factory())``.

Example:
    >>> import ember.data
    >>> import pyarrow.compute as pc
    >>> class SumOfSquares(AggregateFnV2):
    ...     def __init__(self, on):
    ...         super().__init__(f"sum_sq({on})", zero_factory=lambda: 0, on=on, ignore_nulls=True)
    ...     def aggregate_block(self, block):
    ...         column = block[self.get_target_column()]
    ...         return pc.sum(pc.multiply(column, column)).as_py()
    ...     def combine(self, current, new):
    ...         return current + new
    >>> ember.data.range(4).aggregate(SumOfSquares("id"))
    {'sum_sq(id)': 14}
    >>> ds = ember.data.from_items([{"k": 0, "v": 3}, {"k": 1, "v": 1}, {"k": 0, "v": 4}])
    >>> ds.groupby("k").aggregate(SumOfSquares("v")).take_all()
    [{'k': 0, 'sum_sq(v)': 25}, {'k': 1, 'sum_sq(v)': 1}]
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from ember.data.aggregate.base import AggregateFn
from ember.data.ray_errors import DataValueError  # Ray raises ValueError here
from ember.errors import ConfigError

#: "sum(x)" -> "sum": the aggregation's kind, as Ray's get_agg_name() reports it.
_AGG_NAME = re.compile(r"^(\w+)\(.*\)$")


def is_null(value: Any) -> bool:
    """None or a float NaN: what Ray's aggregations treat as a null accumulator.

    Example:
        >>> is_null(None), is_null(float("nan")), is_null(0), is_null([])
        (True, True, False, False)
    """
    return value is None or (isinstance(value, float) and math.isnan(value))


def _null_safe_finalize(finalize: Callable[..., Any]) -> Callable[..., Any]:
    """``finalize`` that hands a null accumulator through untouched (Ray never finalizes a null)."""

    @functools.wraps(finalize)
    def safe(self: Any, accumulator: Any) -> Any:
        return accumulator if is_null(accumulator) else finalize(self, accumulator)

    safe._ember_null_safe = True  # type: ignore[attr-defined]  # ember's mark on the wrapper
    return safe


class AggregateFnV2(AggregateFn):
    """Base class for a custom aggregation (Ray's ``AggregateFnV2``): subclass it and implement
    ``aggregate_block`` and ``combine`` (and ``finalize`` when the accumulator is not the result).

    Example:
        >>> import ember.data
        >>> class Longest(AggregateFnV2):
        ...     def __init__(self, on):
        ...         super().__init__(f"longest({on})", zero_factory=lambda: "", on=on, ignore_nulls=True)
        ...     def aggregate_block(self, block):
        ...         return max(block[self.get_target_column()].drop_null().to_pylist(), key=len, default=None)
        ...     def combine(self, current, new):
        ...         return max(current, new, key=len)
        ...     def finalize(self, accumulator):
        ...         return accumulator.upper()
        >>> ember.data.from_items([{"w": "ab"}, {"w": None}, {"w": "abc"}]).aggregate(Longest("w"))
        {'longest(w)': 'ABC'}
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The executors call finalize(acc) directly; a subclass's finalize is the user's hook, so it
        # gets Ray's null rule here, once per class (a class attribute, so instances still pickle).
        own = cls.__dict__.get("finalize")
        if own is not None and not getattr(own, "_ember_null_safe", False):
            cls.finalize = _null_safe_finalize(own)  # type: ignore[method-assign]  # wrapping it is the point

    def __init__(
        self, name: str, zero_factory: Callable[[], Any], *, on: str | None, ignore_nulls: bool
    ) -> None:
        if not name or not isinstance(name, str):
            raise ConfigError(
                f"{type(self).__name__}: name must be a non-empty string (got {name!r}); "
                "it names the output column, e.g. 'sum(x)'"
            )
        self.name = name
        self.key: Any = None
        self._target_col_name = on
        self._ignore_nulls = ignore_nulls
        self._zero_factory = zero_factory
        match = _AGG_NAME.match(name)
        self._agg_name = match.group(1) if match else name

    def get_target_column(self) -> str | None:
        """The column it aggregates (``on``), or None for a whole-row aggregation.

        Example:
            >>> from ember.data.aggregate import CountDistinct
            >>> CountDistinct("x").get_target_column()
            'x'
        """
        return self._target_col_name

    def get_agg_name(self) -> str:
        """The aggregation's kind: ``"sum"`` for an aggregation named ``"sum(x)"``.

        Example:
            >>> from ember.data.aggregate import CountDistinct
            >>> CountDistinct("x").get_agg_name()
            'count_distinct'
        """
        return self._agg_name

    def aggregate_block(self, block: pa.Table) -> Any:
        """The partial accumulator of one block (a ``pyarrow.Table``); subclasses implement it.

        Example:
            >>> import pyarrow as pa
            >>> from ember.data.aggregate import ZeroPercentage
            >>> ZeroPercentage("x").aggregate_block(pa.table({"x": [0, 1, None]}))
            [1, 2]
        """
        raise NotImplementedError(f"{type(self).__name__} must implement aggregate_block(block)")

    def combine(self, current_accumulator: Any, new: Any) -> Any:
        """Two accumulators merged into one; subclasses implement it.

        Example:
            >>> from ember.data.aggregate import ZeroPercentage
            >>> ZeroPercentage("x").combine([1, 2], [0, 3])
            [1, 5]
        """
        raise NotImplementedError(f"{type(self).__name__} must implement combine(current, new)")

    def finalize(self, accumulator: Any) -> Any:
        """The result from the final accumulator (the accumulator itself unless overridden).

        Example:
            >>> from ember.data.aggregate import ZeroPercentage
            >>> ZeroPercentage("x").finalize([1, 4])
            25.0
        """
        return accumulator

    # ---- the AggregateFn protocol the executors drive, with Ray's null rules

    def init(self) -> Any:
        return None if self._ignore_nulls else self._zero_factory()

    def accumulate_block(self, acc: Any, table: pa.Table) -> Any:
        if table.num_rows == 0:  # Ray never aggregates an empty block: an empty input stays "no value"
            return acc
        partial = self.aggregate_block(table)
        if is_null(partial) and self._ignore_nulls:
            partial = None
        return self.merge(acc, partial)

    def merge(self, a: Any, b: Any) -> Any:
        if self._ignore_nulls:
            if is_null(a):
                return b
            return a if is_null(b) else self.combine(a, b)
        if is_null(b):
            return b
        return a if is_null(a) else self.combine(a, b)

    def validate(self, columns: list[str]) -> None:
        """Checks that ``on`` is a column of the dataset (before any block is aggregated)."""
        on = self._target_col_name
        if on is not None and columns and on not in columns:
            raise DataValueError(
                f"{type(self).__name__}(on={on!r}): no such column; the dataset has columns {columns}"
            )


class VectorizedAggregateFnV2(AggregateFnV2):
    """An ``AggregateFnV2`` whose partial accumulators are merged as a column (Ray's
    ``VectorizedAggregateFnV2``): implement ``aggregate_block`` and ``_combine_column(column)``,
    which reduces a ``pyarrow.Array`` of accumulators to one; ember calls it on pairs.

    Example:
        >>> import ember.data
        >>> import pyarrow.compute as pc
        >>> class Total(VectorizedAggregateFnV2):
        ...     def __init__(self, on):
        ...         super().__init__(f"total({on})", zero_factory=lambda: 0, on=on, ignore_nulls=True)
        ...     def aggregate_block(self, block):
        ...         return pc.sum(block[self.get_target_column()]).as_py()
        ...     def _combine_column(self, column):
        ...         return pc.sum(column).as_py()
        >>> ember.data.range(5).aggregate(Total("id"))
        {'total(id)': 10}
    """

    def combine(self, current_accumulator: Any, new: Any) -> Any:
        return self._combine_column(pa.array([current_accumulator, new]))

    def _combine_column(self, accumulator_col: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement _combine_column(accumulator_col)")
