"""Per-block transforms that fuse into one task: map, map_batches, filter, flat_map, column edits.

Each transform turns an iterator of blocks into an iterator of blocks. User-function failures are
re-raised as one ``UserFunctionError`` carrying the original traceback and the rows involved.
"""

from __future__ import annotations

import itertools
import traceback
from collections.abc import Callable, Iterator
from typing import Any, Literal

import numpy as np

from ember.data.block import (
    Block,
    batch_to_block,
    block_nbytes,
    block_to_batch,
    block_to_rows,
    concat_blocks,
    rows_to_block,
    to_arrow_column,
)
from ember.data.ray_errors import DataKeyError
from ember.errors import DataError


class UserFunctionError(DataError):
    """A user function raised; the message holds its name, the rows and the original traceback."""


def udf_name(fn: Any) -> str:
    name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return f"`{name}`"


def call_user(fn: Callable, what: str, rows: str, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except DataError:
        raise
    except Exception as e:  # the user's bug: report it once, with their traceback
        raise user_error(e, fn, what, rows) from None


def user_error(e: BaseException, fn: Any, what: str, rows: str) -> UserFunctionError:
    tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    return UserFunctionError(
        f"{what} {udf_name(fn)} raised {type(e).__name__}: {e} (on {rows}); fix the function or the data.\n"
        f"Original traceback:\n{tb}"
    )


class Transform:
    """One fusable per-block step."""

    name = "Transform"
    #: True when the output has as many rows as the input, in order (lets count() skip work).
    preserves_rows = False
    #: True when the step runs user Python code (worth a worker process).
    runs_user_code = True

    def apply(self, blocks: Iterator[Block]) -> Iterator[Block]:
        raise NotImplementedError


class MapRows(Transform):
    name = "Map"
    preserves_rows = True

    def __init__(self, fn: Callable, fn_args: tuple = (), fn_kwargs: dict | None = None) -> None:
        self.fn, self.fn_args, self.fn_kwargs = fn, fn_args, fn_kwargs or {}

    def apply(self, blocks: Iterator[Block]) -> Iterator[Block]:
        start = 0
        for block in blocks:
            out = []
            for i, row in enumerate(block_to_rows(block, writable=True)):
                result = call_user(self.fn, "map", f"row {start + i}", row, *self.fn_args, **self.fn_kwargs)
                out.append(result)
            start += block.num_rows
            yield rows_to_block(out, f"map {udf_name(self.fn)}")


class FlatMap(Transform):
    name = "FlatMap"

    def __init__(self, fn: Callable, fn_args: tuple = (), fn_kwargs: dict | None = None) -> None:
        self.fn, self.fn_args, self.fn_kwargs = fn, fn_args, fn_kwargs or {}

    def apply(self, blocks: Iterator[Block]) -> Iterator[Block]:
        start = 0
        for block in blocks:
            out: list = []
            for i, row in enumerate(block_to_rows(block, writable=True)):
                out.extend(
                    call_user(self.fn, "flat_map", f"row {start + i}", row, *self.fn_args, **self.fn_kwargs)
                )
            start += block.num_rows
            if out:
                yield rows_to_block(out, f"flat_map {udf_name(self.fn)}")


class Filter(Transform):
    name = "Filter"

    def __init__(self, fn: Callable, fn_args: tuple = (), fn_kwargs: dict | None = None) -> None:
        self.fn, self.fn_args, self.fn_kwargs = fn, fn_args, fn_kwargs or {}

    def apply(self, blocks: Iterator[Block]) -> Iterator[Block]:
        start = 0
        for block in blocks:
            keep = [
                bool(call_user(self.fn, "filter", f"row {start + i}", row, *self.fn_args, **self.fn_kwargs))
                for i, row in enumerate(block_to_rows(block, writable=True))
            ]
            start += block.num_rows
            yield block.take(to_arrow_column(np.flatnonzero(keep))) if keep else block


class ExprFilter(Transform):
    """``filter(expr=...)``: a pyarrow compute expression evaluated on each block (no Python per row)."""

    name = "Filter"
    runs_user_code = False

    def __init__(self, expression: Any) -> None:
        self.expression = expression

    def apply(self, blocks: Iterator[Block]) -> Iterator[Block]:
        import pyarrow.lib

        for block in blocks:
            try:
                yield block.filter(self.expression)
            except (pyarrow.lib.ArrowInvalid, pyarrow.lib.ArrowTypeError, KeyError) as e:
                first = str(e).splitlines()[0]
                raise DataError(
                    f"filter(expr={self.expression}) failed: {first}; the dataset has columns "
                    f"{block.column_names}"
                ) from None
            except pyarrow.lib.ArrowNotImplementedError as e:  # types the operation has no kernel for
                first = str(e).splitlines()[0]
                types = ", ".join(f"{f.name}: {f.type}" for f in block.schema)
                raise DataError(
                    f"filter(expr={self.expression}) cannot compare these types ({first}); the columns "
                    f"are {types}: compare a column with a value of its type, or cast it first"
                ) from None


class MapBatches(Transform):
    name = "MapBatches"

    def __init__(
        self,
        fn: Callable,
        batch_size: int | Literal["auto"] | None = 1024,
        batch_format: str = "numpy",
        fn_args: tuple = (),
        fn_kwargs: dict | None = None,
        zero_copy_batch: bool = False,
    ) -> None:
        self.fn, self.batch_size, self.batch_format = fn, batch_size, batch_format
        self.zero_copy_batch = zero_copy_batch
        self.fn_args, self.fn_kwargs = fn_args, fn_kwargs or {}
        #: Index of the first input row, for error messages (a pool worker sets it per batch).
        self.first_row = 0
        #: Times a block is re-run on a new worker after its worker died (``max_task_retries``).
        self.max_task_retries = 0

    def apply(self, blocks: Iterator[Block]) -> Iterator[Block]:
        start = self.first_row
        for batch in rebatch(blocks, self.batch_size):
            rows = f"rows {start}-{start + batch.num_rows - 1}"
            start += batch.num_rows
            data = block_to_batch(batch, self.batch_format, writable=not self.zero_copy_batch)
            result = call_user(self.fn, "map_batches", rows, data, *self.fn_args, **self.fn_kwargs)
            if _is_generator(result):
                yield from (
                    batch_to_block(r, f"map_batches {udf_name(self.fn)}")
                    for r in _drain(result, self.fn, rows)
                )
            else:
                yield batch_to_block(result, f"map_batches {udf_name(self.fn)}")


def _is_generator(value: Any) -> bool:
    return isinstance(value, Iterator) and not isinstance(value, dict)


def _drain(generator: Iterator, fn: Callable, rows: str) -> Iterator[Any]:
    while True:
        try:
            item = next(generator)
        except StopIteration:
            return
        except DataError:
            raise
        except Exception as e:
            raise user_error(e, fn, "map_batches", rows) from None
        yield item


class AddColumn(Transform):
    name = "AddColumn"
    preserves_rows = True

    def __init__(self, column: str, fn: Callable, batch_format: str = "pandas") -> None:
        self.column, self.fn, self.batch_format = column, fn, batch_format

    def apply(self, blocks: Iterator[Block]) -> Iterator[Block]:
        for block in blocks:
            values = call_user(
                self.fn, "add_column", f"column {self.column!r}", block_to_batch(block, self.batch_format)
            )
            column = to_arrow_column(values, self.column)
            if len(column) != block.num_rows:
                raise DataError(
                    f"add_column {self.column!r} returned {len(column)} values for {block.num_rows} rows; "
                    "return one per row"
                )
            if self.column in block.column_names:
                yield block.set_column(block.column_names.index(self.column), self.column, column)
            else:
                yield block.append_column(self.column, column)


class SelectColumns(Transform):
    name = "SelectColumns"
    preserves_rows = True
    runs_user_code = False

    def __init__(self, columns: list[str]) -> None:
        self.columns = list(columns)

    def apply(self, blocks: Iterator[Block]) -> Iterator[Block]:
        for block in blocks:
            _check_columns(block, self.columns)
            yield block.select(self.columns)


class DropColumns(Transform):
    name = "DropColumns"
    preserves_rows = True
    runs_user_code = False

    def __init__(self, columns: list[str]) -> None:
        self.columns = list(columns)

    def apply(self, blocks: Iterator[Block]) -> Iterator[Block]:
        for block in blocks:
            _check_columns(block, self.columns, DataKeyError)  # Ray: KeyError
            yield block.drop_columns(self.columns)


class RenameColumns(Transform):
    name = "RenameColumns"
    preserves_rows = True
    runs_user_code = False

    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = dict(mapping)

    def apply(self, blocks: Iterator[Block]) -> Iterator[Block]:
        for block in blocks:
            _check_columns(block, list(self.mapping))
            yield block.rename_columns(
                unique_names([self.mapping.get(n, n) for n in block.column_names], block.column_names)
            )


def unique_names(new: list[str], old: list[str]) -> list[str]:
    """``new`` when no name repeats; else a one-line DataError naming the clash (Arrow would build a table
    with two columns of one name, which fails later with a bare KeyError)."""
    clashes = sorted({n for n in new if new.count(n) > 1})
    if clashes:
        raise DataError(
            f"rename_columns would give two columns the name {clashes[0]!r} (columns {old} -> {new}); "
            "rename or drop the other column too"
        )
    return new


def _check_columns(block: Block, columns: list[str], error: type[DataError] = DataError) -> None:
    missing = [c for c in columns if c not in block.column_names]
    if missing and block.num_columns:
        raise error(f"no column {missing[0]!r}; the dataset has columns {block.column_names}")


#: ``batch_size="auto"``: rows per batch so that a batch holds about this many bytes (Ray's 16 MiB).
AUTO_BATCH_BYTES = 16 * 1024**2


def rebatch(blocks: Iterator[Block], batch_size: int | Literal["auto"] | None) -> Iterator[Block]:
    """Re-cut a stream of blocks into blocks of exactly ``batch_size`` rows (the last may be short);
    ``None`` keeps the blocks; ``"auto"`` picks the size from the first block's bytes per row."""
    if batch_size == "auto":
        blocks = iter(blocks)
        first = next((b for b in blocks if b.num_rows), None)
        if first is None:
            return
        per_row = max(1, first.nbytes // first.num_rows)
        yield from rebatch(itertools.chain([first], blocks), max(1, AUTO_BATCH_BYTES // per_row))
        return
    if batch_size is None:
        yield from (b for b in blocks if b.num_rows)
        return
    pending: list[Block] = []
    pending_rows = 0
    for block in blocks:
        offset = 0
        while offset < block.num_rows:
            take = min(batch_size - pending_rows, block.num_rows - offset)
            pending.append(block.slice(offset, take))
            pending_rows += take
            offset += take
            if pending_rows == batch_size:
                yield concat_blocks(pending)
                pending, pending_rows = [], 0
    if pending_rows:
        yield concat_blocks(pending)


#: Rows and bytes a run of whole batches holds at most (``batch_runs``), unless one batch is more: what
#: one conversion covers, and what a consumer keeping one batch of it keeps alive (pyarrow's own record
#: batches are 8192 rows).
RUN_ROWS = 8192
RUN_BYTES = 16 * 1024**2


def batch_runs(
    blocks: Iterator[Block], batch_size: int, run_rows: int = RUN_ROWS, span_blocks: bool = False
) -> Iterator[Block]:
    """``rebatch``'s batches, handed out a run of consecutive whole batches at a time: a block of a
    multiple of ``batch_size`` rows (at most ``run_rows`` and ``RUN_BYTES``, at least one batch); the
    last run may be short. Splitting every run into ``batch_size`` rows gives exactly ``rebatch``'s batches.

    A run is an uncopied slice of one block; a batch that spans blocks comes alone (a concatenation,
    as from ``rebatch``) unless ``span_blocks``: then a run may begin with the rows left at the end of
    earlier blocks of the same schema (a table of several chunks, still uncopied), for a consumer that
    copies the run anyway.

    Example:
        >>> import pyarrow as pa
        >>> blocks = [pa.table({"x": list(range(7))}), pa.table({"x": list(range(7, 12))})]
        >>> [run["x"].to_pylist() for run in batch_runs(iter(blocks), 2)]
        [[0, 1, 2, 3, 4, 5], [6, 7], [8, 9, 10, 11]]
        >>> [run["x"].to_pylist() for run in batch_runs(iter(blocks), 2, span_blocks=True)]
        [[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11]]
    """
    pending: list[Block] = []  # rows left from earlier blocks: fewer than a batch
    pending_rows = 0
    for block in blocks:
        rows, offset = block.num_rows, 0
        per_run = _rows_per_run(block, batch_size, run_rows)
        if pending_rows and rows:
            # the batch begun in earlier blocks; with span_blocks, and the whole batches after it, when
            # the blocks agree on the schema (else concat_blocks may change the types: one batch only)
            span = span_blocks and all(piece.schema == block.schema for piece in pending)
            wanted = per_run if span else batch_size
            offset = min(wanted - pending_rows, rows)
            if span and pending_rows + offset < wanted:  # stop at a batch boundary
                offset = max(batch_size - pending_rows, offset - (pending_rows + offset) % batch_size)
                offset = min(offset, rows)
            pending.append(block.slice(0, offset))
            pending_rows += offset
            if pending_rows % batch_size == 0:
                yield concat_blocks(pending)
                pending, pending_rows = [], 0
        end = offset + (rows - offset) // batch_size * batch_size
        while offset < end:
            take = min(per_run, end - offset)
            yield block.slice(offset, take)
            offset += take
        if offset < rows:
            pending.append(block.slice(offset))
            pending_rows += rows - offset
    if pending_rows:
        yield concat_blocks(pending)


def _rows_per_run(block: Block, batch_size: int, run_rows: int) -> int:
    """Whole batches of ``block``'s rows that fit in ``run_rows`` rows and ``RUN_BYTES`` bytes; at least
    one."""
    row_bytes = max(1, block_nbytes(block) // max(1, block.num_rows))
    return max(1, min(run_rows, RUN_BYTES // row_bytes) // batch_size) * batch_size


def apply_transforms(blocks: Iterator[Block], transforms: list[Transform]) -> Iterator[Block]:
    for transform in transforms:
        blocks = transform.apply(blocks)
    return blocks
