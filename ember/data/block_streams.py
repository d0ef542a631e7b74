"""Block-stream helpers shared by the local executor and the Ray backend's ember tasks.

``same_schema_union``: the inputs one after another, refusing a block whose columns differ;
``slice_rows``: rows [skip, skip + count) of a block stream, closing upstream once done;
``select_ranges``: the rows of several (start, count) ranges, one pass per ascending run of them.
(In the blocks layer, below both, so that neither imports the other; mixing uses the schema checks.)
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Sequence
from typing import TypeAlias

import pyarrow as pa

from ember.errors import DataError

#: A stream of blocks whose ``close()`` releases its files and workers at once (every block stream the
#: executor hands out is a generator).
BlockStream: TypeAlias = Generator[pa.Table, None, None]


def same_schema_union(streams: list[Iterator[pa.Table]]) -> BlockStream:
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
            elif not block.schema.equals(first) and not schemas_compatible(first, block.schema):
                raise DataError(
                    f"union: {schema_difference(first, block.schema, index)}; make the datasets' columns "
                    "agree (select_columns, rename_columns, a map_batches that casts) before union"
                )
            yield block


def schemas_compatible(a: pa.Schema, b: pa.Schema) -> bool:
    """Same names, and types equal, or both ndarray columns (fixed vs ragged shape), or one all-null."""
    from ember.data.block import is_tensor_arrow_type

    if a.names != b.names:
        return False
    return all(
        x == y
        or (is_tensor_arrow_type(x) and is_tensor_arrow_type(y))
        or pa.types.is_null(x)
        or pa.types.is_null(y)
        for x, y in zip(a.types, b.types, strict=True)
    )


def schema_difference(a: pa.Schema, b: pa.Schema, index: int) -> str:
    from ember.data.schema import format_type

    if a.names != b.names:
        return f"dataset {index} has columns {b.names} but the first has {a.names}"
    name = next(
        n for n in a.names if not schemas_compatible(pa.schema([a.field(n)]), pa.schema([b.field(n)]))
    )
    return (
        f"column {name!r} is {format_type(a.field(name).type)} in the first dataset but "
        f"{format_type(b.field(name).type)} in dataset {index}"
    )


def slice_rows(blocks: Iterator[pa.Table], skip: int, count: int) -> BlockStream:
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


def select_ranges(
    open_stream: Callable[[], Iterator[pa.Table]], ranges: Sequence[tuple[int, int]]
) -> BlockStream:
    """The rows of ``ranges`` in the given order: one pass over ``open_stream()`` per run of ascending,
    non-overlapping ranges (a range that starts before the previous one ended opens a new pass)."""
    for run in _ascending_runs(ranges):
        yield from _rows_in(open_stream(), run)


def _ascending_runs(ranges: Sequence[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    runs: list[list[tuple[int, int]]] = []
    end = None
    for start, count in ranges:
        if count <= 0:
            continue
        if end is None or start < end:
            runs.append([])
        runs[-1].append((start, count))
        end = start + count
    return runs


def _rows_in(blocks: Iterator[pa.Table], run: list[tuple[int, int]]) -> Iterator[pa.Table]:
    """The rows of ascending, disjoint ranges from one pass over ``blocks``; stops after the last."""
    position, index = 0, 0  # first row of the current block; current range
    try:
        for block in blocks:
            end = position + block.num_rows
            while index < len(run):
                start, count = run[index]
                lo, hi = max(start, position), min(start + count, end)
                if lo < hi:
                    yield block.slice(lo - position, hi - lo)
                if start + count > end:
                    break  # the range goes on in the next block
                index += 1
            if index == len(run):
                return
            position = end
    finally:
        close = getattr(blocks, "close", None)
        if close is not None:
            close()
