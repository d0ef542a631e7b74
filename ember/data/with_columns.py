"""``Dataset.with_columns``: several expression columns computed in one projection (Ray Data 2.60).

Arguments are ``{column name: expression}`` mappings and ``unnest(expr)`` expressions (one column per
field of a struct-valued expression, named after the fields), applied in argument order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ember.data.block import Block
from ember.data.expressions import DownloadExpr, Evaluation, Expr, UnnestExpr, evaluate, require_expr
from ember.data.expressions.steps import check_single_column, runs_user_code
from ember.data.transforms import Transform
from ember.errors import ConfigError, DataError


class ProjectionArgumentError(ConfigError, TypeError):
    """An argument of ``with_columns`` that is neither a mapping nor an ``unnest`` (a TypeError, as Ray's)."""


#: One output of the projection: (column name, expression), or (None, an ``unnest`` expression).
Entry = tuple[str | None, Expr]


class WithColumns(Transform):
    """Adds (or replaces) columns, each computed by an expression over the block as it came in, so
    one expression never sees another's result (Ray's single projection). ``exprs`` is a
    ``{name: expression}`` mapping or a list of entries from `merged_exprs`.

    Example:
        >>> import pyarrow as pa
        >>> from ember.data.expressions import col
        >>> step = WithColumns({"a": col("a") * 10, "b": col("a") + 1})
        >>> next(step.apply(iter([pa.table({"a": [1, 2]})]))).to_pydict()
        {'a': [10, 20], 'b': [2, 3]}
    """

    name = "WithColumns"
    preserves_rows = True

    def __init__(self, exprs: Mapping[str, Expr] | list[Entry]) -> None:
        self.entries: list[Entry] = list(exprs.items()) if isinstance(exprs, Mapping) else list(exprs)
        self.runs_user_code = any(runs_user_code(expr) for _, expr in self.entries)

    def apply(self, blocks: Iterator[Block]) -> Iterator[Block]:
        ctx = Evaluation()
        for block in blocks:
            columns = [
                column for entry in self.entries for column in _columns(entry, block, ctx)
            ]  # all on the input
            ctx.advance(block.num_rows)
            for name, values in columns:
                if name in block.column_names:
                    block = block.set_column(block.column_names.index(name), name, values)
                else:
                    block = block.append_column(name, values)
            yield block


def _columns(entry: Entry, block: Block, ctx: Evaluation) -> list[tuple[str, Any]]:
    """The (name, values) columns one entry makes on ``block``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    name, expr = entry
    if name is not None:
        return [(name, evaluate(expr, block, ctx))]
    assert isinstance(expr, UnnestExpr)
    values = evaluate(expr.expr, block, ctx)
    if not pa.types.is_struct(values.type):
        raise DataError(f"unnest() needs a struct-valued expression; {expr.expr!r} gives {values.type}")
    return [(values.type.field(i).name, pc.struct_field(values, [i])) for i in range(values.type.num_fields)]


def merged_exprs(where: str, arguments: tuple[Any, ...]) -> list[Entry]:
    """The projection's entries: each ``{column: expression}`` mapping's items and each ``unnest``
    expression, in argument order (a later entry wins a name).

    Example:
        >>> from ember.data.expressions import col, unnest
        >>> merged_exprs("with_columns", ({"a": col("x")}, unnest(col("s"))))
        [('a', col('x')), (None, unnest(col('s')))]
    """
    entries: list[Entry] = []
    for argument in arguments:
        if argument is None:
            continue
        if isinstance(argument, UnnestExpr):
            entries.append((None, argument))
            continue
        if not isinstance(argument, Mapping):
            raise ProjectionArgumentError(
                f"{where}: each argument is a {{column name: expression}} mapping or an unnest() "
                f"expression, not {type(argument).__name__}"
            )
        for name, expr in argument.items():
            if not isinstance(name, str):
                raise ConfigError(f"{where}: column names are strings, not {name!r}")
            if isinstance(expr, DownloadExpr):
                raise ConfigError(
                    f"{where} does not take download() expressions (as in Ray); add them with "
                    "Dataset.with_column"
                )
            check_single_column(require_expr(expr, where), where)
            entries.append((name, expr))
    return entries
