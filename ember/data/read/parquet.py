"""read_parquet: one task per row group, so a large file splits across tasks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ember.data.read.paths import open_input
from ember.data.read.task import ReadTask
from ember.errors import DataError


def _open(filesystem: Any, path: str) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(open_input(filesystem, path))
    except (pa.ArrowInvalid, OSError) as e:
        raise DataError(f"read_parquet: {path} is not a readable parquet file ({e}); check or rewrite the file") from None


def parquet_tasks(filesystem: Any, files: list[str], columns: list[str] | None) -> list[ReadTask]:
    tasks = []
    for path in files:
        metadata = _open(filesystem, path).metadata
        _check_columns(path, metadata.schema.to_arrow_schema().names, columns)
        for group in range(metadata.num_row_groups):
            tasks.append(
                ReadTask(
                    read=_row_group_reader(filesystem, path, group, columns),
                    description=f"file {path} row group {group}",
                    num_rows=metadata.row_group(group).num_rows,
                )
            )
    return tasks


def _check_columns(path: str, names: list[str], columns: list[str] | None) -> None:
    missing = [c for c in columns or [] if c not in names]
    if missing:
        raise DataError(f"read_parquet: no column {missing[0]!r} in {path}; it has columns {names}")


def _row_group_reader(filesystem: Any, path: str, group: int, columns: list[str] | None):
    def read() -> Iterator[pa.Table]:
        try:
            yield _open(filesystem, path).read_row_group(group, columns=columns)
        except (pa.ArrowInvalid, OSError) as e:
            raise DataError(f"read_parquet: {path} row group {group} is corrupt ({e}); check or rewrite the file") from None

    return read
