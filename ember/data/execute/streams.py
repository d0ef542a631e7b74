"""Block-stream helpers shared by the local executor and the Ray backend's ember tasks.

``_same_schema_union``: the inputs one after another, refusing a block whose columns differ;
``_slice_rows``: rows [skip, skip + count) of a block stream, closing upstream once done.
(Here, below both, so that neither imports the other.)
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from ember.errors import DataError


def _same_schema_union(streams: list[Iterator[pa.Table]]) -> Iterator[pa.Table]:
    """The inputs one after another; a block whose columns differ from the first input's is refused.

    Arrow would otherwise null-fill the missing columns or promote the types when the blocks are
    batched together (ints came back as NaN-filled floats). One schema comparison per block.
    """
    first: pa.Schema | None = None
    for index, stream in enumerate(streams):
        for block in stream:
            if block.num_rows == 0:
                continue
            if first is None:
                first = block.schema
            elif not block.schema.equals(first) and not _compatible(first, block.schema):
                raise DataError(f"union: {_difference(first, block.schema, index)}; make the datasets' columns agree "
                                "(select_columns, rename_columns, a map_batches that casts) before union")
            yield block


def _compatible(a: pa.Schema, b: pa.Schema) -> bool:
    """Same names, and types equal, or both ndarray columns (fixed vs ragged shape), or one all-null."""
    from ember.data.block import _is_tensor

    if a.names != b.names:
        return False
    return all(x == y or (_is_tensor(x) and _is_tensor(y)) or pa.types.is_null(x) or pa.types.is_null(y)
               for x, y in zip(a.types, b.types, strict=True))


def _difference(a: pa.Schema, b: pa.Schema, index: int) -> str:
    from ember.data.schema import format_type

    if a.names != b.names:
        return f"dataset {index} has columns {b.names} but the first has {a.names}"
    name = next(n for n in a.names if not _compatible(pa.schema([a.field(n)]), pa.schema([b.field(n)])))
    return (f"column {name!r} is {format_type(a.field(name).type)} in the first dataset but "
            f"{format_type(b.field(name).type)} in dataset {index}")


def _slice_rows(blocks: Iterator[pa.Table], skip: int, count: int) -> Iterator[pa.Table]:
    """Rows [skip, skip + count) of a block stream; stops (and closes upstream) once done."""
    try:
        for block in blocks:
            if count <= 0:
                break
            if skip >= block.num_rows:
                skip -= block.num_rows
                continue
            block = block.slice(skip, min(count, block.num_rows - skip))
            skip = 0
            count -= block.num_rows
            yield block
    finally:
        close = getattr(blocks, "close", None)
        if close is not None:
            close()
