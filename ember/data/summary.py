"""``Dataset.summary()``: per-column statistics chosen by column type (Ray Data 2.60's ``DatasetSummary``).

The statistics and their names are Ray's (``ray.data.stats``):

- numbers and booleans: ``count``, ``mean``, ``min``, ``max``, ``std`` (ddof=0), ``approx_quantile[0]``
  (the median), ``missing_pct``, ``zero_pct``;
- strings, binary and other types (lists, structs, tensors): ``count``, ``missing_pct``,
  ``approx_topk[0..9]`` (``{column: value, "count": n}``, most frequent first);
- dates, times, timestamps, durations: ``count``, ``min``, ``max``, ``missing_pct``;
- an all-null column: ``count``.

``count`` counts every row (nulls too); ``missing_pct`` counts nulls and NaN; ``zero_pct`` is over the
non-null values; mean, min, max, std and the median skip nulls. Where Ray sketches (quantile, top-k)
ember counts exactly: the median is interpolated linearly, and equally frequent values keep the
order in which they first appear. Everything is computed in one streaming pass (``Dataset.aggregate``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from ember.data import aggregate as aggs
from ember.errors import ConfigError

if TYPE_CHECKING:
    from ember.data.dataset import Dataset

STATISTIC_COLUMN = "statistic"
TOP_K = 10


class DatasetSummary:
    """Statistics of a Dataset's columns (what ``Dataset.summary()`` returns).

    ``dataset_schema`` is the dataset's Arrow schema and ``columns`` the summarized column names;
    ``to_pandas()`` gives one row per statistic (sorted by name) and one column per dataset column
    (sorted by name), ``get_column_stats(column)`` the ``statistic``/``value`` rows of one column.

    Example:
        >>> import ember.data
        >>> summary = ember.data.from_items([{"x": 0}, {"x": 4}, {"x": None}]).summary()
        >>> stats = summary.get_column_stats("x")
        >>> dict(zip(stats["statistic"], stats["value"]))["zero_pct"]
        50.0
    """

    STATISTIC_COLUMN = STATISTIC_COLUMN

    def __init__(
        self, stats: dict[str, dict[str, Any]], dataset_schema: pa.Schema, columns: list[str]
    ) -> None:
        self._stats = stats  # {statistic: {column: value}}
        self.dataset_schema = dataset_schema
        self.columns = columns

    def to_pandas(self) -> Any:
        """All statistics as one DataFrame: a ``statistic`` column, then one column per dataset column.

        Example:
            >>> import ember.data
            >>> frame = ember.data.from_items([{"a": 1}, {"a": 3}]).summary().to_pandas()
            >>> float(frame.set_index("statistic")["a"]["mean"])
            2.0
        """
        import pandas as pd

        names = sorted(self._stats)
        data: dict[str, list[Any]] = {STATISTIC_COLUMN: names}
        for column in sorted(self.columns):
            data[column] = [self._stats[name].get(column) for name in names]
        return pd.DataFrame(data, columns=[STATISTIC_COLUMN, *sorted(self.columns)])

    def get_column_stats(self, column: str) -> Any:
        """The statistics of one column: a DataFrame of ``statistic`` and ``value``, sorted by statistic.

        Example:
            >>> import ember.data
            >>> summary = ember.data.from_items([{"s": "a"}, {"s": "a"}, {"s": None}]).summary()
            >>> stats = summary.get_column_stats("s")
            >>> stats.to_dict("records")[0]
            {'statistic': 'approx_topk[0]', 'value': {'s': 'a', 'count': 2}}
        """
        import pandas as pd

        if column not in self.columns:
            raise ConfigError(
                f"DatasetSummary.get_column_stats({column!r}): no such column; the summary has "
                f"{sorted(self.columns)}"
            )
        rows = [(name, values[column]) for name, values in sorted(self._stats.items()) if column in values]
        return pd.DataFrame(rows, columns=[STATISTIC_COLUMN, "value"])

    def __repr__(self) -> str:
        return f"DatasetSummary(columns={sorted(self.columns)})"


def summarize(ds: Dataset, columns: list[str] | None) -> DatasetSummary:
    """Run the statistics of every chosen column in one pass and arrange them by statistic."""
    schema = ds.schema()
    if schema is None:
        raise ConfigError("Dataset.summary(): the dataset has no rows and no schema to summarize")
    arrow_schema = schema.base_schema
    chosen = list(arrow_schema.names) if columns is None else list(columns)
    missing = [c for c in chosen if c not in arrow_schema.names]
    if missing:
        raise ConfigError(
            f"Dataset.summary(columns={chosen}): no column {missing[0]!r}; the columns are "
            f"{arrow_schema.names}"
        )
    plans = {c: _statistics(c, arrow_schema.field(c).type) for c in chosen}
    results = ds.aggregate(*(agg for plan in plans.values() for _, agg in plan))
    stats: dict[str, dict[str, Any]] = {}
    for column, plan in plans.items():
        for label, agg in plan:
            for name, value in _expand(label, results[agg.name]).items():
                stats.setdefault(name, {})[column] = value
    return DatasetSummary(stats, arrow_schema, chosen)


def _statistics(column: str, arrow_type: pa.DataType) -> list[tuple[str, aggs.AggregateFn]]:
    """(statistic name, aggregation) pairs for a column of this type, Ray's choice of statistics."""
    count = ("count", aggs.Count(column, ignore_nulls=False, alias_name=f"count({column})"))
    if pa.types.is_null(arrow_type):
        return [count]
    if (
        pa.types.is_integer(arrow_type)
        or pa.types.is_floating(arrow_type)
        or pa.types.is_boolean(arrow_type)
        or pa.types.is_decimal(arrow_type)
    ):
        median = _bool_median(column) if pa.types.is_boolean(arrow_type) else aggs.Quantile(column, q=0.5)
        return [
            count,
            ("mean", aggs.Mean(column)),
            ("min", aggs.Min(column)),
            ("max", aggs.Max(column)),
            ("std", aggs.Std(column, ddof=0)),
            ("approx_quantile", median),
            ("missing_pct", _missing_pct(column)),
            ("zero_pct", _zero_pct(column)),
        ]
    if pa.types.is_temporal(arrow_type):
        return [
            count,
            ("min", aggs.Min(column)),
            ("max", aggs.Max(column)),
            ("missing_pct", _missing_pct(column)),
        ]
    return [count, ("missing_pct", _missing_pct(column)), ("approx_topk", _top_k(column))]


