"""``rename_columns`` with a list: every column gets the new name at its position (Ray's list form)."""

from __future__ import annotations

from collections.abc import Iterator

from ember.data.block import Block
from ember.data.transforms import Transform, unique_names
from ember.errors import DataError


class RenameAll(Transform):
    """Renames the columns, in order, to ``names``; a count that differs is one line naming both lists.

    Example:
        >>> import pyarrow as pa
        >>> next(RenameAll(["b"]).apply(iter([pa.table({"a": [1]})]))).column_names
        ['b']
    """

    name = "RenameColumns"
    preserves_rows = True
    runs_user_code = False

    def __init__(self, names: list[str]) -> None:
        self.names = list(names)

    def apply(self, blocks: Iterator[Block]) -> Iterator[Block]:
        for block in blocks:
            if block.num_columns != len(self.names):
                raise DataError(
                    f"rename_columns got {len(self.names)} names {self.names} for {block.num_columns} "
                    f"columns {block.column_names}; pass one new name per column, or a dict {{old: new}}"
                )
            yield block.rename_columns(unique_names(self.names, block.column_names))
