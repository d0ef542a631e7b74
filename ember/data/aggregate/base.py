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

from ember.data.ray_errors import DataNotImplementedError, DataTypeError
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

    def __init__(
        self,
        init: Callable[[Any], Any],
        merge: Callable[[Any, Any], Any],
        name: str,
        accumulate_row: Callable[[Any, dict[str, Any]], Any] | None = None,
        accumulate_block: Callable[[Any, pa.Table], Any] | None = None,
        finalize: Callable[[Any], Any] | None = None,
    ) -> None:
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
        accumulate_row = self._row
        assert accumulate_row is not None  # __init__ takes exactly one of the two
        for row in table.to_pylist():
            acc = accumulate_row(acc, row)
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
            raise ConfigError(
                f"{where}({agg!r}): not an aggregation; use ember.data.aggregate Count/Sum/... or AggregateFn"
            )
    names = [a.name for a in aggs]
    if len(set(names)) != len(names):
        raise ConfigError(
            f"{where}: two aggregations named {sorted(n for n in names if names.count(n) > 1)[0]!r}; "
            "give one an alias_name"
        )
    return tuple(aggs)


def aggregate_table(table: pa.Table, aggs: tuple[AggregateFn, ...], key: Any = None) -> dict[str, Any]:
    """Every aggregation over one whole table (one group)."""
    out = {}
    for agg in aggs:
        agg.key = key
        out[agg.name] = finalized(agg, accumulated(agg, agg.init(), table), table.schema)
    return out


#: what Arrow raises when a kernel meets a type it has no implementation for (strings summed, ...)
_ARROW_TYPE_ERRORS = (pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowInvalid)


def accumulated(agg: AggregateFn, acc: Any, table: pa.Table) -> Any:
    """``agg.accumulate_block(acc, table)``; a column of a type the aggregation cannot take is refused
    in one line naming the aggregation, the column and its type (never Arrow's bare kernel error).

    Example:
        >>> from ember.data.aggregate import Sum
        >>> accumulated(Sum("s"), Sum("s").init(), pa.table({"s": ["a"]}))
        Traceback (most recent call last):
        ...
        ember.data.ray_errors.DataNotImplementedError: sum(s): column 's' holds string values, which Sum
        cannot aggregate (Function 'sum' has no kernel matching input types (string)); convert the column to
        numbers first (with_column or map_batches), or aggregate another column
    """
    try:
        return agg.accumulate_block(acc, table)
    except _ARROW_TYPE_ERRORS as e:
        raise _wrong_type(agg, table.schema, e) from None


def finalized(agg: AggregateFn, acc: Any, schema: pa.Schema | None = None) -> Any:
    """``agg.finalize(acc)``, with the same one-line refusal as ``accumulated``."""
    try:
        return agg.finalize(acc)
    except _ARROW_TYPE_ERRORS as e:
        raise _wrong_type(agg, schema, e) from None


def _wrong_type(agg: AggregateFn, schema: pa.Schema | None, error: Exception) -> DataTypeError:
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    columns = list(agg.columns_read() or ())
    # Ray's kind: Arrow's "no kernel" is a NotImplementedError there, its other type errors TypeErrors
    error_class = DataNotImplementedError if isinstance(error, NotImplementedError) else DataTypeError
    kind = type(agg).__name__
    if schema is not None and len(columns) == 1 and columns[0] in schema.names:
        column = columns[0]
        return error_class(
            f"{agg.name}: column {column!r} holds {schema.field(column).type} values, which {kind} "
            f"cannot aggregate ({first}); convert the column to numbers first (with_column or "
            "map_batches), or aggregate another column"
        )
    return error_class(
        f"{agg.name}: {kind} cannot aggregate columns {columns or '(all)'} ({first}); convert "
        "them to a type it takes first (with_column or map_batches)"
    )
