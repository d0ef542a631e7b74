"""Sinks: one file per output block, named deterministically (``part-00000.parquet``, ...).

Each file is written under a temporary name and renamed into place, so a crash never leaves a
half-written file under its final name.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from ember.data.block import Block, block_to_numpy, block_to_rows
from ember.data.ray_args import check_options, named_parameters
from ember.data.read.paths import _strip_local, is_remote
from ember.data.schema import format_type
from ember.errors import DataError


def write_blocks(blocks: Iterator[Block], path: str, extension: str, write_file: Callable[[Block, Any], None]) -> list[str]:
    """Write each non-empty block to ``path/part-NNNNN.<extension>``; returns the file paths."""
    filesystem, directory = _output_dir(os.fspath(path))
    written = []
    for block in blocks:
        if block.num_rows == 0:
            continue
        final = f"{directory}/part-{len(written):05d}.{extension}"
        temporary = f"{directory}/.part-{len(written):05d}.{extension}.tmp-{os.getpid()}"
        _write_atomically(filesystem, block, temporary, final, write_file)
        written.append(final)
    return written


def _output_dir(path: str) -> tuple[Any, str]:
    if is_remote(path):
        import pyarrow.fs as pafs

        filesystem, directory = pafs.FileSystem.from_uri(path)
        filesystem.create_dir(directory, recursive=True)
        return filesystem, directory
    directory = os.path.expanduser(_strip_local(path))
    os.makedirs(directory, exist_ok=True)
    return None, directory


def _write_atomically(filesystem: Any, block: Block, temporary: str, final: str, write_file: Callable) -> None:
    if filesystem is None:
        try:
            with open(temporary, "wb") as f:
                write_file(block, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, final)
        finally:
            if os.path.exists(temporary):
                os.remove(temporary)
        return
    with filesystem.open_output_stream(temporary) as f:
        write_file(block, f)
    filesystem.move(temporary, final)


def parquet_writer(**options: Any) -> Callable[[Block, Any], None]:
    """Options go to ``pyarrow.parquet.write_table`` (as in Ray); a wrong name fails here, before any work."""
    import pyarrow.parquet as pq

    own = named_parameters(pq.write_table, pq.ParquetWriter.__init__, but=("table", "where", "schema", "filesystem"))
    check_options("Dataset.write_parquet", options, own)
    options = {k: v for k, v in options.items() if k in own}  # Ray's scheduling-only arguments are not pyarrow's
    return lambda block, f: pq.write_table(block, f, **options)


def csv_writer(**options: Any) -> Callable[[Block, Any], None]:
    """Options go to ``pyarrow.csv.write_csv`` (as in Ray); a wrong name fails here, before any work."""
    import pyarrow.csv as pacsv

    own = named_parameters(pacsv.write_csv, but=("data", "output_file"))
    check_options("Dataset.write_csv", options, own)
    options = {k: v for k, v in options.items() if k in own}

    def write(block: Block, f: Any) -> None:
        _reject_nested(block, "write_csv")
        pacsv.write_csv(block, f, **options)

    return write


def _reject_nested(block: Block, sink: str) -> None:
    for field in block.schema:
        if isinstance(field.type, pa.ExtensionType) or pa.types.is_nested(field.type):
            raise DataError(
                f"{sink} cannot store column {field.name!r} of type {format_type(field.type)}; "
                "use write_parquet or write_numpy, or drop the column"
            )


def json_writer() -> Callable[[Block, Any], None]:
    def write(block: Block, f: Any) -> None:
        for row in block_to_rows(block):
            f.write((json.dumps(row, default=_json_default) + "\n").encode())

    return write


def _json_default(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return value.decode("latin-1")
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def numpy_writer(column: str) -> Callable[[Block, Any], None]:
    def write(block: Block, f: Any) -> None:
        if column not in block.column_names:
            raise DataError(f"write_numpy: no column {column!r}; the dataset has columns {block.column_names}")
        values = block_to_numpy(block.select([column]))[column]
        if values.dtype == object:
            raise DataError(f"write_numpy: column {column!r} holds ragged or Python values; use write_parquet")
        np.save(f, values, allow_pickle=False)

    return write
