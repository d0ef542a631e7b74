"""Expressions that stand for several columns or read files: ``star``, ``unnest``, ``download``
(Ray Data 2.60).

``star()`` (every input column) and ``unnest(expr)`` (one column per field of a struct) are for
projections that produce several columns (Ray's ``Dataset.with_columns``); ``with_column`` and
``filter(expr=)`` refuse them in one line, as they expect one column's values. ``download(col)``
reads the bytes at each path or URI of a column through ember's filesystem layer (``ember.fs``:
local paths, ``s3://``, ``gs://``, fsspec URLs), or through the ``pyarrow.fs`` filesystem given.

Example:
    >>> import pyarrow as pa
    >>> expand(unnest(col("s")), pa.table({"s": [{"a": 1, "b": "x"}]}))
    [('a', [1]), ('b', ['x'])]
"""

from __future__ import annotations

from typing import Any

from ember.data.block import Block
from ember.data.expressions.core import Evaluation, Expr, col, evaluate
from ember.errors import ConfigError, DataError


class StarExpr(Expr):
    """Every input column, in order (Ray's ``StarExpr``); built by ``star()``.

    Example:
        >>> import pyarrow as pa
        >>> expand(StarExpr(), pa.table({"a": [1], "b": [2]}))
        [('a', [1]), ('b', [2])]
    """

    _pyarrow_convertible = False
    _several_columns = True

    def __repr__(self) -> str:
        return "col(*)"


class UnnestExpr(Expr):
    """One column per field of a struct-valued expression (Ray's ``UnnestExpr``); built by ``unnest``.

    Example:
        >>> unnest(col("s"))
        unnest(col('s'))
    """

    _pyarrow_convertible = False
    _several_columns = True

    def __init__(self, expr: Expr) -> None:
        self.expr = expr

    def _children(self) -> tuple[Expr, ...]:
        return (self.expr,)

    def alias(self, name: str) -> Expr:
        raise ConfigError(
            f"unnest(...).alias({name!r}): unnest makes one column per struct field, named after the "
            "fields; pass it to Dataset.with_columns without an alias"
        )

    def __repr__(self) -> str:
        return f"unnest({self.expr!r})"


def expand(expr: Expr, table: Block, ctx: Evaluation | None = None) -> list[tuple[str, Any]]:
    """The ``(name, values)`` columns ``expr`` stands for on ``table``: every column for ``star()``,
    every struct field for ``unnest``, else the one column it names.

    Example:
        >>> import pyarrow as pa
        >>> expand(col("a"), pa.table({"a": [1, 2]}))
        [('a', [1, 2])]
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(expr, StarExpr):
        return [(name, table.column(name).to_pylist()) for name in table.column_names]
    if not isinstance(expr, UnnestExpr):
        if expr.name is None:
            raise DataError(f"{expr!r} has no name; give it one with .alias('name')")
        return [(expr.name, evaluate(expr, table, ctx).to_pylist())]
    values = evaluate(expr.expr, table, ctx)
    if not pa.types.is_struct(values.type):
        raise DataError(f"unnest() needs a struct-valued expression; {expr.expr!r} gives {values.type}")
    names = [values.type.field(i).name for i in range(values.type.num_fields)]
    if len(set(names)) != len(names):
        raise DataError(
            f"unnest(): the struct has duplicate field names {names}; the columns would overwrite each other"
        )
    return [(name, pc.struct_field(values, [i]).to_pylist()) for i, name in enumerate(names)]


class DownloadExpr(Expr):
    """The bytes stored at each path or URI of column ``uri_column_name`` (Ray's ``DownloadExpr``);
    built by ``download``. A null path gives a null.

    Example:
        >>> DownloadExpr("path")
        download(col('path'))
    """

    _pyarrow_convertible = False

    def __init__(self, uri_column_name: str, filesystem: Any = None) -> None:
        if not isinstance(uri_column_name, str):
            raise ConfigError(f"download({uri_column_name!r}); pass the name of the column of paths")
        self.uri_column_name, self.filesystem = uri_column_name, filesystem

    def _evaluate(self, table: Block, ctx: Evaluation) -> Any:
        import pyarrow as pa

        paths = col(self.uri_column_name)._evaluate(table, ctx).to_pylist()
        return pa.array([None if p is None else self._read(p) for p in paths], pa.binary())

    def _read(self, path: str) -> bytes:
        import pyarrow as pa

        from ember.fs import resolve

        filesystem, where = (self.filesystem, path) if self.filesystem is not None else resolve(path)
        try:
            with filesystem.open_input_stream(where) as stream:
                data: bytes = stream.read()
                return data
        except (OSError, pa.ArrowInvalid) as e:
            raise DataError(
                f"download({self.uri_column_name!r}): cannot read {path!r} ({e}); "
                "fix the path or the filesystem"
            ) from None

    def __repr__(self) -> str:
        return f"download(col({self.uri_column_name!r}))"


def star() -> StarExpr:
    """Every input column (Ray's ``ray.data.expressions.star``), for projections of several columns.

    Example:
        >>> star()
        col(*)
    """
    return StarExpr()


def unnest(expr: Expr) -> UnnestExpr:
    """One column per field of the struct ``expr`` gives (Ray's ``ray.data.expressions.unnest``).

    Example:
        >>> import pyarrow as pa
        >>> expand(unnest(col("s")), pa.table({"s": [{"x": 1, "y": 2}]}))
        [('x', [1]), ('y', [2])]
    """
    if isinstance(expr, UnnestExpr):
        raise ConfigError("unnest() cannot wrap another unnest(); unnest the inner struct first")
    if not isinstance(expr, Expr):
        raise ConfigError(f"unnest() takes an expression such as col('s'), not {type(expr).__name__}")
    return UnnestExpr(expr)


def download(uri_column_name: str, *, filesystem: Any = None) -> DownloadExpr:
    """The bytes at each path/URI of column ``uri_column_name`` (Ray's ``ray.data.expressions.download``),
    read through ``ember.fs`` (or ``filesystem``, a ``pyarrow.fs.FileSystem``).

    Example:
        >>> import os, tempfile
        >>> import ember.data
        >>> path = os.path.join(tempfile.mkdtemp(), "hello.txt")
        >>> _ = open(path, "wb").write(b"hi")
        >>> ember.data.from_items([{"p": path}]).with_column("b", download("p")).take_all()[0]["b"]
        b'hi'
    """
    return DownloadExpr(uri_column_name, filesystem)
