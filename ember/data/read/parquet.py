"""read_parquet: one task per row group, so a large file splits across tasks.

Columns of ``ember.python_object`` (pickled Python objects) are never read unless the caller passes
``allow_pickle=True``: unpickling a crafted file runs code. Without it, reading such a column is a
one-line error naming the file, the column and the opt-in; the row count and schema come from the
file's metadata and stay available. Files whose schemas disagree are refused when the read is planned.

A task streams its row group as blocks of about ``BLOCK_BYTES`` (decoded size) rather than
decoding the whole group at once: the first batch arrives after one block's work, and memory
stays bounded by a few blocks. Decoding a large group in one call is also slower: for nested or
tensor columns pyarrow materialises per-value levels for the whole group (3x the time and 2.5x
the peak memory on the Fashion-MNIST parquet).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ember.data.read.partitioning import FileColumns, append_constants
from ember.data.read.paths import open_input
from ember.data.read.row_hash import COLUMN as ROW_HASH
from ember.data.read.row_hash import with_row_hash
from ember.data.read.schemas import check_same_schema
from ember.data.read.task import ReadTask
from ember.data.read.tensor_columns import decode_tensor_columns
from ember.data.tensor_types import PythonObjectType, trust
from ember.errors import DataError

# Decoded bytes per block read from a row group. 4 MiB (~7,000 Fashion-MNIST rows) reads ~8 % less CPU per
# pass than 1 MiB (~1,800 rows: pyarrow's per-call cost) and stays below the sizes where decoding a tensor
# column in one call gets slower again (16k+ rows); the first batch still comes after a few ms of work.
BLOCK_BYTES = 4 << 20


def _open(filesystem: Any, path: str) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(open_input(filesystem, path))
    except (pa.ArrowInvalid, OSError) as e:
        raise DataError(
            f"read_parquet: {path} is not a readable parquet file ({e}); check or rewrite the file"
        ) from None


def parquet_tasks(
    filesystem: Any,
    files: list[str],
    columns: list[str] | None,
    allow_pickle: bool = False,
    file_columns: FileColumns | None = None,
    filter: Any = None,
    row_hash: bool = False,  # noqa: A002 - Ray's name
    tensor_columns: dict[str, Any] | None = None,
    cast_to: pa.Schema | None = None,
) -> list[ReadTask]:
    """One task per row group. ``file_columns`` adds the path and folder partitions; ``filter`` (a pyarrow
    compute expression) keeps the matching rows (then the row count is only known by reading);
    ``row_hash`` adds Ray's ``row_hash`` column (``row_hash.py``: a row group starts where the previous
    ended);
    ``tensor_columns`` ({column: (dtype, shape)}) decodes raw-bytes columns into tensors
    (``tensor_columns.py``);
    ``cast_to`` (Ray's ``schema=``) gives every block that schema's columns and types (`conformed`)."""
    file_columns = file_columns or FileColumns()
    data_columns = _data_columns(columns, file_columns, files, row_hash)
    tasks = []
    first: tuple[str, pa.Schema] | None = None
    for path in files:
        metadata = _open(filesystem, path).metadata
        schema = metadata.schema.to_arrow_schema()
        _check_columns(path, schema.names, data_columns)
        schema = _selected(schema, data_columns)
        if first is None:
            first = (path, schema)
        else:
            check_same_schema(
                "read_parquet",
                first,
                (path, schema),
                "read the files separately and make their "
                "columns agree (cast, select_columns) before union, or pass columns=",
            )
        pickled = None if allow_pickle else _pickled_column(schema)
        extra = _wanted(file_columns.values(path), columns)
        first_row = 0
        for group in range(metadata.num_row_groups):
            info = metadata.row_group(group)
            block_rows = _rows_per_block(info.total_byte_size, info.num_rows)
            read = (
                _row_group_reader(
                    filesystem,
                    path,
                    group,
                    data_columns,
                    block_rows,
                    _pickled_column(schema) is not None,
                    extra,
                    filter,
                    _order(columns, file_columns),
                    first_row if row_hash else None,
                    tensor_columns,
                    cast_to,
                )
                if pickled is None
                else _refuse_pickle(path, pickled)
            )
            first_row += info.num_rows
            tasks.append(
                ReadTask(
                    read=read,
                    description=f"file {path} row group {group}",
                    num_rows=metadata.row_group(group).num_rows if filter is None else None,
                )
            )
    return tasks


def _data_columns(
    columns: list[str] | None, file_columns: FileColumns, files: list[str], row_hash: bool = False
) -> list[str] | None:
    """``columns`` without the ones the folders (or include_paths, include_row_hash) supply."""
    if columns is None:
        return None
    added = (set(file_columns.values(files[0])) if files else set()) | ({ROW_HASH} if row_hash else set())
    return [c for c in columns if c not in added]


def _wanted(values: dict[str, Any], columns: list[str] | None) -> dict[str, Any]:
    # include_paths' column is added even when ``columns`` leaves it out, as Ray does (partition columns are
    # not)
    return values if columns is None else {k: v for k, v in values.items() if k in columns or k == "path"}


def parquet_schema(
    filesystem: Any,
    files: list[str],
    columns: list[str] | None,
    file_columns: FileColumns | None = None,
    row_hash: bool = False,
    tensor_columns: dict[str, Any] | None = None,
    cast_to: pa.Schema | None = None,
) -> pa.Schema:
    """The schema the read yields, from the first file's metadata and path (no row is read)."""
    file_columns = file_columns or FileColumns()
    schema = _selected(
        _open(filesystem, files[0]).schema_arrow, _data_columns(columns, file_columns, files, row_hash)
    )
    empty = schema.empty_table()
    if tensor_columns:
        empty = decode_tensor_columns(empty, tensor_columns, files[0])
    empty = append_constants(empty, _wanted(file_columns.values(files[0]), columns))
    if row_hash:
        empty = with_row_hash(empty, files[0], 0)
    if cast_to is not None:
        empty = conformed(empty, cast_to, file_columns.values(files[0]))
    return empty.select(_order(columns, file_columns)).schema if columns is not None else empty.schema


def _order(columns: list[str] | None, file_columns: FileColumns) -> list[str] | None:
    """The columns of a block, in order: ``columns``, then include_paths' ``path`` when they leave it out."""
    if columns is None or "path" in columns or not file_columns.include_paths:
        return columns
    return [*columns, "path"]


def conformed(table: pa.Table, schema: pa.Schema, extra: dict[str, Any]) -> pa.Table:
    """``table`` read as pyarrow reads a dataset given ``schema`` (Ray's ``read_parquet(schema=)``): the
    schema's columns in its order and types (null where the file lacks one), the file's other columns
    dropped; the path and partition columns (``extra``) kept after them.

    Example:
        >>> t = pa.table({"a": [1, 2], "b": ["x", "y"]})
        >>> conformed(t, pa.schema([("a", pa.float32()), ("c", pa.int8())]), {}).to_pydict()
        {'a': [1.0, 2.0], 'c': [None, None]}
    """
    arrays = [
        table[f.name].cast(f.type) if f.name in table.column_names else pa.nulls(table.num_rows, f.type)
        for f in schema
    ]
    names = list(schema.names)
    for name in extra:
        if name in table.column_names and name not in names:
            arrays.append(table[name])
            names.append(name)
    return pa.Table.from_arrays(arrays, names=names)


def _selected(schema: pa.Schema, columns: list[str] | None) -> pa.Schema:
    schema = schema.remove_metadata()
    return pa.schema([schema.field(c) for c in columns]) if columns is not None else schema


def _pickled_column(schema: pa.Schema) -> str | None:
    return next((f.name for f in schema if isinstance(f.type, PythonObjectType)), None)


def _refuse_pickle(path: str, column: str):
    def read() -> Iterator[pa.Table]:
        raise DataError(
            f"read_parquet: column {column!r} of {path} holds pickled Python objects, and unpickling a file "
            "can run code; pass allow_pickle=True only if you trust the file, or leave the column out with "
            "columns="
        )
        yield  # pragma: no cover - makes this a generator like every reader

    return read


def _check_columns(path: str, names: list[str], columns: list[str] | None) -> None:
    missing = [c for c in columns or [] if c not in names]
    if missing:
        raise DataError(f"read_parquet: no column {missing[0]!r} in {path}; it has columns {names}")


def _rows_per_block(group_bytes: int, group_rows: int) -> int:
    bytes_per_row = max(1, group_bytes // max(1, group_rows))
    return min(65536, max(256, BLOCK_BYTES // bytes_per_row))


def _row_group_reader(
    filesystem: Any,
    path: str,
    group: int,
    columns: list[str] | None,
    block_rows: int,
    pickled: bool = False,
    extra: dict[str, Any] | None = None,
    filter: Any = None,  # noqa: A002
    order: list[str] | None = None,
    hash_from: int | None = None,
    tensor_columns: dict[str, Any] | None = None,
    cast_to: pa.Schema | None = None,
):
    def finish(table: pa.Table, position: int | None) -> pa.Table:
        """The block as the read yields it; ``position``: its first row's position in the file (row_hash)."""
        if tensor_columns:
            table = decode_tensor_columns(table, tensor_columns, path)
        table = append_constants(table, extra) if extra else table
        if filter is not None:
            table = _filtered(table, filter, path)
        if position is not None:
            table = with_row_hash(table, path, position)
        if cast_to is not None:
            table = conformed(table, cast_to, extra or {})
        return table.select(order) if order is not None else table

    def read() -> Iterator[pa.Table]:
        try:
            file = _open(filesystem, path)
            empty, position = True, hash_from
            for batch in file.iter_batches(batch_size=block_rows, row_groups=[group], columns=columns):
                empty = False
                table = pa.Table.from_batches([batch])
                yield finish(trust(table) if pickled else table, position)  # pickled only with allow_pickle
                position = None if position is None else position + batch.num_rows
            if empty:  # an empty group still tells the schema
                yield finish(
                    file.schema_arrow.empty_table().select(columns or file.schema_arrow.names), position
                )
        except (pa.ArrowInvalid, OSError) as e:
            raise DataError(
                f"read_parquet: {path} row group {group} is corrupt ({e}); check or rewrite the file"
            ) from None

    return read


def _filtered(table: pa.Table, expression: Any, path: str) -> pa.Table:
    try:
        return table.filter(expression)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        first = str(e).strip().splitlines()[0]
        raise DataError(
            f"read_parquet: filter={expression} cannot be applied to {path} (columns "
            f"{table.column_names}): {first}; fix the filter"
        ) from None
