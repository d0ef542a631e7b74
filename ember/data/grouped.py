"""GroupedData: what ``Dataset.groupby(key)`` returns (Ray Data's name and methods).

Groups come out in key order (nulls last). Both ``aggregate`` and ``map_groups`` partition the
rows by key range, in memory while they fit ``DataContext.memory_budget_bytes`` and through a
scratch folder past it, so a group never straddles two partitions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ember.data import aggregate as aggs
from ember.data import plan
from ember.data.iterate import batch_converter
from ember.errors import ConfigError

if TYPE_CHECKING:
    from ember.data.block import DataBatch, UserDefinedFunction
    from ember.data.dataset import ComputeStrategy, Dataset
    from ember.data.expressions import Expr


class GroupedData:
    """Rows of a Dataset grouped by key columns.

    Example:
        >>> import ember.data
        >>> ds = ember.data.from_items([{"k": "a", "v": 1}, {"k": "b", "v": 2}, {"k": "a", "v": 3}])
        >>> ds.groupby("k").count().take_all()
        [{'k': 'a', 'count()': 2}, {'k': 'b', 'count()': 1}]
    """

    def __init__(
        self,
        node: plan.Node,
        keys: tuple[str, ...],
        make_dataset: Callable[[plan.Node], Dataset],
        columns: Callable[[], list[str] | None],
    ) -> None:
        #: The grouped dataset's plan, how to wrap a plan in a Dataset, and its column names (lazily).
        self._node, self._keys, self._make, self._columns = node, keys, make_dataset, columns

    def _then(self, node: plan.Node) -> Dataset:
        return self._make(node)

    def aggregate(self, *aggs_: aggs.AggregateFn) -> Dataset:
        """One row per group: the keys, then each aggregation's column.

        Example:
            >>> import ember.data
            >>> from ember.data.aggregate import Max, Mean
            >>> ds = ember.data.from_items([{"k": 0, "v": 1.0}, {"k": 0, "v": 3.0}])
            >>> ds.groupby("k").aggregate(Mean("v"), Max("v")).take_all()
            [{'k': 0, 'mean(v)': 2.0, 'max(v)': 3.0}]
        """
        checked = aggs.check_aggs(aggs_, "GroupedData.aggregate")
        return self._then(plan.Aggregate(self._node, self._keys, checked))

    def count(self) -> Dataset:
        """Rows per group, in column ``count()``.

        Example:
            >>> import ember.data
            >>> ember.data.range(4).groupby("id").count().take(1)
            [{'id': 0, 'count()': 1}]
        """
        return self.aggregate(aggs.Count())

    def _each(
        self, kind: Callable[..., aggs.AggregateFn], on: str | list[str] | None, **options: Any
    ) -> Dataset:
        columns = [on] if isinstance(on, str) else list(on) if on is not None else None
        if columns is None:
            # no schema (no blocks at all): no columns, refused by aggregate() as for a dataset without any
            columns = [c for c in self._columns() or [] if c not in self._keys]
        return self.aggregate(*(kind(c, **options) for c in columns))

    def sum(self, on: str | list[str] | None = None, ignore_nulls: bool = True) -> Dataset:
        """Sum of ``on`` per group (every non-key column when None).

        Example:
            >>> import ember.data
            >>> ember.data.from_items([{"k": 1, "v": 2}, {"k": 1, "v": 5}]).groupby("k").sum("v").take_all()
            [{'k': 1, 'sum(v)': 7}]
        """
        return self._each(aggs.Sum, on, ignore_nulls=ignore_nulls)

    def min(self, on: str | list[str] | None = None, ignore_nulls: bool = True) -> Dataset:
        """Smallest value of ``on`` per group.

        Example:
            >>> import ember.data
            >>> ember.data.from_items([{"k": 1, "v": 2}, {"k": 1, "v": 5}]).groupby("k").min("v").take_all()
            [{'k': 1, 'min(v)': 2}]
        """
        return self._each(aggs.Min, on, ignore_nulls=ignore_nulls)

    def max(self, on: str | list[str] | None = None, ignore_nulls: bool = True) -> Dataset:
        """Largest value of ``on`` per group.

        Example:
            >>> import ember.data
            >>> ember.data.from_items([{"k": 1, "v": 2}, {"k": 1, "v": 5}]).groupby("k").max("v").take_all()
            [{'k': 1, 'max(v)': 5}]
        """
        return self._each(aggs.Max, on, ignore_nulls=ignore_nulls)

    def mean(self, on: str | list[str] | None = None, ignore_nulls: bool = True) -> Dataset:
        """Mean of ``on`` per group.

        Example:
            >>> import ember.data
            >>> ember.data.from_items([{"k": 1, "v": 2}, {"k": 1, "v": 5}]).groupby("k").mean("v").take_all()
            [{'k': 1, 'mean(v)': 3.5}]
        """
        return self._each(aggs.Mean, on, ignore_nulls=ignore_nulls)

    def std(self, on: str | list[str] | None = None, ddof: int = 1, ignore_nulls: bool = True) -> Dataset:
        """Standard deviation of ``on`` per group (``ddof=1``: the sample std).

        Example:
            >>> import ember.data
            >>> ember.data.from_items([{"k": 1, "v": 2}, {"k": 1, "v": 4}]).groupby("k").std("v").take_all()
            [{'k': 1, 'std(v)': 1.4142135623730951}]
        """
        return self._each(aggs.Std, on, ddof=ddof, ignore_nulls=ignore_nulls)

    def map_groups(
        self,
        fn: UserDefinedFunction[DataBatch, DataBatch],
        *,
        zero_copy_batch: bool = True,
        compute: ComputeStrategy | str | None = None,
        batch_format: str | None = "default",
        fn_args: Iterable[Any] | None = None,
        fn_kwargs: dict[str, Any] | None = None,
        fn_constructor_args: Iterable[Any] | None = None,
        fn_constructor_kwargs: dict[str, Any] | None = None,
        **_: Any,
    ) -> Dataset:
        """``fn(batch)`` on each whole group (a dict of numpy arrays by default; "pandas",
        "pyarrow", or None for the block as it is: a ``pyarrow.Table``), groups in key order; each
        call's output batch becomes output rows.

        ``fn`` may be a callable class: it is constructed once per process that runs groups, with
        ``fn_constructor_args`` / ``fn_constructor_kwargs`` (Ray constructs it once per actor).
        ``zero_copy_batch=True`` (Ray's default) lets Ray hand a read-only batch; ember's batches are
        always writable copies, which every ``fn`` written for either setting accepts.

        Example:
            >>> import ember.data
            >>> ds = ember.data.from_items([{"k": 0, "v": 1}, {"k": 1, "v": 2}, {"k": 0, "v": 3}])
            >>> ds.groupby("k").map_groups(lambda b: {"k": b["k"][:1], "total": [b["v"].sum()]}).take_all()
            [{'k': 0, 'total': 4}, {'k': 1, 'total': 2}]
            >>> class Scale:
            ...     def __init__(self, factor):
            ...         self.factor = factor
            ...     def __call__(self, batch):
            ...         return {"k": batch["k"], "v": batch["v"] * self.factor}
            >>> ds.groupby("k").map_groups(Scale, fn_constructor_args=(10,)).take_all()
            [{'k': 0, 'v': 10}, {'k': 0, 'v': 30}, {'k': 1, 'v': 20}]
        """
        from ember.data.expressions.udf import ConstructOnce

        if isinstance(fn, type):
            fn = ConstructOnce(fn, tuple(fn_constructor_args or ()), dict(fn_constructor_kwargs or {}))
        elif fn_constructor_args is not None or fn_constructor_kwargs is not None:
            raise ConfigError(
                "map_groups: fn_constructor_args/fn_constructor_kwargs are for a callable class; "
                "pass the class itself (not a function or an instance) or drop them"
            )
        if not callable(fn):
            raise ConfigError(f"map_groups({fn!r}): pass a function or a callable class")
        # None: the block as it is, which for ember is a pyarrow.Table (as Ray hands its Arrow blocks)
        fmt = "numpy" if batch_format == "default" else "pyarrow" if batch_format is None else batch_format
        batch_converter(fmt)  # validates the name now
        return self._then(
            plan.MapGroups(self._node, self._keys, fn, fmt, tuple(fn_args or ()), dict(fn_kwargs or {}))
        )

    def with_column(self, column_name: str, expr: Expr, **_: Any) -> Dataset:
        """Every row with column ``column_name`` added (or replaced), the expression evaluated on
        each whole group (Ray's ``GroupedData.with_column``); groups in key order.

        Example:
            >>> import ember.data
            >>> from ember.data.expressions import col
            >>> ds = ember.data.from_items([{"g": 1, "v": 1}, {"g": 2, "v": 5}, {"g": 1, "v": 2}])
            >>> ds.groupby("g").with_column("twice", col("v") * 2).take_all()
            [{'g': 1, 'v': 1, 'twice': 2}, {'g': 1, 'v': 2, 'twice': 4}, {'g': 2, 'v': 5, 'twice': 10}]
        """
        from ember.data.expressions import DownloadExpr, Expr, walk
        from ember.data.expressions.steps import check_single_column

        if not isinstance(column_name, str) or not column_name:
            raise ConfigError(
                f"GroupedData.with_column({column_name!r}, ...): the column name must be a non-empty str"
            )
        if not isinstance(expr, Expr):
            raise ConfigError(
                f"GroupedData.with_column takes an ember.data.expressions expression, not "
                f"{type(expr).__name__}; e.g. col('x') * 2"
            )
        if any(isinstance(e, DownloadExpr) for e in walk(expr)):
            raise ConfigError(
                "GroupedData.with_column does not support download() (nor does Ray 2.60); "
                "download first with Dataset.with_column, then group"
            )
        check_single_column(expr, "GroupedData.with_column")
        return self.map_groups(_ProjectGroup(column_name, expr), batch_format="pyarrow")


class _ProjectGroup:
    """``GroupedData.with_column``'s function: one group's table with the expression's column set.
    One evaluation context per process, so ``monotonically_increasing_id`` keeps counting across groups."""

    def __init__(self, column: str, expr: Any) -> None:
        self.column, self.expr = column, expr
        self._ctx: Any = None
        self.__qualname__ = f"with_column({column!r})"

    def __call__(self, table: Any) -> Any:
        from ember.data.expressions import Evaluation, evaluate
        from ember.data.expressions.steps import with_values

        if self._ctx is None:
            self._ctx = Evaluation()
        values = evaluate(self.expr, table, self._ctx)
        self._ctx.advance(table.num_rows)
        return with_values(table, self.column, values)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_ctx": None}
