"""The plan steps that evaluate expressions on blocks: ``WithColumn`` (``Dataset.with_column``) and
``EvaluatedFilter`` (``Dataset.filter(expr=)`` for expressions pyarrow cannot take whole), and the
checks they share.

Example:
    >>> import pyarrow as pa
    >>> from ember.data.expressions import col
    >>> step = WithColumn("y", col("x") * 2)
    >>> [t.to_pylist() for t in step.apply(iter([pa.table({"x": [1, 2]})]))]
    [[{'x': 1, 'y': 2}, {'x': 2, 'y': 4}]]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ember.data.block import Block
from ember.data.expressions.core import Evaluation, Expr, evaluate, walk
from ember.data.transforms import Transform
from ember.errors import DataError


def runs_user_code(expr: Expr) -> bool:
    """True when evaluating ``expr`` calls user Python (a ``udf``): worth a worker process.

    Example:
        >>> from ember.data.expressions import col
        >>> runs_user_code(col("a") * 2)
        False
    """
    return any(e._runs_user_code for e in walk(expr))


class WithColumn(Transform):
    """Adds (or replaces) one column computed by an expression (pyarrow kernels, or a ``udf``)."""

    name = "WithColumn"
    preserves_rows = True

    def __init__(self, column: str, expr: Expr) -> None:
        self.column, self.expr = column, expr
        check_single_column(expr, "with_column")
        self.runs_user_code = runs_user_code(expr)

    def apply(self, blocks: Iterator[Block]) -> Iterator[Block]:
        ctx = Evaluation()
        for block in blocks:
            yield with_values(block, self.column, evaluate(self.expr, block, ctx))
            ctx.advance(block.num_rows)


def with_values(block: Block, column: str, values: Any) -> Block:
    """``block`` with column ``column`` set to ``values`` (replaced in place, or appended).

    Example:
        >>> import pyarrow as pa
        >>> with_values(pa.table({"a": [1]}), "a", pa.array([2])).to_pylist()
        [{'a': 2}]
    """
    if column in block.column_names:
        return block.set_column(block.column_names.index(column), column, values)
    return block.append_column(column, values)


class EvaluatedFilter(Transform):
    """``filter(expr=...)`` for an expression pyarrow cannot take whole (a ``udf``, ``random``,
    ``download``...): ember evaluates it on each block and keeps the rows where it is true."""

    name = "Filter"

    def __init__(self, expr: Expr) -> None:
        self.expr = expr
        check_single_column(expr, "filter(expr=)")
        self.runs_user_code = runs_user_code(expr)

    def apply(self, blocks: Iterator[Block]) -> Iterator[Block]:
        import pyarrow as pa
        import pyarrow.compute as pc

        ctx = Evaluation()
        for block in blocks:
            keep = evaluate(self.expr, block, ctx)
            ctx.advance(block.num_rows)
            if not pa.types.is_boolean(keep.type):
                raise DataError(
                    f"filter(expr={self.expr!r}) gives {keep.type} values; a filter needs booleans, "
                    "e.g. col('x') > 1"
                )
            yield block.filter(pc.fill_null(keep, False))


def is_pyarrow_convertible(expr: Expr) -> bool:
    """True when ``expr.to_pyarrow()`` works (only columns, literals and operators inside).

    Example:
        >>> from ember.data.expressions import col
        >>> is_pyarrow_convertible(col("a") > 1)
        True
    """
    return all(e._pyarrow_convertible for e in walk(expr))


def check_single_column(expr: Expr, where: str) -> None:
    """Refuses ``star()`` and ``unnest()``, which stand for several columns, where one is expected."""
    for e in walk(expr):
        if e._several_columns:
            raise DataError(
                f"{where}: {e!r} stands for several columns and cannot be one column's values; "
                "star() and unnest() are for Dataset.with_columns"
            )


def require_expr(value: Any, where: str) -> Expr:
    """``value`` if it is an Expr, else a one-line error naming ``col``/``lit``."""
    if not isinstance(value, Expr):
        raise DataError(
            f"{where} takes an expression (ember.data.expressions.col / lit), not "
            f"{type(value).__name__}; e.g. col('x') * 2"
        )
    return value


def filter_transform(expr: Any) -> Transform | None:
    """The filter step for an ember expression that pyarrow cannot take whole (a ``udf``,
    ``random``, ``download``...), else None (a pyarrow expression filters it).

    Example:
        >>> from ember.data.expressions import col
        >>> filter_transform(col("a") > 1) is None
        True
    """
    if isinstance(expr, Expr) and not is_pyarrow_convertible(expr):
        return EvaluatedFilter(expr)
    return None
