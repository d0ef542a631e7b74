"""``Dataset.with_columns``: several expression columns computed in one projection (Ray Data 2.60)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ember.data.block import Block
from ember.data.expressions import Expr, evaluate, require_expr
from ember.data.transforms import Transform
from ember.errors import ConfigError


class WithColumns(Transform):
    """Adds (or replaces) columns, each computed by an expression over the block as it came in, so
    one expression never sees another's result (Ray's single projection); no user Python runs.

    Example:
        >>> import pyarrow as pa
        >>> from ember.data.expressions import col
        >>> step = WithColumns({"a": col("a") * 10, "b": col("a") + 1})
        >>> next(step.apply(iter([pa.table({"a": [1, 2]})]))).to_pydict()
        {'a': [10, 20], 'b': [2, 3]}
    """

    name = "WithColumns"
    preserves_rows = True
    runs_user_code = False

    def __init__(self, exprs: dict[str, Expr]) -> None:
        self.exprs = exprs

    def apply(self, blocks: Iterator[Block]) -> Iterator[Block]:
        for block in blocks:
            values = {name: evaluate(expr, block) for name, expr in self.exprs.items()}  # all on the input
            for name, column in values.items():
                if name in block.column_names:
                    block = block.set_column(block.column_names.index(name), name, column)
                else:
                    block = block.append_column(name, column)
            yield block


def merged_exprs(where: str, mappings: tuple[Any, ...]) -> dict[str, Expr]:
    """The {column: expression} mappings given, merged in argument order (a later one wins a name)."""
    merged: dict[str, Expr] = {}
    for mapping in mappings:
        if mapping is None:
            continue
        if not isinstance(mapping, Mapping):
            raise ConfigError(f"{where}: each argument is a {{column name: expression}} mapping, not "
                              f"{type(mapping).__name__} (ember has no unnest() expressions)")
        for name, expr in mapping.items():
            if not isinstance(name, str):
                raise ConfigError(f"{where}: column names are strings, not {name!r}")
            merged[name] = require_expr(expr, where)
    return merged