def _expand(label: str, value: Any) -> dict[str, Any]:
    """A list result becomes ``label[0]``, ``label[1]``, ... (Ray's ``_format_stats``)."""
    if label == "approx_quantile":
        value = [value]
    if isinstance(value, list):
        return {f"{label}[{i}]": item for i, item in enumerate(value)}
    return {label: value}


def _counter(
    name: str, count_block: Callable[[pa.ChunkedArray], tuple[int, int]], column: str
) -> aggs.AggregateFn:
    """An aggregation of a (part, whole) pair per block, finished as a percentage (None when whole is 0)."""

    def accumulate(acc: list[int], table: pa.Table) -> list[int]:
        part, whole = count_block(table.column(column))
        return [acc[0] + part, acc[1] + whole]

    return aggs.AggregateFn(
        init=lambda _: [0, 0],
        merge=lambda a, b: [a[0] + b[0], a[1] + b[1]],
        name=f"{name}({column})",
        accumulate_block=accumulate,
        finalize=lambda acc: acc[0] / acc[1] * 100.0 if acc[1] else None,
    )


def _missing_pct(column: str) -> aggs.AggregateFn:
    def nulls(values: pa.ChunkedArray) -> tuple[int, int]:
        missing = pc.sum(pc.is_null(values, nan_is_null=True)).as_py() if len(values) else 0
        return int(missing or 0), len(values)

    return _counter("missing_pct", nulls, column)


def _zero_pct(column: str) -> aggs.AggregateFn:
    def zeros(values: pa.ChunkedArray) -> tuple[int, int]:
        present = values.drop_null()
        if pa.types.is_boolean(present.type):
            present = present.cast(pa.int8())
        return int(pc.sum(pc.equal(present, 0)).as_py() or 0) if len(present) else 0, len(present)

    return _counter("zero_pct", zeros, column)


def _bool_median(column: str) -> aggs.AggregateFn:
    """The median of a boolean column, as 0.0/1.0 values (Arrow has no quantile for booleans)."""

    def accumulate(acc: list[int], table: pa.Table) -> list[int]:
        values = table.column(column).drop_null()
        trues = int(pc.sum(values.cast(pa.int8())).as_py() or 0) if len(values) else 0
        return [acc[0] + len(values) - trues, acc[1] + trues]

    def finalize(acc: list[int]) -> float | None:
        falses, trues = acc
        if not falses + trues:
            return None
        median: float = pc.quantile(pa.array([0.0] * falses + [1.0] * trues), q=0.5)[0].as_py()
        return median

    return aggs.AggregateFn(
        init=lambda _: [0, 0],
        merge=lambda a, b: [a[0] + b[0], a[1] + b[1]],
        name=f"approx_quantile({column})",
        accumulate_block=accumulate,
        finalize=finalize,
    )


def _top_k(column: str) -> aggs.AggregateFn:
    """The ``TOP_K`` most frequent non-null values, exactly counted; ties keep first-seen order."""

    def accumulate(acc: dict[str, tuple[Any, int]], table: pa.Table) -> dict[str, tuple[Any, int]]:
        for value in table.column(column).to_pylist():
            if value is not None:
                key = repr(value)  # lists and dicts are not hashable; their repr is
                acc[key] = (acc[key][0], acc[key][1] + 1) if key in acc else (value, 1)
        return acc

    def merge(a: dict[str, tuple[Any, int]], b: dict[str, tuple[Any, int]]) -> dict[str, tuple[Any, int]]:
        for key, (value, n) in b.items():
            a[key] = (a[key][0], a[key][1] + n) if key in a else (value, n)
        return a

    def finalize(acc: dict[str, tuple[Any, int]]) -> list[dict[str, Any]]:
        ranked = sorted(acc.values(), key=lambda entry: -entry[1])  # stable: first seen wins a tie
        return [{column: value, "count": n} for value, n in ranked[:TOP_K]]

    return aggs.AggregateFn(
        init=lambda _: {},
        merge=merge,
        name=f"approx_topk({column})",
        accumulate_block=accumulate,
        finalize=finalize,
    )
