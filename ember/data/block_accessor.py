"""BlockAccessor: Ray Data's view of one block, as far as custom aggregations and UDFs use it.

A custom ``AggregateFnV2`` (Ray's aggregation guide) reads its block through
``BlockAccessor.for_block(block)``: ``count`` and ``sum`` of a column with Ray's null rule, and the
block's size and formats. ember's blocks are ``pyarrow.Table``; a pandas DataFrame is read as one.
The accessor only reads. It imports nothing of ember.data (``ember.data.block`` re-exports it); for a
block's rows in another format use ``ember.data.block.block_to_batch``.

Example:
    >>> import pyarrow as pa
    >>> acc = BlockAccessor.for_block(pa.table({"x": [1, None, 3]}))
    >>> acc.num_rows(), acc.count("x", ignore_nulls=True), acc.count("x", ignore_nulls=False)
    (3, 2, 3)
    >>> acc.sum("x", True)
    4
"""

from __future__ import annotations

from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from ember.errors import ConfigError

#: The type variables Ray's ``ray.data.block`` names in custom aggregations' annotations.
T = TypeVar("T")
U = TypeVar("U")
AggType = TypeVar("AggType")
KeyType = TypeVar("KeyType")


class BlockAccessor:
    """Read one block (Ray Data's ``ray.data.block.BlockAccessor``, for ``pyarrow.Table`` blocks).

    Example:
        >>> import pyarrow as pa
        >>> BlockAccessor.for_block(pa.table({"a": [1.0, 2.0]})).mean("a", ignore_nulls=True)
        1.5
    """

    def __init__(self, table: pa.Table) -> None:
        self._table = table

    @staticmethod
    def for_block(block: Any) -> BlockAccessor:
        """The accessor of `block`: a ``pyarrow.Table`` or a pandas DataFrame (read as a table)."""
        if isinstance(block, pa.Table):
            return BlockAccessor(block)
        if type(block).__name__ == "DataFrame" and type(block).__module__.startswith("pandas"):
            return BlockAccessor(pa.Table.from_pandas(block, preserve_index=False))
        raise ConfigError(
            f"BlockAccessor.for_block takes a pyarrow.Table or pandas DataFrame block, not "
            f"{type(block).__module__}.{type(block).__name__}"
        )

    # ---- shape and formats
    def num_rows(self) -> int:
        return self._table.num_rows

    def size_bytes(self) -> int:
        return self._table.nbytes

    def schema(self) -> pa.Schema:
        return self._table.schema

    def column_names(self) -> list[str]:
        return list(self._table.column_names)

    def to_arrow(self) -> pa.Table:
        return self._table

    def to_block(self) -> pa.Table:
        return self._table

    def slice(self, start: int, end: int, copy: bool = False) -> pa.Table:
        return self._table.slice(start, end - start)

    def take(self, indices: list[int]) -> pa.Table:
        return self._table.take(pa.array(indices, pa.int64()))

    def select(self, columns: list[str]) -> pa.Table:
        for name in columns:
            self._column(name)
        return self._table.select(columns)

    # ---- column reductions (Ray's: pyarrow compute, nulls skipped with ignore_nulls)
    def count(self, on: str, ignore_nulls: bool = False) -> int:
        """Rows of column `on`; without its nulls when `ignore_nulls`."""
        return pc.count(self._column(on), mode="only_valid" if ignore_nulls else "all").as_py()

    def sum(self, on: str, ignore_nulls: bool) -> Any:
        """Sum of column `on`: None if it has a null and not `ignore_nulls`, or has no values."""
        return pc.sum(self._column(on), skip_nulls=ignore_nulls).as_py()

    def min(self, on: str, ignore_nulls: bool) -> Any:
        return pc.min(self._column(on), skip_nulls=ignore_nulls).as_py()

    def max(self, on: str, ignore_nulls: bool) -> Any:
        return pc.max(self._column(on), skip_nulls=ignore_nulls).as_py()

    def mean(self, on: str, ignore_nulls: bool) -> Any:
        return pc.mean(self._column(on), skip_nulls=ignore_nulls).as_py()

    def sum_of_squared_diffs_from_mean(self, on: str, ignore_nulls: bool, mean: Any = None) -> Any:
        """Sum of (x - mean)^2 over column `on` (the block's own mean unless given); None without values."""
        mean = self.mean(on, ignore_nulls) if mean is None else mean
        if mean is None:
            return None
        column = self._column(on)
        return pc.sum(pc.power(pc.subtract(column, mean), 2), skip_nulls=ignore_nulls).as_py()

    def _column(self, on: str) -> pa.ChunkedArray:
        if on is None:
            raise ConfigError(
                "BlockAccessor: pass the column to reduce (on=...), as in Ray it must not be None"
            )
        if on not in self._table.column_names:
            raise ConfigError(
                f"BlockAccessor: no column {on!r}; the block has columns {self._table.column_names}"
            )
        return self._table.column(on)
